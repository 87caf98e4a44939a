package reader_test

import (
	"bytes"
	"context"
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
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(schema, &buf, parquet.NewWriterProperties(parquet.WithStoreDecimalAsInteger(true)), pqarrow.NewArrowWriterProperties())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
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
	read := func(opts ...reader.ScanOption) arrow.Table {
		rr, err := r.Scan(context.Background(), opts...)
		if err != nil {
			t.Fatal(err)
		}
		defer rr.Release()
		var recs []arrow.RecordBatch
		for rr.Next() {
			rec := rr.RecordBatch()
			rec.Retain()
			recs = append(recs, rec)
		}
		if rr.Err() != nil {
			t.Fatal(rr.Err())
		}
		return array.NewTableFromRecords(rr.Schema(), recs)
	}
	wide, thin := read(), read(reader.WithNarrowDecimals(), reader.WithBatchSize(700))
	defer wide.Release()
	defer thin.Release()
	if !thin.Schema().Equal(narrow) || !wide.Schema().Equal(r.Schema()) {
		t.Fatalf("scan schemas %s and %s, want %s and %s", thin.Schema(), wide.Schema(), narrow, r.Schema())
	}
	if thin.NumRows() != rows || wide.NumRows() != rows {
		t.Fatalf("%d and %d rows, want %d", thin.NumRows(), wide.NumRows(), rows)
	}
	for c := range 4 {
		var nw, nt []string
		for _, ch := range wide.Column(c).Data().Chunks() {
			for i := range ch.Len() {
				nw = append(nw, ch.ValueStr(i))
			}
		}
		for _, ch := range thin.Column(c).Data().Chunks() {
			for i := range ch.Len() {
				nt = append(nt, ch.ValueStr(i))
			}
		}
		if len(nw) != rows || len(nt) != rows {
			t.Fatalf("column %d: %d and %d values", c, len(nw), len(nt))
		}
		for i := range nw {
			if nw[i] != nt[i] {
				t.Fatalf("column %d row %d: narrow %s, wide %s", c, i, nt[i], nw[i])
			}
		}
	}
	// The values as written, nulls included.
	col := thin.Column(1).Data().Chunk(0).(*array.Decimal64)
	if col.IsNull(0) || int64(col.Value(0)) != -5000 || int64(col.Value(1)) != 37-5000 || !col.IsNull(10) {
		t.Errorf("d15 rows 0, 1, 10: %s %s %s", col.ValueStr(0), col.ValueStr(1), col.ValueStr(10))
	}
}
