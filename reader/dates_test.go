package reader_test

import (
	"bytes"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// TestDates: a DATE column (INT32), which pqtypes.ReadDates has pqarrow
// read as the int32 it decodes, reads as date32, values and nulls as
// written.
func TestDates(t *testing.T) {
	t.Parallel()
	const rows = 1 << 18
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true, Metadata: fid(1)},
		{Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true, Metadata: fid(2)},
	}, nil)
	b := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
	defer b.Release()
	for i := range rows {
		v := int32(i*7919%20000 - 3000)
		if i%9 == 0 {
			b.Field(0).AppendNull()
			b.Field(1).AppendNull()
			continue
		}
		b.Field(0).(*array.Date32Builder).Append(arrow.Date32(v))
		b.Field(1).(*array.Int32Builder).Append(v)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	tbl := array.NewTableFromRecords(schema, []arrow.RecordBatch{rec})
	defer tbl.Release()
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithDictionaryDefault(false))
	if err := pqarrow.WriteTable(tbl, &buf, rows, props, pqarrow.NewArrowWriterProperties()); err != nil {
		t.Fatal(err)
	}
	r := sealBytes(t, buf.Bytes())
	cols := readAll(t, r)
	d, ok := cols[0].(*array.Date32)
	if !ok {
		t.Fatalf("column d is %s, want date32", cols[0].DataType())
	}
	in := cols[1].(*array.Int32)
	for i := range rows {
		if d.IsNull(i) != (i%9 == 0) || d.IsNull(i) != in.IsNull(i) || d.IsValid(i) && int32(d.Value(i)) != in.Value(i) {
			t.Fatalf("row %d: date %s, int %s", i, d.ValueStr(i), in.ValueStr(i))
		}
	}
}
