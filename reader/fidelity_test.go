package reader_test

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/sovm/sop-pme/internal/testkit/testtables"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/writer"
)

// TestRoundTripTestTables: every type of internal/testkit/testtables, those that
// only ARROW:schema tells apart included (time zones, large offsets,
// durations, dictionaries, extension types), reads back in the type it was
// written in (arrow.TypeEqual, field metadata aside) with equal values
// (array.Equal), whole and projected to one field.
func TestRoundTripTestTables(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, schema := range map[string]*arrow.Schema{"AllTypes": testtables.AllTypes(), "ArrowTypes": testtables.ArrowTypes()} {
		t.Run(name, func(t *testing.T) {
			rec := testtables.Record(schema, 700, 5)
			defer rec.Release()
			st := newMemStore()
			obj := writeObject(t, st, schema, rec, writer.WithRowGroupRows(300))
			r, err := reader.Open(ctx, st, obj.StorageID, keys{obj.StorageID: obj.DEK})
			if err != nil {
				t.Fatal(err)
			}
			got := r.Schema()
			if got.NumFields() != schema.NumFields() {
				t.Fatalf("%d fields, want %d", got.NumFields(), schema.NumFields())
			}
			for i, f := range schema.Fields() {
				if g := got.Field(i); g.Name != f.Name || !arrow.TypeEqual(g.Type, f.Type) {
					t.Errorf("%s: read as %v, written as %v", f.Name, g.Type, f.Type)
				}
			}
			cols := readAll(t, r)
			for i, c := range cols {
				if !arrow.TypeEqual(c.DataType(), schema.Field(i).Type) {
					t.Errorf("%s: scanned as %v", schema.Field(i).Name, c.DataType())
				} else if !equal(c, rec.Column(i)) {
					t.Errorf("%s: values differ", schema.Field(i).Name)
				}
				c.Release()
			}
			// One field, by its ID: the same type.
			last := schema.Field(schema.NumFields() - 1)
			id, _ := last.Metadata.GetValue(writer.FieldIDKey)
			var fid int32
			for _, c := range id {
				fid = fid*10 + int32(c-'0')
			}
			proj := readAll(t, r, reader.WithFields(fid))
			if len(proj) != 1 || !arrow.TypeEqual(proj[0].DataType(), last.Type) || !equal(proj[0], rec.Column(schema.NumFields()-1)) {
				t.Errorf("projection to %s: %v", last.Name, proj[0].DataType())
			}
			proj[0].Release()
		})
	}
}

// equal is array.Equal, but for NaNs, which are equal to each other.
func equal(a, b arrow.Array) bool {
	return array.Equal(a, b) || array.ApproxEqual(a, b, array.WithNaNsEqual(true), array.WithAbsTolerance(0))
}
