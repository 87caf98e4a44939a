package catalog_test

import (
	"context"
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/sovm/sop-pme/catalog"
)

// baseTable creates table t: a int32 (1, required), b string (2), s struct
// {x int64 (4), y float32 (5)} (3).
func baseTable(t *testing.T, c *catalog.Catalog) {
	t.Helper()
	mustPlan(t, c, "t", schema(
		fld("a", arrow.PrimitiveTypes.Int32, false, 0),
		fld("b", arrow.BinaryTypes.String, true, 0),
		fld("s", arrow.StructOf(fld("x", arrow.PrimitiveTypes.Int64, true, 0), fld("y", arrow.PrimitiveTypes.Float32, true, 0)), true, 0),
	))
}

func TestMapByName(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	baseTable(t, e.cat)
	// Another order, a narrower type (int16 into int32), a nullable column
	// missing, no IDs: mapped by name.
	p := mustPlan(t, e.cat, "t", schema(
		fld("s", arrow.StructOf(fld("y", arrow.PrimitiveTypes.Float32, true, 0)), true, 0),
		fld("a", arrow.PrimitiveTypes.Int16, false, 0),
	))
	if p.Version != 1 {
		t.Fatalf("version %d", p.Version)
	}
	got := ids(t, p.Schema)
	if len(got) != 3 || got["s"] != 3 || got["s.y"] != 5 || got["a"] != 1 {
		t.Fatalf("IDs %v", got)
	}
	if p.Schema.Field(0).Name != "s" || p.Schema.Field(1).Type.ID() != arrow.INT16 {
		t.Fatalf("the plan's schema is not the input's: %v", p.Schema)
	}
}

// TestMapByIDSwapped: names a and b swapped, IDs kept: the input maps by
// ID, so each column goes where its ID says, under the input's name.
func TestMapByIDSwapped(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	mustPlan(t, e.cat, "t", schema(
		fld("a", arrow.PrimitiveTypes.Int64, true, 0),
		fld("b", arrow.BinaryTypes.String, true, 0),
	))
	p := mustPlan(t, e.cat, "t", schema(
		fld("a", arrow.BinaryTypes.String, true, 2),
		fld("b", arrow.PrimitiveTypes.Int64, true, 1),
	))
	if got := ids(t, p.Schema); got["a"] != 2 || got["b"] != 1 {
		t.Fatalf("IDs %v", got)
	}
	// By name the same input is a type clash.
	_, err := e.cat.Plan(context.Background(), "t", schema(
		fld("a", arrow.BinaryTypes.String, true, 0),
		fld("b", arrow.PrimitiveTypes.Int64, true, 0),
	))
	columnErr(t, err, "a", catalog.ErrSchema)
}

func TestPlanErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	baseTable(t, e.cat)
	cases := []struct {
		name   string
		in     *arrow.Schema
		column string
	}{
		{"clash", schema(fld("a", arrow.PrimitiveTypes.Int32, false, 0), fld("b", arrow.PrimitiveTypes.Int64, true, 0)), "b"},
		{"nested clash", schema(fld("a", arrow.PrimitiveTypes.Int32, false, 0), fld("s", arrow.StructOf(fld("x", arrow.BinaryTypes.String, true, 0)), true, 0)), "s.x"},
		{"missing required", schema(fld("b", arrow.BinaryTypes.String, true, 0)), "a"},
		{"extra", schema(fld("a", arrow.PrimitiveTypes.Int32, false, 0), fld("c", arrow.PrimitiveTypes.Int32, true, 0)), "c"},
		{"nested extra", schema(fld("a", arrow.PrimitiveTypes.Int32, false, 0), fld("s", arrow.StructOf(fld("z", arrow.BinaryTypes.String, true, 0)), true, 0)), "s.z"},
		{"wider", schema(fld("a", arrow.PrimitiveTypes.Int64, false, 0)), "a"},
		{"nullable into required", schema(fld("a", arrow.PrimitiveTypes.Int32, true, 0)), "a"},
		{"struct for a leaf", schema(fld("a", arrow.StructOf(fld("q", arrow.PrimitiveTypes.Int32, true, 0)), false, 0)), "a"},
	}
	for _, c := range cases {
		_, err := e.cat.Plan(ctx, "t", c.in)
		columnErr(t, err, c.column, catalog.ErrSchema)
	}
	if tb := mustTable(t, e.cat, "t"); len(tb.Versions) != 1 || tb.HighWater != 5 {
		t.Fatalf("a refused plan changed the table: %d versions, high water %d", len(tb.Versions), tb.HighWater)
	}
	if _, err := e.cat.Plan(ctx, "t", schema()); !errors.Is(err, catalog.ErrSchema) {
		t.Fatalf("empty schema: %v", err)
	}
	if _, err := e.cat.Plan(ctx, "t", nil); !errors.Is(err, catalog.ErrSchema) {
		t.Fatalf("nil schema: %v", err)
	}
}

