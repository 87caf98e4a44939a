package writer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// OpenSealFile opens the large Parquet file the benchmarks of sealing
// read, named by SEAL_FILE, and returns it with its size; without
// SEAL_FILE it skips b (a benchmark, never run by go test alone). The
// file is closed when b ends.
func OpenSealFile(b *testing.B) (*os.File, int64) {
	name := os.Getenv("SEAL_FILE")
	if name == "" {
		b.Skip("SEAL_FILE names no file")
	}
	f, err := os.Open(name)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	st, err := f.Stat()
	if err != nil {
		b.Fatal(err)
	}
	return f, st.Size()
}

// BenchmarkDecodeRoutes measures, on the Parquet file named by SEAL_FILE
// (TPC-H's lineitem), what routes for SealFile's decode check cost a
// core. "pqarrow" decodes every row group as the check does today
// (pqarrow, batches of decodeBatch rows, Arrow arrays). "columns" only
// reads every column chunk's values and levels with arrow-go's typed
// column readers (ReadBatchInPage: values point into the page, not
// cloned) into reused buffers: the floor of a check on those readers,
// which would still have to check what pqarrow's reconstruction checks
// (levels, widths, conversions, the memory limit), and whose readers
// refuse some files pqarrow reads. "pages" only reads and decompresses
// every page (arrow-go's page reader): the floor of any check that looks
// into the pages. It is a measurement, not a check: nothing here decides
// whether a file is sealed.
func BenchmarkDecodeRoutes(b *testing.B) {
	f, size := OpenSealFile(b)
	open := func(b *testing.B) *file.Reader {
		props := parquet.NewReaderProperties(memory.DefaultAllocator)
		props.BufferedStreamEnabled = true
		props.BufferSize = 256 << 10
		pf, err := file.NewParquetReader(io.NewSectionReader(f, 0, size), file.WithReadProps(props))
		if err != nil {
			b.Fatal(err)
		}
		return pf
	}
	b.Run("pqarrow", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			pf := open(b)
			mem := &limitedAlloc{mem: memory.DefaultAllocator}
			fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: decodeBatch}, mem)
			if err != nil {
				b.Fatal(err)
			}
			for rg := range pf.NumRowGroups() {
				rr, err := fr.GetRecordReader(context.Background(), nil, []int{rg})
				if err != nil {
					b.Fatal(err)
				}
				for rr.Next() {
				}
				if err := rr.Err(); err != nil {
					b.Fatal(err)
				}
				rr.Release()
			}
			pf.Close()
		}
	})
	b.Run("columns", func(b *testing.B) {
		b.SetBytes(size)
		var bufs columnBufs
		for b.Loop() {
			pf := open(b)
			for rg := range pf.NumRowGroups() {
				r := pf.RowGroup(rg)
				for c := range r.NumColumns() {
					cr, err := r.Column(c)
					if err != nil {
						b.Fatal(err)
					}
					if err := bufs.readAll(cr); err != nil {
						b.Fatal(err)
					}
				}
			}
			pf.Close()
		}
	})
	b.Run("pages", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			pf := open(b)
			for rg := range pf.NumRowGroups() {
				r := pf.RowGroup(rg)
				for c := range r.NumColumns() {
					pr, err := r.GetColumnPageReader(c)
					if err != nil {
						b.Fatal(err)
					}
					for pr.Next() {
					}
					if err := pr.Err(); err != nil {
						b.Fatal(err)
					}
				}
			}
			pf.Close()
		}
	})
}

// columnBufs are the reused level buffers of BenchmarkDecodeRoutes's
// "columns" route, and its value buffers by type.
type columnBufs struct {
	def, rep []int16
	values   map[string]any
}

// pageReader is what arrow-go's typed column readers have in common.
type pageReader[T any] interface {
	ReadBatchInPage(n int64, values []T, def, rep []int16) (int64, int, error)
}

// readPages reads what is left of r's chunk into bb's buffers of T.
func readPages[T any](bb *columnBufs, cr file.ColumnChunkReader, r pageReader[T]) error {
	const n = decodeBatch
	if bb.def == nil {
		bb.def, bb.rep, bb.values = make([]int16, n), make([]int16, n), map[string]any{}
	}
	key := fmt.Sprintf("%T", r)
	vals, ok := bb.values[key].([]T)
	if !ok {
		vals = make([]T, n)
		bb.values[key] = vals
	}
	for cr.HasNext() {
		// ReadBatchInPage can return no rows and no error while HasNext
		// stays true (a byte array column of a mutated file did, which
		// pqarrow read): without this a chunk could be read for ever.
		total, _, err := r.ReadBatchInPage(n, vals, bb.def, bb.rep)
		if err != nil {
			return err
		}
		if total == 0 {
			return errors.New("a column reader read no rows")
		}
	}
	return cr.Err()
}

func (bb *columnBufs) readAll(cr file.ColumnChunkReader) error {
	switch r := cr.(type) {
	case *file.Int32ColumnChunkReader:
		return readPages(bb, cr, r)
	case *file.Int64ColumnChunkReader:
		return readPages(bb, cr, r)
	case *file.Int96ColumnChunkReader:
		return readPages(bb, cr, r)
	case *file.Float32ColumnChunkReader:
		return readPages(bb, cr, r)
	case *file.Float64ColumnChunkReader:
		return readPages(bb, cr, r)
	case *file.BooleanColumnChunkReader:
		return readPages(bb, cr, r)
	case *file.ByteArrayColumnChunkReader:
		return readPages(bb, cr, r)
	case *file.FixedLenByteArrayColumnChunkReader:
		return readPages(bb, cr, r)
	}
	return fmt.Errorf("column reader %T", cr)
}
