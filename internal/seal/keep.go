package seal

import (
	"encoding/binary"
	"fmt"
	"io"
	"sort"

	"github.com/sovm/sop-pme/internal/thrift"
)

// A writer must never publish an object its own reader refuses (Section
// 11.12 by the spirit of 11.8: no fail-open). The page checks run on every
// page a Sealer seals (pagecheck), but whether the levels and values
// decode is known only by decoding them, which is not a Sealer's work (it
// decodes nothing). OnRowGroupFile hands a caller that decodes each row
// group as the reader will, the pages of the row group as they are
// sealed: a plaintext Parquet file of that row group alone, read through
// an io.ReaderAt whose pages are the input file's where a page was sealed
// as it is, and copies held in memory of the pages the Sealer rewrote.

// A RowGroupFile is the plaintext Parquet file of one row group that
// OnRowGroupFile hands over: "PAR1", the pages as sealed, the footer, its
// length and "PAR1". Its pages are segments: of the input file, or of
// kept, the rewritten pages. It reads the input with ReadAt only, so it
// may be read on another goroutine while the Sealer goes on, and several
// of them at once.
type RowGroupFile struct {
	in   io.ReaderAt
	segs []segment
	kept []byte // the rewritten pages
	size int64  // the pages' end: where the tail starts
	tail []byte // the footer, its length and "PAR1"
	err  error  // the first error reading in
	rg   int    // the row group's index in the file added
}

// A segment is the bytes [off, off+n) of the file: the input's from from,
// or kept's from from if kept is set.
type segment struct {
	off, n, from int64
	kept         bool
}

// keptChunk is where a column chunk's pages are in the row group file.
type keptChunk struct {
	start, end int64 // the chunk's bytes
	data, dict int64 // its data_page_offset, and dictionary_page_offset (0: none)
}

// OnRowGroupFile makes the Sealer call fn after it sealed each row group,
// before the next, with a plaintext Parquet file of that row group alone:
// its pages as they were sealed (rewritten V2 and LZ4 pages included), and
// a footer of the schema (without logical types no reader knows; see
// DropUnknownLogicalTypes) and the row group, whose chunks point into the
// file. The file reads the input for the pages sealed as they are, and
// holds copies of the rewritten ones. It is fn's: the Sealer never touches
// it again, and it stays valid while the Sealer's input is, so fn may hand
// it to another goroutine and return at once; whoever reads it last calls
// Release, which clears the plaintext copies. An error from fn stops the
// Sealer: AddFile returns it, and it is sticky.
func (s *Sealer) OnRowGroupFile(fn func(file *RowGroupFile) error) { s.onFile = fn }

// RowGroup returns the index of the row group in the file added
// (AddFile), row groups without rows included.
func (f *RowGroupFile) RowGroup() int { return f.rg }

// Size returns the file's size in bytes.
func (f *RowGroupFile) Size() int64 { return f.size + int64(len(f.tail)) }

// Err returns the first error reading the Sealer's input, if a read of the
// file met one: a decoder reading the file may have reported it as bad
// bytes, while the fault is the input's.
func (f *RowGroupFile) Err() error {
	if f.err != nil {
		return fmt.Errorf("pme: reading the input: %w", f.err)
	}
	return nil
}

// Release clears the copies of the rewritten pages (plaintext) the file
// holds, and empties it. It is safe to call more than once, and not
// concurrently with ReadAt.
func (f *RowGroupFile) Release() {
	clear(f.kept)
	*f = RowGroupFile{err: f.err}
}

// keepPage adds a page to the row group file: the input's bytes [off,
// off+n) if the page is sealed as it is (rewritten false), or else a copy
// of header and body. It returns the page's offset in the file.
func (s *Sealer) keepPage(off, n int64, header, body []byte, rewritten bool) int64 {
	f := &s.file
	if f.size == 0 {
		f.size = int64(len(magicPAR1))
	}
	at := f.size
	if rewritten {
		f.segs = append(f.segs, segment{off: at, n: int64(len(header) + len(body)), from: int64(len(f.kept)), kept: true})
		f.kept = append(append(f.kept, header...), body...)
	} else if k := len(f.segs) - 1; k >= 0 && !f.segs[k].kept && f.segs[k].from+f.segs[k].n == off && f.segs[k].off+f.segs[k].n == at {
		f.segs[k].n += n // contiguous with the last input segment
	} else {
		f.segs = append(f.segs, segment{off: at, n: n, from: off})
	}
	f.size = f.segs[len(f.segs)-1].off + f.segs[len(f.segs)-1].n
	return at
}

