package reader_test

import (
	"bytes"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/sovm/sop-pme/reader"
)

// TestNarrowDecimals: WithNarrowDecimals reads the top-level INT32 and
// INT64 decimals as decimal32 and decimal64 of the same values and nulls
// (what NarrowDecimalSchema says), and leaves other decimals, nested ones
// and the default scan as they were.
func TestNarrowDecimals(t *testing.T) {
	t.Parallel()
	mem := memory.NewGoAllocator()
	d := func(p, s int32) arrow.DataType { return &arrow.Decimal128Type{Precision: p, Scale: s} }
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "d7", Type: d(7, 2), Nullable: true, Metadata: fid(1)},
		{Name: "d15", Type: d(15, 2), Nullable: true, Metadata: fid(2)},
		{Name: "d20", Type: d(20, 2), Nullable: true, Metadata: fid(3)},
		{Name: "l", Type: arrow.ListOfField(arrow.Field{Name: "element", Type: d(15, 2), Nullable: true, Metadata: fid(5)}), Nullable: true, Metadata: fid(4)},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	const rows = 3000
	for i := range rows {
		v := decimal128.FromI64(int64(i*37 - 5000))
		for c := range 3 {
			if (i+c)%11 == 0 {
				b.Field(c).AppendNull()
			} else {
				b.Field(c).(*array.Decimal128Builder).Append(v)
			}
		}
		lb := b.Field(3).(*array.ListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.Decimal128Builder).Append(v)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	tbl := array.NewTableFromRecords(schema, []arrow.RecordBatch{rec})
	defer tbl.Release()
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithStoreDecimalAsInteger(true))
	if err := pqarrow.WriteTable(tbl, &buf, rows, props, pqarrow.NewArrowWriterProperties()); err != nil {
		t.Fatal(err)
	}
	r := sealBytes(t, buf.Bytes())
	narrow := r.NarrowDecimalSchema()
	want := []arrow.DataType{&arrow.Decimal32Type{Precision: 7, Scale: 2}, &arrow.Decimal64Type{Precision: 15, Scale: 2}, d(20, 2), r.Schema().Field(3).Type}
	for i, dt := range want {
		if !arrow.TypeEqual(narrow.Field(i).Type, dt) {
			t.Errorf("NarrowDecimalSchema field %d: %s, want %s", i, narrow.Field(i).Type, dt)
		}
		if !narrow.Field(i).Metadata.Equal(r.Schema().Field(i).Metadata) {
			t.Errorf("field %d lost its metadata: %v", i, narrow.Field(i).Metadata)
		}
	}
	if r.Schema().Field(1).Type.ID() != arrow.DECIMAL128 {
		t.Fatalf("Schema changed: %s", r.Schema())
	}
	wide, thin := readAll(t, r), readAll(t, r, reader.WithNarrowDecimals(), reader.WithBatchSize(700))
	for c := range 4 {
		if !arrow.TypeEqual(thin[c].DataType(), narrow.Field(c).Type) || !arrow.TypeEqual(wide[c].DataType(), r.Schema().Field(c).Type) {
			t.Errorf("column %d: scans of %s and %s, want %s and %s", c, thin[c].DataType(), wide[c].DataType(), narrow.Field(c).Type, r.Schema().Field(c).Type)
		}
		if thin[c].Len() != rows || wide[c].Len() != rows {
			t.Fatalf("column %d: %d and %d rows, want %d", c, thin[c].Len(), wide[c].Len(), rows)
		}
		for i := range rows {
			if w, n := wide[c].ValueStr(i), thin[c].ValueStr(i); w != n {
				t.Fatalf("column %d row %d: narrow %s, wide %s", c, i, n, w)
			}
		}
	}
	// The values as written, nulls included.
	col := thin[1].(*array.Decimal64)
	if col.IsNull(0) || int64(col.Value(0)) != -5000 || int64(col.Value(1)) != 37-5000 || !col.IsNull(10) {
		t.Errorf("d15 rows 0, 1, 10: %s %s %s", col.ValueStr(0), col.ValueStr(1), col.ValueStr(10))
	}
}
