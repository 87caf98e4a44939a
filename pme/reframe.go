package pme

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/sovm/sop-pme/internal/thrift"
)

// A Span is a byte range [Off, Off+Len) of a file.
type Span struct {
	Off, Len int64
}

// End returns Off + Len.
func (s Span) End() int64 { return s.Off + s.Len }

// A Reframer turns plaintext Parquet, as a Parquet encoder writes it, into
// the SOP-PME-1 layout, streaming, one row group at a time. It is step 2 of
// the writer pipeline, "PME encryption under the object's DEK" (Section
// 11.12), in the layout DuckDB writes and reads (Section 11.3):
//
//	"PARE" | module | module | ... | FileCryptoMetaData | footer module | u32 LE len | "PARE"
//
// Every page header and every page body becomes a module of its own, sealed
// under the DEK with a fresh nonce and the empty AAD. PageHeader bytes are
// sealed unchanged: their compressed_page_size is the plaintext body length,
// which is what DuckDB expects. Offsets in the footer move to the length
// prefix of each page's header module; total_compressed_size counts module
// bytes; RowGroup.ordinal is set; page indexes, bloom filters and column
// crypto metadata are not written.
//
// Only bytes that the footer references are sealed; anything else the
// encoder wrote (arrow-go leaks unflushed ColumnMetaData blocks between
// column chunks) is dropped, never copied. Plaintext is held in memory only,
// for at most one row group.
//
// Use: write the encoder's output to the Reframer; after the encoder closes
// each row group, call FlushRowGroup with the plaintext spans of its column
// chunks; after the encoder has written its footer, call Close. The
// ciphertext goes to out as it is produced. A Reframer is not safe for
// concurrent use. Its errors are sticky.
type Reframer struct {
	dek     DEK
	out     io.Writer
	buf     segBuf // plaintext not yet re-framed, from offset lo
	lo      int64
	started bool
	pos     int64 // ciphertext bytes written to out: the object offset of the next module
	chunks  map[int64]*chunkMap
	scratch []byte
	err     error
}

// chunkMap records where the pages of one re-framed column chunk went.
type chunkMap struct {
	plain        Span
	obj          Span
	uncompressed int64           // DuckDB's total_uncompressed_size: header modules + uncompressed pages
	pages        map[int64]int64 // plaintext offset of a page header → object offset of its module
}

// NewReframer returns a Reframer that writes to out, sealing under dek.
func NewReframer(out io.Writer, dek DEK) *Reframer {
	return &Reframer{dek: dek, out: out, chunks: make(map[int64]*chunkMap)}
}

// Offset returns the number of ciphertext bytes written so far.
func (r *Reframer) Offset() int64 { return r.pos }

// Write buffers plaintext Parquet. The first bytes must be the "PAR1" magic.
func (r *Reframer) Write(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	r.buf.write(p)
	if !r.started && r.buf.end >= 4 {
		if string(r.buf.bytes(0, 4)) != "PAR1" {
			return 0, r.fail(fmt.Errorf("%w: stream does not start with PAR1", ErrLayout))
		}
		if err := r.emit(magicPARE[:]); err != nil {
			return 0, err
		}
		r.started = true
		r.drop(4)
	}
	return len(p), nil
}

func (r *Reframer) fail(err error) error {
	if r.err == nil {
		r.err = err
	}
	return r.err
}

func (r *Reframer) emit(b []byte) error {
	if _, err := r.out.Write(b); err != nil {
		return r.fail(fmt.Errorf("pme: writing ciphertext: %w", err))
	}
	r.pos += int64(len(b))
	return nil
}

// drop discards buffered plaintext up to offset end.
func (r *Reframer) drop(end int64) {
	r.buf.drop(end)
	r.lo = end
}

// FlushRowGroup seals the column chunks of a row group the encoder has just
// closed, given their plaintext spans (from dictionary_page_offset, or
// data_page_offset if there is no dictionary, for total_compressed_size
// bytes), and discards the plaintext up to the end of the last one.
func (r *Reframer) FlushRowGroup(chunks []Span) error {
	if r.err != nil {
		return r.err
	}
	if !r.started {
		return r.fail(fmt.Errorf("%w: row group before the PAR1 magic", ErrLayout))
	}
	chunks = slices.Clone(chunks)
	slices.SortFunc(chunks, func(a, b Span) int { return int(min(max(a.Off-b.Off, -1), 1)) })
	for _, c := range chunks {
		if c.Off < r.lo || c.Len <= 0 || c.End() > r.buf.end {
			return r.fail(fmt.Errorf("%w: column chunk [%d, %d) outside the buffered plaintext [%d, %d) or overlapping", ErrLayout, c.Off, c.End(), r.lo, r.buf.end))
		}
		if err := r.sealChunk(c); err != nil {
			return r.fail(err)
		}
		// Whatever lies before the chunk's end is sealed, or was never
		// referenced: it goes.
		r.drop(c.End())
	}
	return nil
}

