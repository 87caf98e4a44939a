package writer

import (
	"context"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// BenchmarkDecodeRoutes measures, on the Parquet file named by SEAL_FILE
// (TPC-H's lineitem), what the two routes for SealFile's decode check
// cost a core: "pqarrow" decodes every row group as the check does today
// (pqarrow, batches of decodeBatch rows, Arrow arrays), "columns" only
// reads every column chunk's values and levels with arrow-go's typed
// column readers (ReadBatchInPage: values that point into the page, not cloned) into reused buffers: the floor of a
// low-level check, which would still have to check what pqarrow's
// reconstruction checks (levels, widths, the memory limit); "pages" only
// reads and decompresses every page (arrow-go's page reader): the floor
// of any check that looks into the pages. It is a
// measurement, not a check: nothing here refuses a file. Skipped without
// SEAL_FILE.
func BenchmarkDecodeRoutes(b *testing.B) {
	name := os.Getenv("SEAL_FILE")
	if name == "" {
		b.Skip("SEAL_FILE names no file")
	}
	f, err := os.Open(name)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		b.Fatal(err)
	}
	open := func(b *testing.B) *file.Reader {
		props := parquet.NewReaderProperties(memory.DefaultAllocator)
		props.BufferedStreamEnabled = true
		props.BufferSize = 256 << 10
		pf, err := file.NewParquetReader(io.NewSectionReader(f, 0, st.Size()), file.WithReadProps(props))
		if err != nil {
			b.Fatal(err)
		}
		return pf
	}
	b.Run("pqarrow", func(b *testing.B) {
		b.SetBytes(st.Size())
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
		b.SetBytes(st.Size())
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
		b.SetBytes(st.Size())
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

// columnBufs are the reused buffers of BenchmarkDecodeRoutes's
// "columns" route.
type columnBufs struct {
	def, rep []int16
	i32      []int32
	i64      []int64
	i96      []parquet.Int96
	f32      []float32
	f64      []float64
	bools    []bool
	ba       []parquet.ByteArray
	flba     []parquet.FixedLenByteArray
}

func (bb *columnBufs) readAll(cr file.ColumnChunkReader) error {
	const n = decodeBatch
	if bb.def == nil {
		bb.def, bb.rep = make([]int16, n), make([]int16, n)
		bb.i32, bb.i64, bb.i96 = make([]int32, n), make([]int64, n), make([]parquet.Int96, n)
		bb.f32, bb.f64, bb.bools = make([]float32, n), make([]float64, n), make([]bool, n)
		bb.ba, bb.flba = make([]parquet.ByteArray, n), make([]parquet.FixedLenByteArray, n)
	}
	for cr.HasNext() {
		var err error
		switch r := cr.(type) {
		case *file.Int32ColumnChunkReader:
			_, _, err = r.ReadBatchInPage(n, bb.i32, bb.def, bb.rep)
		case *file.Int64ColumnChunkReader:
			_, _, err = r.ReadBatchInPage(n, bb.i64, bb.def, bb.rep)
		case *file.Int96ColumnChunkReader:
			_, _, err = r.ReadBatchInPage(n, bb.i96, bb.def, bb.rep)
		case *file.Float32ColumnChunkReader:
			_, _, err = r.ReadBatchInPage(n, bb.f32, bb.def, bb.rep)
		case *file.Float64ColumnChunkReader:
			_, _, err = r.ReadBatchInPage(n, bb.f64, bb.def, bb.rep)
		case *file.BooleanColumnChunkReader:
			_, _, err = r.ReadBatchInPage(n, bb.bools, bb.def, bb.rep)
		case *file.ByteArrayColumnChunkReader:
			_, _, err = r.ReadBatchInPage(n, bb.ba, bb.def, bb.rep)
		case *file.FixedLenByteArrayColumnChunkReader:
			_, _, err = r.ReadBatchInPage(n, bb.flba, bb.def, bb.rep)
		default:
			return fmt.Errorf("column reader %T", cr)
		}
		if err != nil {
			return err
		}
	}
	return cr.Err()
}
