package catalog_test

import (
	"context"
	"errors"
	"maps"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/sovm/sop-pme/catalog"
	"github.com/sovm/sop-pme/keyring"
)

func TestCreatePlanAppendList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	in := schema(
		fld("id", arrow.PrimitiveTypes.Int64, false, 0),
		fld("name", arrow.BinaryTypes.String, true, 0),
		fld("addr", arrow.StructOf(fld("city", arrow.BinaryTypes.String, true, 0), fld("zip", arrow.PrimitiveTypes.Int32, true, 0)), true, 0),
		fld("tags", arrow.ListOf(arrow.BinaryTypes.String), true, 0),
	)
	p := mustPlan(t, e.cat, "people", in)
	if p.Table != "people" || p.Version != 1 {
		t.Fatalf("plan %+v", p)
	}
	// Iceberg order: the top level first, then each struct's children.
	want := map[string]int{"id": 1, "name": 2, "addr": 3, "tags": 4, "addr.city": 5, "addr.zip": 6, "tags.item": 7}
	if got := ids(t, p.Schema); !maps.Equal(got, want) {
		t.Fatalf("fresh IDs %v, want %v", got, want)
	}
	if err := e.cat.Append(ctx, p, obj("a", 10), obj("b", 20)); err != nil {
		t.Fatal(err)
	}
	if err := e.cat.Append(ctx, p, obj("c", 30)); err != nil {
		t.Fatal(err)
	}
	// A second table keeps the IDs its input carries.
	in2 := schema(fld("x", arrow.PrimitiveTypes.Int32, true, 10), fld("y", arrow.PrimitiveTypes.Int32, true, 4))
	p2 := mustPlan(t, e.cat, "another", in2)
	if got := ids(t, p2.Schema); got["x"] != 10 || got["y"] != 4 {
		t.Fatalf("kept IDs: %v", got)
	}
	if err := e.cat.Append(ctx, p2, obj("d", 1)); err != nil {
		t.Fatal(err)
	}

	// Through another ring on the same file.
	r2, err := keyring.Open(ctx, e.path, e.kek, keyring.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	c2 := catalog.New(r2)
	ts, err := c2.Tables(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 2 || ts[0].Name != "another" || ts[1].Name != "people" {
		t.Fatalf("tables %v", ts)
	}
	people := ts[1]
	if people.HighWater != 7 || len(people.Versions) != 1 || people.Current().ID != 1 {
		t.Fatalf("people: high water %d, %d versions", people.HighWater, len(people.Versions))
	}
	if ts[0].HighWater != 10 {
		t.Fatalf("another: high water %d", ts[0].HighWater)
	}
	if len(people.Objects) != 3 {
		t.Fatalf("%d objects", len(people.Objects))
	}
	for i, name := range []string{"a", "b", "c"} {
		o := people.Objects[i]
		w := obj(name, int64(10*(i+1)))
		if o.ID != w.ID || o.Rows != w.Rows || o.UnpaddedSize != w.UnpaddedSize || o.Size != w.Size || o.Version != 1 || o.Appended.IsZero() {
			t.Fatalf("object %d: %+v, want %+v", i, o, w)
		}
	}
	if got := ids(t, people.Current().Schema); !maps.Equal(got, want) {
		t.Fatalf("stored schema IDs %v", got)
	}
	if ty := people.Current().Schema.Field(2).Type.(*arrow.StructType).Field(1).Type; ty.ID() != arrow.INT32 {
		t.Fatal("struct child type lost")
	}
	if name, ok, err := c2.Owner(ctx, obj("d", 1).ID); err != nil || !ok || name != "another" {
		t.Fatalf("Owner(d) = %q, %v, %v", name, ok, err)
	}
	if _, ok, err := c2.Owner(ctx, obj("zz", 1).ID); err != nil || ok {
		t.Fatalf("Owner of an unknown object: %v, %v", ok, err)
	}
	if _, err := c2.Table(ctx, "nope"); !errors.Is(err, catalog.ErrNoTable) {
		t.Fatalf("Table(nope): %v", err)
	}
	// The read-only catalog refuses changes.
	if _, err := c2.Plan(ctx, "new", in); !errors.Is(err, keyring.ErrReadOnly) {
		t.Fatalf("read-only Plan: %v", err)
	}
	// An object is in one table only.
	if err := e.cat.Append(ctx, p2, obj("a", 10)); !errors.Is(err, catalog.ErrObject) {
		t.Fatalf("append of another table's object: %v", err)
	}
	// Remove and drop.
	if err := e.cat.RemoveObjects(ctx, "people", obj("b", 0).ID); err != nil {
		t.Fatal(err)
	}
	if err := e.cat.RemoveObjects(ctx, "people", obj("d", 0).ID); !errors.Is(err, catalog.ErrObject) {
		t.Fatalf("removing another table's object: %v", err)
	}
	if tb := mustTable(t, e.cat, "people"); len(tb.Objects) != 2 || tb.Objects[1].ID != obj("c", 0).ID {
		t.Fatalf("after RemoveObjects: %+v", tb.Objects)
	}
	d, err := e.cat.Drop(ctx, "people")
	if err != nil || d.Name != "people" || len(d.Objects) != 2 {
		t.Fatalf("Drop: %+v, %v", d, err)
	}
	if _, err := e.cat.Table(ctx, "people"); !errors.Is(err, catalog.ErrNoTable) {
		t.Fatalf("dropped table: %v", err)
	}
	if _, ok, _ := e.cat.Owner(ctx, obj("a", 0).ID); ok {
		t.Fatal("a dropped table's object still has an owner")
	}
}

// TestAppendVersions: an object records the version of its plan, made
// before or after an evolution; Append refuses objects that do not fit.
func TestAppendVersions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	p1 := mustPlan(t, e.cat, "t", schema(fld("a", arrow.PrimitiveTypes.Int32, true, 0)))
	p2 := mustPlan(t, e.cat, "t", schema(fld("a", arrow.PrimitiveTypes.Int32, true, 0), fld("b", arrow.PrimitiveTypes.Int32, true, 0)), catalog.WithEvolve())
	if p2.Version != 2 {
		t.Fatalf("version %d", p2.Version)
	}
	if err := e.cat.Append(ctx, p2, obj("new", 1)); err != nil {
		t.Fatal(err)
	}
	if err := e.cat.Append(ctx, p1, obj("old", 1)); err != nil {
		t.Fatal(err)
	}
	// Appending an object again keeps its place.
	if err := e.cat.Append(ctx, p2, obj("new", 1)); err != nil {
		t.Fatal(err)
	}
	tb := mustTable(t, e.cat, "t")
	if len(tb.Objects) != 2 || tb.Objects[0].Version != 2 || tb.Objects[1].Version != 1 {
		t.Fatalf("objects %+v", tb.Objects)
	}
	bad := obj("bad", 1)
	bad.Size = bad.UnpaddedSize - 1
	if err := e.cat.Append(ctx, p1, bad); !errors.Is(err, catalog.ErrObject) {
		t.Fatalf("size below the unpadded size: %v", err)
	}
	bad = obj("bad", 1)
	bad.Version = 2
	if err := e.cat.Append(ctx, p1, bad); !errors.Is(err, catalog.ErrObject) {
		t.Fatalf("version not the plan's: %v", err)
	}
	if err := e.cat.Append(ctx, &catalog.Plan{Table: "t", Version: 3}, obj("x", 1)); !errors.Is(err, catalog.ErrSchema) {
		t.Fatalf("a plan of a version the table does not have: %v", err)
	}
	if err := e.cat.Append(ctx, &catalog.Plan{Table: "none", Version: 1}, obj("x", 1)); !errors.Is(err, catalog.ErrNoTable) {
		t.Fatalf("a plan of no table: %v", err)
	}
	if _, err := tb.Version(3); !errors.Is(err, catalog.ErrSchema) {
		t.Fatalf("Version(3): %v", err)
	}
}

