package reader

import (
	"context"
	"fmt"

	"github.com/sovm/sop-pme/pme"
)

// A Part is a region of an object's layout (SOP-PME-1 Sections 11.1, 11.4
// and 11.8): what a byte of the object belongs to.
type Part int

const (
	// PartMagic is the leading "PARE" (bytes [0, 4)).
	PartMagic Part = iota
	// PartColumnChunk is the modules (page headers and pages) of one column
	// chunk: one leaf column of one row group.
	PartColumnChunk
	// PartData is the data region outside every column chunk.
	PartData
	// PartFooter is the footer region: FileCryptoMetaData, the encrypted
	// footer (the pad entry inside it) and the trailer.
	PartFooter
)

func (p Part) String() string {
	switch p {
	case PartMagic:
		return "magic"
	case PartColumnChunk:
		return "column chunk"
	case PartData:
		return "data region"
	case PartFooter:
		return "footer"
	}
	return fmt.Sprintf("Part(%d)", int(p))
}

// A Location is a region of the object, as Locate reports it.
type Location struct {
	Part     Part
	Off, Len int64 // the region's bytes [Off, Off+Len)
	// For a column chunk: its row group, its leaf column's index in the
	// schema, that column's dotted path, and its Parquet field ID (-1 if it
	// has none).
	RowGroup, Column int
	Path             string
	FieldID          int32
}

// String says where the region is, for people: "row group 1, column
// customer (field 2)", "the footer", ...
func (l Location) String() string {
	switch l.Part {
	case PartColumnChunk:
		s := fmt.Sprintf("row group %d, column %s", l.RowGroup, l.Path)
		if l.FieldID >= 0 {
			s += fmt.Sprintf(" (field %d)", l.FieldID)
		}
		return s
	case PartMagic:
		return "the magic"
	case PartData:
		return "the data region, between column chunks"
	}
	return "the footer"
}

// Locate returns the regions of the object that the bytes [off, off+n)
// overlap, in order of offset: the magic, column chunks (with their row
// group and column), the data region between chunks, the footer region. It
// is how a failure at a byte range, such as a verify.RangeError from
// Verify, is told in the object's terms.
//
// It answers from the footer that Open decrypted and verified, so it needs
// the object's DEK; it reads again only the trailer, through a verified
// range. The answer is the layout the footer declares: for an object whose
// footer verified, the layout its producer wrote.
func (r *Reader) Locate(ctx context.Context, off, n int64) ([]Location, error) {
	size := r.vr.Size()
	if off < 0 || n < 0 || off > size || n > size-off {
		return nil, fmt.Errorf("%w: range [%d, +%d) of an object of %d bytes", ErrOption, off, n, size)
	}
	trailer := make([]byte, pme.TrailerSize)
	if _, err := r.vr.ReadAtContext(ctx, trailer, size-pme.TrailerSize); err != nil {
		return nil, fmt.Errorf("reader: reading %s: %w", r.id, err)
	}
	flen, err := pme.ParseTrailer(trailer)
	if err != nil {
		return nil, err
	}
	dataEnd := size - pme.TrailerSize - int64(flen)
	end := off + n
	var out []Location
	add := func(l Location) {
		if l.Len > 0 && l.Off < end && off < l.Off+l.Len {
			out = append(out, l)
		}
	}
	add(Location{Part: PartMagic, Off: 0, Len: 4, RowGroup: -1, Column: -1, FieldID: -1})
	// r.chunks is sorted by offset, without overlaps (load checks it);
	// r.info names each chunk's row group and column.
	at := int64(4)
	sch := r.meta.Schema
	for _, c := range r.chunks {
		add(Location{Part: PartData, Off: at, Len: c.Off - at, RowGroup: -1, Column: -1, FieldID: -1})
		info := r.info[c.Off]
		col := sch.Column(info.column)
		add(Location{Part: PartColumnChunk, Off: c.Off, Len: c.Len, RowGroup: info.rowGroup, Column: info.column,
			Path: col.Path(), FieldID: col.SchemaNode().FieldID()})
		at = c.End()
	}
	add(Location{Part: PartData, Off: at, Len: dataEnd - at, RowGroup: -1, Column: -1, FieldID: -1})
	add(Location{Part: PartFooter, Off: dataEnd, Len: size - dataEnd, RowGroup: -1, Column: -1, FieldID: -1})
	return out, nil
}
