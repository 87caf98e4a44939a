package writer

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/sovm/sop-pme/internal/arrowfb"
	"github.com/sovm/sop-pme/internal/pqtypes"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/reader"
)

// SealFile keeps a file's pages as they are, so it must know that they
// decode before it publishes them: a page can pass every check of the
// reader and still not decode (repetition levels that start a record with
// 1, a required column whose values run short; parquet-testing's
// bad_data/ARROW-GH-45185 and ARROW-GH-47662), and the reader would refuse
// the object for ever. So each row group is decoded as the reader decodes
// it, from its pages as they were sealed (seal.Sealer.OnRowGroupFile),
// while the next row groups are sealed (decodepool.go) and before the
// object is published. Nothing decoded is kept. The reader's scan decodes
// a row group with package flatdec or with arrow-go's pqarrow, by the
// columns it projects and their pages (decodeflat.go): each chunk is
// decoded here by every decoder some scan would decode it with, in batches
// of the reader's default size, within the reader's default memory limit
// for a scan of it.

// errDecodeLimit is what decodeRowGroup's allocator panics with beyond its
// limit.
var errDecodeLimit = errors.New("writer: decoding needs more memory than a reader's default limit")

// decodeBatch is the rows a batch decodes: the reader's default.
const decodeBatch = 1 << 16

// decodeRowGroup decodes the one row group of the plaintext Parquet file f,
// of size bytes, and discards what it decodes. A row
// group that does not decode, or not to its rows, is an error matching
// ErrPlaintextParquet; one that needs more memory than a reader's
// default limit, ErrNotSealable (encoding it again may fit).
func decodeRowGroup(ctx context.Context, f io.ReaderAt, size int64) (err error) {
	mem := &limitedAlloc{mem: memory.DefaultAllocator}
	defer func() {
		if p := recover(); p != nil {
			if pe, ok := p.(error); ok && errors.Is(pe, errDecodeLimit) {
				err = fmt.Errorf("%w: %w", ErrNotSealable, pe)
				return
			}
			err = fmt.Errorf("%w: the rows do not decode: %v", ErrPlaintextParquet, p)
		}
	}()
	props := parquet.NewReaderProperties(mem)
	props.BufferedStreamEnabled = true
	props.BufferSize = 256 << 10
	props.MaxCompressedPageSize = pme.MaxPageSize
	props.MaxUncompressedPageSize = pme.MaxPageSize
	pf, err := file.NewParquetReader(io.NewSectionReader(f, 0, size), file.WithReadProps(props))
	if err != nil {
		return fmt.Errorf("%w: the rows do not decode: %v", ErrPlaintextParquet, err)
	}
	defer pf.Close()
	md := pf.MetaData()
	want := pf.NumRows()
	// What a batch of the reader's scan of every column may use by
	// default, beyond its column decoders: DefaultMemoryLimit for its
	// chunks (as their plaintext bytes, which their modules in the object
	// exceed) without the decoders' share.
	var chunks int64
	if md.NumRowGroups() == 1 {
		rg := md.RowGroup(0)
		for i := range rg.NumColumns() {
			if cc, err := rg.ColumnChunk(i); err == nil {
				chunks += cc.TotalCompressedSize()
			}
		}
	}
	batchLimit := reader.DefaultMemoryLimit(0, chunks)
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: decodeBatch}, mem)
	if err != nil {
		return fmt.Errorf("%w: the rows do not decode: %v", ErrPlaintextParquet, err)
	}
	// In the types the reader reads (INT96 at the unit it reads them in,
	// refinements of ARROW:schema): pqtypes, as the reader applies it.
	var stored *arrowfb.Schema
	if v := md.KeyValueMetadata().FindValue(pme.ArrowSchemaKey); v != nil {
		stored, _ = arrowfb.DecodeSchemaEntry([]byte(*v))
	}
	fields, _ := pqtypes.Apply(md.Schema, fr.Manifest, stored)
	pqtypes.ReadDates(md.Schema, fr.Manifest) // as the reader's scan reads dates
	rr, err := fr.GetRecordReader(ctx, nil, nil)
	if err != nil {
		return fmt.Errorf("%w: the rows do not decode: %v", ErrPlaintextParquet, err)
	}
	defer rr.Release()
	// The scan's types, as the reader's scan of every column has them.
	sc := pqtypes.ScanSchema(arrow.NewSchema(fields, nil), rr.Schema())
	// The row group's chunks that the reader's scan decodes with package
	// flatdec are decoded so here; if it may decode some with arrow-go's
	// record reader instead, the row group is decoded so too.
	arrowToo, err := decodeFlat(ctx, f, size, md, sc, mem, batchLimit)
	if err != nil || !arrowToo {
		return err
	}
	var rows int64
	for {
		mem.begin(batchLimit)
		ok := rr.Next()
		mem.end()
		if !ok {
			break
		}
		out, err := pqtypes.Record(sc, rr.RecordBatch())
		if err != nil {
			return fmt.Errorf("%w: the rows do not decode: %w", ErrPlaintextParquet, err)
		}
		rows += out.NumRows()
		out.Release()
	}
	if err := rr.Err(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: the rows do not decode: %v", ErrPlaintextParquet, err)
	}
	if rows != want {
		return fmt.Errorf("%w: the rows decode to %d rows, the row group has %d", ErrPlaintextParquet, rows, want)
	}
	return nil
}

// limitedAlloc allocates through mem and counts, as the reader's scan
// does, what a batch allocates and does not free: beyond limit within a
// batch (between begin and end), it panics with errDecodeLimit
// (decodeRowGroup recovers). It reuses the buffers freed to it, by size
// (at most maxFreeBytes of them): decoding allocates the same buffers batch
// after batch, and fresh ones each time would leave the garbage collector a
// row group's worth of them, several times the live heap.
type limitedAlloc struct {
	mem         memory.Allocator
	held, limit int64 // held: allocated and not freed since begin
	armed       bool
	free        map[int][][]byte
	freeBytes   int64
}

// maxFreeBytes bounds the freed buffers a limitedAlloc keeps for reuse.
const maxFreeBytes = 16 << 20

// begin starts a batch that may allocate limit bytes more than it frees.
func (a *limitedAlloc) begin(limit int64) { a.held, a.limit, a.armed = 0, limit, true }

// end ends a batch.
func (a *limitedAlloc) end() { a.armed = false }

func (a *limitedAlloc) grow(n int64) {
	if a.armed && n > 0 && a.held+n > a.limit {
		panic(fmt.Errorf("%w (%d bytes, %d held, limit %d)", errDecodeLimit, n, a.held, a.limit))
	}
	a.held += n
}

func (a *limitedAlloc) Allocate(size int) []byte {
	a.grow(int64(size))
	if l := a.free[size]; len(l) > 0 {
		b := l[len(l)-1]
		a.free[size] = l[:len(l)-1]
		a.freeBytes -= int64(size)
		clear(b)
		return b
	}
	return a.mem.Allocate(size)
}

func (a *limitedAlloc) Reallocate(size int, b []byte) []byte {
	nb := a.Allocate(size)
	copy(nb, b)
	a.Free(b)
	return nb
}

func (a *limitedAlloc) Free(b []byte) {
	a.held -= int64(len(b))
	if len(b) == 0 || a.freeBytes+int64(len(b)) > maxFreeBytes {
		a.mem.Free(b)
		return
	}
	if a.free == nil {
		a.free = make(map[int][][]byte)
	}
	a.free[len(b)] = append(a.free[len(b)], b)
	a.freeBytes += int64(len(b))
}
