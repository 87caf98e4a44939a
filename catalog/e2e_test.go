package catalog_test

import (
	"context"
	"maps"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/catalog"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/writer"
)

// writeObject writes one SOP-PME-1 object of rows rows with the plan's
// schema, keeps its DEK in the ring and appends it to the catalog.
func writeObject(t *testing.T, e *env, store blobs.Store, p *catalog.Plan, rows int) catalog.Object {
	t.Helper()
	ctx := context.Background()
	w, err := writer.New(ctx, store, p.Schema)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, p.Schema)
	defer b.Release()
	for i := range rows {
		for j, f := range p.Schema.Fields() {
			switch bb := b.Field(j).(type) {
			case *array.Int64Builder:
				bb.Append(int64(i))
			case *array.StringBuilder:
				bb.Append(f.Name)
			default:
				t.Fatalf("no builder for %s", f.Type)
			}
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	o, err := w.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.ring.Put(ctx, o.StorageID, o.DEK); err != nil {
		t.Fatal(err)
	}
	obj := catalog.Object{ID: o.StorageID, Rows: int64(rows), UnpaddedSize: int64(o.UnpaddedSize), Size: int64(o.Size)}
	if err := e.cat.Append(ctx, p, obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

// TestWriteRead: the writer takes a plan's schema as it is, and the
// objects read back, through the ring, with the table's field IDs, before
// and after an evolution that renamed a column.
func TestWriteRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	store, err := blobs.CreateDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	in := schema(fld("id", arrow.PrimitiveTypes.Int64, false, 0), fld("name", arrow.BinaryTypes.String, true, 0))
	p1 := mustPlan(t, e.cat, "t", in)
	o1 := writeObject(t, e, store, p1, 10)
	if _, err := e.cat.RenameColumn(ctx, "t", "name", "label"); err != nil {
		t.Fatal(err)
	}
	// The renamed column maps by name now, and a new one is added.
	in2 := schema(fld("label", arrow.BinaryTypes.String, true, 0), fld("id", arrow.PrimitiveTypes.Int64, false, 0), fld("extra", arrow.PrimitiveTypes.Int64, true, 0))
	p2 := mustPlan(t, e.cat, "t", in2, catalog.WithEvolve())
	o2 := writeObject(t, e, store, p2, 5)
	tb := mustTable(t, e.cat, "t")
	if len(tb.Objects) != 2 || tb.Objects[0] != withTime(o1, tb.Objects[0]) || tb.Objects[1] != withTime(o2, tb.Objects[1]) {
		t.Fatalf("objects %+v", tb.Objects)
	}
	for i, want := range []map[string]int{{"id": 1, "name": 2}, {"label": 2, "id": 1, "extra": 3}} {
		o := tb.Objects[i]
		r, err := reader.Open(ctx, store, o.ID, e.ring)
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(t, r.Schema()); !maps.Equal(got, want) {
			t.Errorf("object %d read with IDs %v, want %v", i, got, want)
		}
		if r.Size() != o.Size || o.UnpaddedSize > o.Size {
			t.Errorf("object %d: size %d, catalog %d (unpadded %d)", i, r.Size(), o.Size, o.UnpaddedSize)
		}
	}
}

func withTime(o, stored catalog.Object) catalog.Object {
	o.Appended, o.Version = stored.Appended, stored.Version
	return o
}
