package catalog_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/sovm/sop-pme/catalog"
	"github.com/sovm/sop-pme/keyring"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/storageid"
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
	deks := []keyring.Entry{{ID: ta.Objects[0].ID, DEK: pme.NewDEK()}, {ID: ta.Objects[1].ID, DEK: pme.NewDEK()}}
	im, err := b.cat.Import(ctx, [][]catalog.Record{recs}, deks)
	if err != nil || len(im.Tables) != 1 || im.Tables[0] != "orders" || im.Objects != 2 || im.DEKs != 2 {
		t.Fatalf("import: %+v %v", im, err)
	}
	if im, err := b.cat.Import(ctx, [][]catalog.Record{recs}, deks); err != nil || im.Objects != 0 || im.DEKs != 0 {
		t.Fatalf("import again: %+v %v", im, err)
	}
	for _, e := range deks {
		if got, err := b.ring.ResolveDEK(ctx, e.ID); err != nil || !got.Equal(e.DEK) {
			t.Fatalf("imported DEK of %s: %v", e.ID, err)
		}
	}
	// A different DEK for an object held: refused whole, nothing changed.
	d3 := keyring.Entry{ID: storageid.Sum([]byte("o3")), DEK: pme.NewDEK()}
	if _, err := b.cat.Import(ctx, nil, []keyring.Entry{d3, {ID: deks[0].ID, DEK: pme.NewDEK()}}); !errors.Is(err, keyring.ErrConflict) {
		t.Fatalf("import of a different DEK: %v", err)
	}
	if has, _ := b.ring.Has(ctx, d3.ID); has[0] {
		t.Fatal("a refused import added a DEK")
	}
	if tt, err := catalog.TableOf(recs); err != nil || tt.Name != "orders" || len(tt.Objects) != 2 {
		t.Fatalf("TableOf: %v", err)
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
	if im, err := b.cat.Import(ctx, [][]catalog.Record{recs2}, []keyring.Entry{d3}); err != nil || im.Objects != 1 || im.DEKs != 1 {
		t.Fatalf("import of the later export: %+v %v", im, err)
	}
	// The older export after the newer one: nothing lost.
	if im, err := b.cat.Import(ctx, [][]catalog.Record{recs}, nil); err != nil || im.Objects != 0 {
		t.Fatalf("import of the older export: %+v %v", im, err)
	}
	tb = mustTable(t, b.cat, "orders")
	if len(tb.Objects) != 3 || len(tb.Versions) != 2 || tb.HighWater != 2 || tb.Objects[2].Version != 2 {
		t.Fatalf("merged table: %d objects, %d versions, high water %d", len(tb.Objects), len(tb.Versions), tb.HighWater)
	}

	// Another table of the same name.
	c := newEnv(t)
	mustPlan(t, c.cat, "orders", schema(fld("id", arrow.PrimitiveTypes.Int64, false, 0)))
	if _, err := c.cat.Import(ctx, [][]catalog.Record{recs}, deks); !errors.Is(err, catalog.ErrConflict) {
		t.Fatalf("import over another table of the name: %v", err)
	}
	if tc := mustTable(t, c.cat, "orders"); len(tc.Objects) != 0 {
		t.Fatalf("a refused import added %d objects", len(tc.Objects))
	}
	if n, _ := c.ring.Len(ctx); n != 0 {
		t.Fatalf("a refused import added %d DEKs", n)
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
		if _, err := catalog.TableOf(rs); !errors.Is(err, catalog.ErrRecord) {
			t.Fatalf("TableOf malformed %d: %v, want ErrRecord", i, err)
		}
		if _, err := d.cat.Import(ctx, [][]catalog.Record{rs}, nil); !errors.Is(err, catalog.ErrRecord) {
			t.Fatalf("malformed %d: %v, want ErrRecord", i, err)
		}
		if ts, err := d.cat.Tables(ctx); err != nil || len(ts) != 0 {
			t.Fatalf("malformed %d left %d tables (%v)", i, len(ts), err)
		}
	}
}