// TestPlanEvolve: WithEvolve adds the extra columns with fresh IDs and
// promotes the widened ones, as one new version, in the plan's
// transaction.
func TestPlanEvolve(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	baseTable(t, e.cat)
	in := schema(
		fld("a", arrow.PrimitiveTypes.Int64, false, 0),
		fld("s", arrow.StructOf(fld("x", arrow.PrimitiveTypes.Int64, true, 0), fld("z", arrow.BinaryTypes.String, false, 0)), true, 0),
		fld("c", arrow.StructOf(fld("p", arrow.PrimitiveTypes.Int8, true, 0)), true, 0),
	)
	p := mustPlan(t, e.cat, "t", in, catalog.WithEvolve())
	if p.Version != 2 {
		t.Fatalf("version %d", p.Version)
	}
	got := ids(t, p.Schema)
	if got["a"] != 1 || got["s"] != 3 || got["s.x"] != 4 || got["s.z"] != 6 || got["c"] != 7 || got["c.p"] != 8 {
		t.Fatalf("IDs %v", got)
	}
	tb := mustTable(t, e.cat, "t")
	cur := tb.Current()
	if tb.HighWater != 8 || cur.ID != 2 || cur.Schema.Field(0).Type.ID() != arrow.INT64 {
		t.Fatalf("high water %d, current %d: %v", tb.HighWater, cur.ID, cur.Schema)
	}
	if z := cur.Schema.Field(2).Type.(*arrow.StructType).Field(2); z.Name != "z" || !z.Nullable {
		t.Fatalf("an added column is nullable in the table: %v", z)
	}
	if v1, _ := tb.Version(1); v1.Schema.Field(0).Type.ID() != arrow.INT32 {
		t.Fatal("version 1 changed")
	}
	// The same input again needs no evolution.
	if p := mustPlan(t, e.cat, "t", in); p.Version != 2 {
		t.Fatalf("version %d", p.Version)
	}
	// A promotion that Iceberg does not allow is not made even with evolve.
	_, err := e.cat.Plan(context.Background(), "t", schema(fld("a", arrow.BinaryTypes.String, false, 0)), catalog.WithEvolve())
	columnErr(t, err, "a", catalog.ErrSchema)
}

