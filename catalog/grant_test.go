package catalog_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/sovm/sop-pme/catalog"
)

// TestExportImportTable hands a table from one catalog to another: the
// same table again merges (a later export with more objects and a new
// schema version), the same records twice change nothing, and a table of
// the same name that is another table, or records altered, are refused
// with nothing changed.
func TestExportImportTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := newEnv(t), newEnv(t)
	p := mustPlan(t, a.cat, "orders", schema(fld("id", arrow.PrimitiveTypes.Int64, false, 0)))
	if err := a.cat.Append(ctx, p, obj("o1", 10), obj("o2", 20)); err != nil {
		t.Fatal(err)
	}
	ta, recs, err := a.cat.ExportTable(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || len(ta.Objects) != 2 {
		t.Fatalf("export: %d records, %d objects", len(recs), len(ta.Objects))
	}
	name, n, err := b.cat.ImportTable(ctx, recs)
	if err != nil || name != "orders" || n != 2 {
		t.Fatalf("import: %q %d %v", name, n, err)
	}
	if _, n, err := b.cat.ImportTable(ctx, recs); err != nil || n != 0 {
		t.Fatalf("import again: %d %v", n, err)
	}
	tb := mustTable(t, b.cat, "orders")
	if len(tb.Objects) != 2 || tb.Objects[0].ID != ta.Objects[0].ID || tb.Objects[1].Rows != 20 || len(tb.Versions) != 1 {
		t.Fatalf("imported table: %+v", tb)
	}

	// Later: a column added and a third object; the import merges.
	if _, err := a.cat.AddColumn(ctx, "orders", "note", arrow.BinaryTypes.String); err != nil {
		t.Fatal(err)
	}
	p = mustPlan(t, a.cat, "orders", schema(fld("id", arrow.PrimitiveTypes.Int64, false, 0), fld("note", arrow.BinaryTypes.String, true, 0)))
	if err := a.cat.Append(ctx, p, obj("o3", 30)); err != nil {
		t.Fatal(err)
	}
	_, recs2, err := a.cat.ExportTable(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if _, n, err := b.cat.ImportTable(ctx, recs2); err != nil || n != 1 {
		t.Fatalf("import of the later export: %d %v", n, err)
	}
	// The older export after the newer one: nothing lost.
	if _, n, err := b.cat.ImportTable(ctx, recs); err != nil || n != 0 {
		t.Fatalf("import of the older export: %d %v", n, err)
	}
	tb = mustTable(t, b.cat, "orders")
	if len(tb.Objects) != 3 || len(tb.Versions) != 2 || tb.HighWater != 2 || tb.Objects[2].Version != 2 {
		t.Fatalf("merged table: %d objects, %d versions, high water %d", len(tb.Objects), len(tb.Versions), tb.HighWater)
	}

	// Another table of the same name.
	c := newEnv(t)
	mustPlan(t, c.cat, "orders", schema(fld("id", arrow.PrimitiveTypes.Int64, false, 0)))
	if _, _, err := c.cat.ImportTable(ctx, recs); !errors.Is(err, catalog.ErrConflict) {
		t.Fatalf("import over another table of the name: %v", err)
	}
	if tc := mustTable(t, c.cat, "orders"); len(tc.Objects) != 0 {
		t.Fatalf("a refused import added %d objects", len(tc.Objects))
	}

	// Malformed: no header, an object first, out of order, a byte changed.
	bad := [][]catalog.Record{
		nil,
		recs[1:],
		{recs[0], recs[2], recs[1]},
		{recs[0], recs[1], recs[1]},
		{recs[0], {recs[1].Key, append(bytes.Clone(recs[1].Value), 0)}},
		{recs[0], {recs[2].Key, recs[1].Value}},
	}
	for i, rs := range bad {
		d := newEnv(t)
		if _, _, err := d.cat.ImportTable(ctx, rs); !errors.Is(err, catalog.ErrRecord) {
			t.Fatalf("malformed %d: %v, want ErrRecord", i, err)
		}
		if ts, err := d.cat.Tables(ctx); err != nil || len(ts) != 0 {
			t.Fatalf("malformed %d left %d tables (%v)", i, len(ts), err)
		}
	}
}
