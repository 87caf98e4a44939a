package writer_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/sovm/sop-pme/internal/testkit/memstore"
	"github.com/sovm/sop-pme/writer"
)

// TestSealFileChecksFlatDecoder: the decode check decodes a chunk with the
// decoder the reader's scan will decode it with. A boolean column's RLE
// run of value 3 is read by arrow-go as true, but the reader's fast path
// (package flatdec, which decodes every flat boolean column) refuses it:
// so SealFile refuses the file, where a check by arrow-go alone would have
// sealed an object the reader refuses. So too beside a nested column,
// which sends a scan of every column to arrow-go, but not a scan of the
// boolean alone.
func TestSealFileChecksFlatDecoder(t *testing.T) {
	t.Parallel()
	for _, nested := range []bool{false, true} {
		fields := []arrow.Field{
			{Name: "id", Type: arrow.PrimitiveTypes.Int64},
			{Name: "b", Type: arrow.FixedWidthTypes.Boolean},
		}
		if nested {
			// Two leaves under one field: more leaves than fields.
			fields = append(fields, arrow.Field{Name: "s", Type: arrow.StructOf(
				arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32}, arrow.Field{Name: "y", Type: arrow.PrimitiveTypes.Int32})})
		}
		bld := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema(fields, nil))
		for i := range 2000 {
			bld.Field(0).(*array.Int64Builder).Append(int64(i))
			bld.Field(1).(*array.BooleanBuilder).Append(true)
			if nested {
				sb := bld.Field(2).(*array.StructBuilder)
				sb.Append(true)
				sb.FieldBuilder(0).(*array.Int32Builder).Append(int32(i))
				sb.FieldBuilder(1).(*array.Int32Builder).Append(int32(-i))
			}
		}
		rec := bld.NewRecordBatch()
		bld.Release()
		good := plainParquet(t, rec, parquet.WithDataPageVersion(parquet.DataPageV2), parquet.WithCompression(compress.Codecs.Uncompressed),
			parquet.WithEncodingFor("b", parquet.Encodings.RLE), parquet.WithMaxRowGroupLength(1000))
		rec.Release()
		if _, err := writer.SealFile(context.Background(), memstore.New(), bytes.NewReader(good), int64(len(good)), writer.WithAssignFieldIDs()); err != nil {
			t.Fatalf("nested %t: %v", nested, err)
		}
		// A run of 1000 values (varint 2000: d0 0f) of value 1, its 3 bytes
		// prefixed by their length: the page's values.
		run := []byte{3, 0, 0, 0, 0xd0, 0x0f, 0x01}
		if n := bytes.Count(good, run); n != 2 {
			t.Fatalf("nested %t: %d runs of 1000 trues in the file, want one a row group", nested, n)
		}
		bad := bytes.Clone(good)
		at := bytes.Index(bad, run)
		bad[at+len(run)-1] = 3
		tbl, err := pqarrow.ReadTable(context.Background(), bytes.NewReader(bad), nil, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		if err != nil {
			t.Fatalf("nested %t: arrow-go refuses the file: %v (the test needs one it reads)", nested, err)
		}
		tbl.Release()
		_, err = writer.SealFile(context.Background(), memstore.New(), bytes.NewReader(bad), int64(len(bad)), writer.WithAssignFieldIDs())
		if !errors.Is(err, writer.ErrPlaintextParquet) {
			t.Fatalf("nested %t: SealFile: %v, want ErrPlaintextParquet", nested, err)
		}
	}
}
