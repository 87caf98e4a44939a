package writer_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/sovm/sop-pme/internal/memstore"
	"github.com/sovm/sop-pme/internal/thrift"
	"github.com/sovm/sop-pme/writer"
)

// The tests in this file reproduce, with files they make, what Apache
// parquet-testing's corpus found (issue 14, section 9).

// twoStrings returns a record of two string columns, n rows.
func twoStrings(n int) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "known", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "unknown", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.StringBuilder).Append("known " + string(rune('a'+i%26)))
		b.Field(1).(*array.StringBuilder).Append("unknown " + string(rune('a'+i%26)))
	}
	return b.NewRecordBatch()
}

// unknownLogicalType sets the logicalType of schema element elem to a
// member of the LogicalType union no reader knows (field 99), and drops its
// converted type, as parquet-testing's unknown-logical-type.parquet has.
func unknownLogicalType(elem int) func(md *thrift.Struct) {
	return func(md *thrift.Struct) {
		schema, _ := md.List(2)
		se := schema.Items[elem].Struct
		se.Delete(6)
		se.Set(10, thrift.StructValue(thrift.NewStruct(thrift.Field{ID: 99, Value: thrift.StructValue(thrift.NewStruct())})))
	}
}

// TestSealFileUnknownLogicalType: a file with a column whose logical type
// no reader knows seals, and the reader reads that column by its physical
// type (BYTE_ARRAY: binary), as Parquet readers must. Before, SealFile
// refused it ("the Parquet schema has no Arrow form: invalid logical
// type"), and so did the reader.
func TestSealFileUnknownLogicalType(t *testing.T) {
	rec := twoStrings(50)
	defer rec.Release()
	plain := editFooter(t, plainParquet(t, rec), unknownLogicalType(2))
	st := memstore.New()
	obj, err := writer.SealFile(context.Background(), st, bytes.NewReader(plain), int64(len(plain)), writer.WithAssignFieldIDs())
	if err != nil {
		t.Fatal(err)
	}
	s, got := readSealed(t, st, obj)
	defer got.Release()
	if s.Field(0).Type.ID() != arrow.STRING || s.Field(1).Type.ID() != arrow.BINARY {
		t.Fatalf("schema %v: want known a string, unknown binary", s)
	}
	col, err := array.Concatenate(got.Column(1).Data().Chunks(), memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	defer col.Release()
	for i := range col.Len() {
		if g, w := string(col.(*array.Binary).Value(i)), "unknown "+string(rune('a'+i%26)); g != w {
			t.Fatalf("row %d: %q, want %q", i, g, w)
		}
	}
}