// TestMalformedRecords: a catalog record that does not parse is ErrRecord,
// never a panic.
func TestMalformedRecords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	mustPlan(t, e.cat, "t", schema(fld("a", arrow.PrimitiveTypes.Int32, true, 0)))
	put := func(key, value []byte) {
		err := e.ring.Records(catalog.Space).Update(ctx, func(tx *keyring.RecordTx) error { return tx.Put(key, value) })
		if err != nil {
			t.Fatal(err)
		}
	}
	bad := append([]byte{'t'}, make([]byte, 16)...)
	put(bad, []byte{1, 0xff, 0xff, 0xff, 0xff, 0x0f})
	if _, err := e.cat.Tables(ctx); !errors.Is(err, catalog.ErrRecord) {
		t.Fatalf("Tables over a malformed header: %v", err)
	}
	if _, err := e.cat.Table(ctx, "t"); !errors.Is(err, catalog.ErrRecord) {
		t.Fatalf("Table over a malformed header: %v", err)
	}
	err := e.ring.Records(catalog.Space).Update(ctx, func(tx *keyring.RecordTx) error { return tx.Delete(bad) })
	if err != nil {
		t.Fatal(err)
	}
	id := obj("o", 1).ID
	put(append([]byte{'o'}, id[:]...), []byte{1, 2, 3})
	if _, err := e.cat.Table(ctx, "t"); !errors.Is(err, catalog.ErrRecord) {
		t.Fatalf("Table over a malformed object: %v", err)
	}
	if _, _, err := e.cat.Owner(ctx, id); !errors.Is(err, catalog.ErrRecord) {
		t.Fatalf("Owner of a malformed object: %v", err)
	}
}