// keepRowGroup completes the row group file of rg, of rows rows, read
// from in, and hands it to onFile; the Sealer starts a new one.
func (s *Sealer) keepRowGroup(in io.ReaderAt, rg *thrift.Struct, index int, kept []keptChunk, rows int64) error {
	f := &s.file
	defer f.Release() // on an error before it is handed over
	if f.size == 0 {
		f.size = int64(len(magicPAR1))
	}
	f.in, f.rg = in, index
	// A copy of the row group, its chunks pointing into the file.
	cp, err := thrift.DecodeExact(rg.Append(nil), thrift.Limits{MaxDepth: thriftLimits.MaxDepth, MaxNodes: 1 << 30})
	if err != nil {
		return fmt.Errorf("pme: internal error: a row group does not decode: %w", err)
	}
	cols, err := cp.List(rgColumns)
	if err != nil || len(cols.Items) != len(kept) {
		return fmt.Errorf("pme: internal error: a row group of %d chunks, %d kept", len(cols.Items), len(kept))
	}
	for j, it := range cols.Items {
		md, err := it.Struct.Struct(ccMetaData)
		if err != nil {
			return fmt.Errorf("pme: internal error: column %d: %w", j, err)
		}
		k := kept[j]
		md.Set(cmdDataPageOffset, thrift.I64(k.data))
		if k.dict > 0 {
			md.Set(cmdDictPageOffset, thrift.I64(k.dict))
		}
		md.Set(cmdTotalCompressed, thrift.I64(k.end-k.start))
	}
	if len(kept) > 0 {
		cp.Set(rgFileOffset, thrift.I64(kept[0].start))
		cp.Set(rgTotalCompressed, thrift.I64(kept[len(kept)-1].end-kept[0].start))
	}
	cp.Delete(rgOrdinal)
	sv := s.meta.Field(fmdSchema)
	version := thrift.I32(1)
	if v := s.meta.Field(fmdVersion); v != nil && v.Type == thrift.TypeI32 {
		version = *v
	}
	footer := thrift.NewStruct(
		thrift.Field{ID: fmdVersion, Value: version},
		thrift.Field{ID: fmdSchema, Value: thrift.ListOf(thrift.TypeStruct, withoutUnknownLogical(sv.List.Items)...)},
		thrift.Field{ID: fmdNumRows, Value: thrift.I64(rows)},
		thrift.Field{ID: fmdRowGroups, Value: thrift.ListOf(thrift.TypeStruct, thrift.StructValue(cp))},
	)
	f.tail = footer.Append(f.tail[:0])
	f.tail = binary.LittleEndian.AppendUint32(f.tail, uint32(len(f.tail)))
	f.tail = append(f.tail, magicPAR1...)
	handed := new(RowGroupFile)
	*handed, *f = *f, RowGroupFile{}
	return s.onFile(handed)
}

// ReadAt implements io.ReaderAt over the row group file.
func (f *RowGroupFile) ReadAt(p []byte, off int64) (int, error) {
	total := f.size + int64(len(f.tail))
	if off < 0 || off > total {
		return 0, fmt.Errorf("pme: row group file: read at %d of %d", off, total)
	}
	n := 0
	for n < len(p) && off < total {
		var k int
		switch {
		case off < int64(len(magicPAR1)):
			k = copy(p[n:], magicPAR1[off:])
		case off >= f.size:
			k = copy(p[n:], f.tail[off-f.size:])
		default:
			i := sort.Search(len(f.segs), func(i int) bool { return f.segs[i].off+f.segs[i].n > off })
			sg := f.segs[i]
			rel := off - sg.off
			want := min(int64(len(p)-n), sg.n-rel)
			if sg.kept {
				k = copy(p[n:n+int(want)], f.kept[sg.from+rel:])
			} else {
				var err error
				if k, err = f.in.ReadAt(p[n:n+int(want)], sg.from+rel); err != nil && k < int(want) {
					if f.err == nil {
						f.err = err
					}
					return n + k, err
				}
			}
		}
		n += k
		off += int64(k)
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