func TestEvolution(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	baseTable(t, e.cat)
	v, err := e.cat.AddColumn(ctx, "t", "s.m", arrow.MapOf(arrow.BinaryTypes.String, arrow.StructOf(fld("k", arrow.PrimitiveTypes.Int32, true, 0))))
	if err != nil {
		t.Fatal(err)
	}
	got := ids(t, v.Schema)
	if got["s.m"] != 6 || got["s.m.key"] != 7 || got["s.m.value"] != 8 || got["s.m.value.k"] != 9 {
		t.Fatalf("IDs after AddColumn: %v", got)
	}
	if v, err = e.cat.RenameColumn(ctx, "t", "s.x", "xx"); err != nil {
		t.Fatal(err)
	}
	if got := ids(t, v.Schema); got["s.xx"] != 4 {
		t.Fatalf("rename lost the ID: %v", got)
	}
	if v, err = e.cat.Promote(ctx, "t", "s.y", arrow.PrimitiveTypes.Float64); err != nil {
		t.Fatal(err)
	}
	if v, err = e.cat.Promote(ctx, "t", "a", arrow.PrimitiveTypes.Int64); err != nil {
		t.Fatal(err)
	}
	if v, err = e.cat.DropColumn(ctx, "t", "b"); err != nil {
		t.Fatal(err)
	}
	if v.ID != 6 || v.Change != "drop b" {
		t.Fatalf("version %d %q", v.ID, v.Change)
	}
	tb := mustTable(t, e.cat, "t")
	if len(tb.Versions) != 6 || tb.HighWater != 9 {
		t.Fatalf("%d versions, high water %d", len(tb.Versions), tb.HighWater)
	}
	for i, v := range tb.Versions {
		if v.ID != i+1 || v.Change == "" {
			t.Fatalf("version %d: %+v", i, v)
		}
	}

	dec := func(p, s int32) arrow.DataType { return &arrow.Decimal128Type{Precision: p, Scale: s} }
	if _, err := e.cat.AddColumn(ctx, "t", "d", dec(10, 2)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cat.Promote(ctx, "t", "d", dec(20, 2)); err != nil {
		t.Fatal(err)
	}
	errs := []struct {
		err    error
		column string
	}{
		{func() error { _, err := e.cat.Promote(ctx, "t", "d", dec(30, 3)); return err }(), "d"},
		{func() error { _, err := e.cat.Promote(ctx, "t", "d", dec(10, 2)); return err }(), "d"},
		{func() error { _, err := e.cat.Promote(ctx, "t", "a", arrow.PrimitiveTypes.Int32); return err }(), "a"},
		{func() error { _, err := e.cat.Promote(ctx, "t", "s.xx", arrow.BinaryTypes.String); return err }(), "s.xx"},
		{func() error { _, err := e.cat.Promote(ctx, "t", "s.y", arrow.PrimitiveTypes.Float32); return err }(), "s.y"},
		{func() error { _, err := e.cat.AddColumn(ctx, "t", "s.xx", arrow.PrimitiveTypes.Int8); return err }(), "s.xx"},
		{func() error { _, err := e.cat.AddColumn(ctx, "t", "a.q", arrow.PrimitiveTypes.Int8); return err }(), "a"},
		{func() error { _, err := e.cat.AddColumn(ctx, "t", "nope.q", arrow.PrimitiveTypes.Int8); return err }(), "nope"},
		{func() error {
			_, err := e.cat.AddColumn(ctx, "t", "s.m.value.z", arrow.PrimitiveTypes.Int8)
			return err
		}(), "s.m"},
		{func() error { _, err := e.cat.RenameColumn(ctx, "t", "s.xx", "y"); return err }(), "s.xx"},
		{func() error { _, err := e.cat.RenameColumn(ctx, "t", "nope", "z"); return err }(), "nope"},
		{func() error { _, err := e.cat.RenameColumn(ctx, "t", "a", "p.q"); return err }(), "a"},
		{func() error { _, err := e.cat.DropColumn(ctx, "t", "nope"); return err }(), "nope"},
	}
	for i, c := range errs {
		if c.err == nil {
			t.Fatalf("case %d: no error", i)
		}
		columnErr(t, c.err, c.column, catalog.ErrEvolution)
	}
	if _, err := e.cat.AddColumn(ctx, "nope", "x", arrow.PrimitiveTypes.Int8); !errors.Is(err, catalog.ErrNoTable) {
		t.Fatalf("AddColumn to no table: %v", err)
	}
	if n := len(mustTable(t, e.cat, "t").Versions); n != 8 {
		t.Fatalf("refused changes made versions: %d", n)
	}
}

// TestIDsNeverReused: a column dropped, or renamed away, never lends its
// ID (or a nested one) to a new column of its name (Section 11.2).
func TestIDsNeverReused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	mustPlan(t, e.cat, "t", schema(
		fld("a", arrow.PrimitiveTypes.Int32, true, 0),
		fld("b", arrow.PrimitiveTypes.Int32, true, 0),
		fld("c", arrow.StructOf(fld("n", arrow.PrimitiveTypes.Int32, true, 0)), true, 0),
	)) // a 1, b 2, c 3, c.n 4
	if _, err := e.cat.DropColumn(ctx, "t", "c"); err != nil {
		t.Fatal(err)
	}
	v, err := e.cat.AddColumn(ctx, "t", "c", arrow.StructOf(fld("n", arrow.PrimitiveTypes.Int32, true, 0)))
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(t, v.Schema); got["c"] != 5 || got["c.n"] != 6 {
		t.Fatalf("drop c, add c: %v", got)
	}
	if _, err := e.cat.DropColumn(ctx, "t", "c"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cat.RenameColumn(ctx, "t", "b", "c"); err != nil {
		t.Fatal(err)
	}
	v, err = e.cat.AddColumn(ctx, "t", "b", arrow.PrimitiveTypes.Int32)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(t, v.Schema); got["c"] != 2 || got["b"] != 7 {
		t.Fatalf("rename b to c, add b: %v", got)
	}
	// A plan that adds by evolution also takes IDs above the high water.
	p := mustPlan(t, e.cat, "t", schema(fld("n", arrow.PrimitiveTypes.Int32, true, 0)), catalog.WithEvolve())
	if got := ids(t, p.Schema); got["n"] != 8 {
		t.Fatalf("evolved plan: %v", got)
	}
	// The last column of the table cannot be dropped.
	for _, c := range []string{"a", "c", "b"} {
		e.cat.DropColumn(ctx, "t", c)
	}
	_, err = e.cat.DropColumn(ctx, "t", "n")
	columnErr(t, err, "n", catalog.ErrEvolution)
	if tb := mustTable(t, e.cat, "t"); tb.HighWater != 8 {
		t.Fatalf("high water %d after drops", tb.HighWater)
	}
}

// TestNewTableIDs: an input with some IDs, or repeated ones, is numbered
// fresh; one with valid IDs everywhere keeps them.
func TestNewTableIDs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := mustPlan(t, e.cat, "partial", schema(fld("a", arrow.PrimitiveTypes.Int32, true, 7), fld("b", arrow.PrimitiveTypes.Int32, true, 0)))
	if got := ids(t, p.Schema); got["a"] != 1 || got["b"] != 2 {
		t.Fatalf("partial IDs: %v", got)
	}
	p = mustPlan(t, e.cat, "dup", schema(fld("a", arrow.PrimitiveTypes.Int32, true, 3), fld("b", arrow.PrimitiveTypes.Int32, true, 3)))
	if got := ids(t, p.Schema); got["a"] != 1 || got["b"] != 2 {
		t.Fatalf("repeated IDs: %v", got)
	}
	p = mustPlan(t, e.cat, "kept", schema(fld("a", arrow.ListOf(arrow.PrimitiveTypes.Int32), true, 3), fld("b", arrow.PrimitiveTypes.Int32, true, 9)))
	if got := ids(t, p.Schema); got["a"] != 1 || got["a.item"] != 3 || got["b"] != 2 {
		// the list element has no ID in the input: numbered fresh
		t.Fatalf("list without element ID: %v", got)
	}
	if tb := mustTable(t, e.cat, "kept"); tb.HighWater != 3 {
		t.Fatalf("high water %d", tb.HighWater)
	}
}
