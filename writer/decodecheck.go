package writer

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/sovm/sop-pme/internal/pagebound/pagecheck"
	"github.com/sovm/sop-pme/pme"
)

// SealFile keeps a file's pages as they are, so it must know that they
// decode before it publishes them: a page can pass every check of the
// reader and still not decode (repetition levels that start a record with
// 1, a required column whose values run short; parquet-testing's
// bad_data/ARROW-GH-45185 and ARROW-GH-47662), and the reader would refuse
// the object for ever. So each row group is decoded as the reader decodes
// it (arrow-go's pqarrow, every column, in batches of the reader's
// default size, within the reader's default memory limit for a scan of
// it), from its pages as they were sealed (seal.Sealer.OnRowGroupFile),
// before the next row group is sealed. Nothing decoded is kept.

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
	mem := &limitedAlloc{mem: memory.DefaultAllocator, limit: pagecheck.DefaultLimit(size)}
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
	want := pf.NumRows()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: decodeBatch}, mem)
	if err != nil {
		return fmt.Errorf("%w: the rows do not decode: %v", ErrPlaintextParquet, err)
	}
	rr, err := fr.GetRecordReader(ctx, nil, nil)
	if err != nil {
		return fmt.Errorf("%w: the rows do not decode: %v", ErrPlaintextParquet, err)
	}
	defer rr.Release()
	var rows int64
	for rr.Next() {
		rows += rr.RecordBatch().NumRows()
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

// limitedAlloc allocates through mem while what it holds stays within
// limit, and panics with errDecodeLimit beyond it (decodeRowGroup
// recovers). It reuses the buffers freed to it, by size (at most
// maxFreeBytes of them): decoding allocates the same buffers batch after
// batch, and fresh ones each time would leave the garbage collector a row
// group's worth of them, several times the live heap.
type limitedAlloc struct {
	mem         memory.Allocator
	held, limit int64
	free        map[int][][]byte
	freeBytes   int64
}

// maxFreeBytes bounds the freed buffers a limitedAlloc keeps for reuse.
const maxFreeBytes = 16 << 20

func (a *limitedAlloc) grow(n int64) {
	if a.held+n > a.limit {
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