// sealChunk seals the pages of one column chunk, a header module and a body
// module each.
func (r *Reframer) sealChunk(c Span) error {
	m := &chunkMap{plain: c, obj: Span{Off: r.pos}, pages: make(map[int64]int64)}
	for off := c.Off; off < c.End(); {
		hdr, n, err := r.pageHeader(off, c.End())
		if err != nil {
			return err
		}
		csize, err1 := hdr.I32(phCompressedSize)
		usize, err2 := hdr.I32(phUncompressedSize)
		if err1 != nil || err2 != nil || csize < 0 || usize < 0 || int64(csize) > c.End()-off-int64(n) {
			return fmt.Errorf("%w: page header at %d: bad sizes", ErrLayout, off)
		}
		if csize > MaxPageSize || usize > MaxPageSize {
			return fmt.Errorf("%w: page at %d of %d bytes (%d uncompressed); readers decode at most %d", ErrTooLarge, off, csize, usize, MaxPageSize)
		}
		m.pages[off] = r.pos
		if r.scratch, err = r.dek.Seal(r.scratch[:0], r.buf.bytes(off, int64(n))); err != nil {
			return fmt.Errorf("sealing page header at %d: %w", off, err)
		}
		if r.scratch, err = r.dek.Seal(r.scratch, r.buf.bytes(off+int64(n), int64(csize))); err != nil {
			return fmt.Errorf("sealing page at %d: %w", off, err)
		}
		if err := r.emit(r.scratch); err != nil {
			return err
		}
		m.uncompressed += int64(n+Overhead) + int64(usize)
		off += int64(n) + int64(csize)
	}
	m.obj.Len = r.pos - m.obj.Off
	r.chunks[c.Off] = m
	return nil
}

// pageHeader decodes the page header at off, which must end before end. It
// looks at a small window first and widens it only for a large header.
func (r *Reframer) pageHeader(off, end int64) (*thrift.Struct, int, error) {
	for probe := int64(4 << 10); ; probe *= 4 {
		probe = min(probe, end-off)
		hdr, n, err := thrift.Decode(r.buf.bytes(off, probe), thriftLimits)
		if err == nil {
			return hdr, n, nil
		}
		if !errors.Is(err, thrift.ErrTruncated) || probe == end-off {
			return nil, 0, fmt.Errorf("%w: page header at %d: %w", ErrLayout, off, err)
		}
	}
}

// Close reads the plaintext footer the encoder wrote at the end of the
// stream and returns it converted to the SOP-PME-1 layout: every offset and
// size remapped to the sealed modules (see Reframer). The footer is not
// sealed yet: that is Footer.Seal. Close checks that the footer references
// exactly the column chunks that were flushed.
func (r *Reframer) Close() (*Footer, error) {
	if r.err != nil {
		return nil, r.err
	}
	end := r.buf.end
	if !r.started || end-r.lo < 8 || string(r.buf.bytes(end-4, 4)) != "PAR1" {
		return nil, r.fail(fmt.Errorf("%w: stream does not end with a PAR1 footer", ErrLayout))
	}
	flen := int64(binary.LittleEndian.Uint32(r.buf.bytes(end-8, 4)))
	if flen > end-8-r.lo {
		return nil, r.fail(fmt.Errorf("%w: footer length %d exceeds the %d unflushed bytes", ErrLayout, flen, end-8-r.lo))
	}
	raw := slices.Clone(r.buf.bytes(end-8-flen, flen))
	r.buf.release()
	meta, err := thrift.DecodeExact(raw, footerLimits(len(raw)))
	if err != nil {
		return nil, r.fail(fmt.Errorf("%w: footer: %w", ErrLayout, err))
	}
	f := &Footer{meta: meta}
	if err := f.remap(r.chunks); err != nil {
		return nil, r.fail(err)
	}
	r.err = fmt.Errorf("%w: Reframer closed", ErrLayout)
	return f, nil
}
