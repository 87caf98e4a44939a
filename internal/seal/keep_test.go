package seal_test

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/sovm/sop-pme/internal/seal"
	"github.com/sovm/sop-pme/pme"
)

// readRowGroups reads each row group of a plaintext Parquet file with
// pqarrow, as a table.
func readRowGroups(t *testing.T, r io.ReaderAt, size int64) []arrow.Table {
	t.Helper()
	pf, err := file.NewParquetReader(io.NewSectionReader(r, 0, size))
	if err != nil {
		t.Fatal(err)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	var out []arrow.Table
	for i := range pf.NumRowGroups() {
		rr, err := fr.GetRecordReader(context.Background(), nil, []int{i})
		if err != nil {
			t.Fatal(err)
		}
		var recs []arrow.RecordBatch
		for rr.Next() {
			r := rr.RecordBatch()
			r.Retain()
			recs = append(recs, r)
		}
		if err := rr.Err(); err != nil {
			t.Fatal(err)
		}
		out = append(out, array.NewTableFromRecords(rr.Schema(), recs))
		rr.Release()
	}
	return out
}

func sameTable(a, b arrow.Table) bool {
	if a.NumRows() != b.NumRows() || a.NumCols() != b.NumCols() || a.NumRows() == 0 {
		return false
	}
	for i := range int(a.NumCols()) {
		if !array.ChunkedEqual(a.Column(i).Data(), b.Column(i).Data()) {
			return false
		}
	}
	return true
}

// TestOnRowGroupFile: the file a Sealer hands over for each row group is a
// plaintext Parquet file of that row group alone, which pqarrow reads as
// the row group of the input: for pages sealed as they are (read from the
// input) and for pages the Sealer rewrites (compressed V2 pages, kept in
// memory).
func TestOnRowGroupFile(t *testing.T) {
	t.Parallel()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	lb := b.Field(2).(*array.ListBuilder)
	for i := range 3000 {
		b.Field(0).(*array.Int64Builder).Append(int64(i) * 3)
		if i%7 == 0 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append("value " + string(rune('a'+i%26)))
		}
		lb.Append(true)
		for j := range i % 4 {
			lb.ValueBuilder().(*array.Int32Builder).Append(int32(j))
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	for name, props := range map[string][]parquet.WriterProperty{
		"v1 zstd":   {parquet.WithCompression(compress.Codecs.Zstd)},
		"v2 snappy": {parquet.WithCompression(compress.Codecs.Snappy), parquet.WithDataPageVersion(parquet.DataPageV2)},
	} {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			props = append(props, parquet.WithMaxRowGroupLength(1000), parquet.WithDataPageSize(4096))
			fw, err := pqarrow.NewFileWriter(schema, &buf, parquet.NewWriterProperties(props...), pqarrow.NewArrowWriterProperties())
			if err != nil {
				t.Fatal(err)
			}
			if err := fw.Write(rec); err != nil {
				t.Fatal(err)
			}
			if err := fw.Close(); err != nil {
				t.Fatal(err)
			}
			in := buf.Bytes()
			want := readRowGroups(t, bytes.NewReader(in), int64(len(in)))
			s := seal.NewSealer(io.Discard, pme.NewDEK())
			var got []arrow.Table
			s.OnRowGroupFile(func(f *seal.RowGroupFile) error {
				defer f.Release()
				got = append(got, readRowGroups(t, f, f.Size())...)
				return f.Err()
			})
			if err := s.AddFile(bytes.NewReader(in), int64(len(in))); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) || len(want) != 3 {
				t.Fatalf("%d row group files, %d row groups", len(got), len(want))
			}
			for i := range want {
				if !sameTable(want[i], got[i]) {
					t.Errorf("row group %d reads otherwise from its file", i)
				}
			}
			if name == "v2 snappy" && s.RewrittenPages() == 0 {
				t.Error("no page was rewritten: the kept pages are not tested")
			}
		})
	}
}
