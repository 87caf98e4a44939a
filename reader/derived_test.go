package reader_test

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/sovm/sop-pme/reader"
)

// TestDerivedSchema pins what deriving the Arrow schema from the Parquet
// schema (never from ARROW:schema) does to the types only ARROW:schema
// carries: they come back as their Parquet equivalents, values equal. A
// time zone other than UTC reads as UTC, a large string as a string, a
// dictionary decoded.
func TestDerivedSchema(t *testing.T) {
	ctx := context.Background()
	dict := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "Europe/Paris"}, Metadata: fid(1)},
		{Name: "ls", Type: arrow.BinaryTypes.LargeString, Metadata: fid(2)},
		{Name: "d", Type: dict, Metadata: fid(3)},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range 10 {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000_000_000 + int64(i)))
		b.Field(1).(*array.LargeStringBuilder).Append(string(rune('a' + i)))
		b.Field(2).(*array.BinaryDictionaryBuilder).AppendString(string(rune('x' + i%3)))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	st := newMemStore()
	obj := writeObject(t, st, schema, rec)
	r, err := reader.Open(ctx, st, obj.StorageID, keys{obj.StorageID: obj.DEK})
	if err != nil {
		t.Fatal(err)
	}
	want := []arrow.DataType{&arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, arrow.BinaryTypes.String, arrow.BinaryTypes.String}
	for i, f := range r.Schema().Fields() {
		if !arrow.TypeEqual(f.Type, want[i]) {
			t.Errorf("%s: %v, want %v", f.Name, f.Type, want[i])
		}
	}
	cols := readAll(t, r)
	for i := range rec.NumRows() {
		if got, w := cols[0].(*array.Timestamp).Value(int(i)), rec.Column(0).(*array.Timestamp).Value(int(i)); got != w {
			t.Errorf("ts[%d] = %d, want %d", i, got, w)
		}
		if got, w := cols[1].(*array.String).Value(int(i)), rec.Column(1).(*array.LargeString).Value(int(i)); got != w {
			t.Errorf("ls[%d] = %q, want %q", i, got, w)
		}
		d := rec.Column(2).(*array.Dictionary)
		if got, w := cols[2].(*array.String).Value(int(i)), d.Dictionary().(*array.String).Value(d.GetValueIndex(int(i))); got != w {
			t.Errorf("d[%d] = %q, want %q", i, got, w)
		}
	}
	for _, c := range cols {
		c.Release()
	}
}
