package reader_test

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/sovm/sop-pme/internal/testkit/hostile"
	"github.com/sovm/sop-pme/reader"
)

// TestStoredSchema: the types only ARROW:schema carries come back as they
// were written (a time zone other than UTC, a large string, a
// dictionary), values equal.
func TestStoredSchema(t *testing.T) {
	t.Parallel()
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
	for i, f := range r.Schema().Fields() {
		if !arrow.TypeEqual(f.Type, schema.Field(i).Type) {
			t.Errorf("%s: %v, want %v", f.Name, f.Type, schema.Field(i).Type)
		}
	}
	cols := readAll(t, r)
	for i, c := range cols {
		if !array.Equal(c, rec.Column(i)) {
			t.Errorf("%s: values differ", schema.Field(i).Name)
		}
		c.Release()
	}
	// The stored schema is no metadata entry.
	if _, ok := r.Metadata().GetValue("ARROW:schema"); ok {
		t.Error("Metadata shows ARROW:schema")
	}
}

// TestStoredSchemaIgnored: an ARROW:schema entry that is malformed, or
// whose types contradict the Parquet schema (the hostile cases
// arrow-schema-*), is ignored with no error: the object opens and reads in
// the types of its Parquet schema.
func TestStoredSchemaIgnored(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	want := []arrow.DataType{arrow.PrimitiveTypes.Int64, arrow.BinaryTypes.String, arrow.PrimitiveTypes.Float64}
	n := 0
	for _, c := range hostileCases() {
		if !strings.HasPrefix(c.Name, "arrow-schema-") {
			continue
		}
		n++
		t.Run(c.Name, func(t *testing.T) {
			if c.err != nil {
				t.Fatal(c.err)
			}
			st := hostile.NewStore()
			id := st.Put(c.obj, fuzzKey())
			r, err := reader.Open(ctx, st, id, st)
			if err != nil {
				t.Fatal(err)
			}
			for i, f := range r.Schema().Fields() {
				if !arrow.TypeEqual(f.Type, want[i]) {
					t.Errorf("%s: %v, want %v", f.Name, f.Type, want[i])
				}
			}
			if rows, err := readObject(ctx, st, id); err != nil || rows != 200 {
				t.Errorf("%d rows, %v", rows, err)
			}
		})
	}
	if n < 5 {
		t.Fatalf("%d arrow-schema cases", n)
	}
}
