package catalog_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/sovm/sop-pme/catalog"
	"github.com/sovm/sop-pme/keyring"
	"github.com/sovm/sop-pme/storageid"
)

// Example: create a table by planning its first import, record the object
// written with the plan's schema, evolve the table, and list it.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "catalog-example")
	defer os.RemoveAll(dir)
	ring, err := keyring.Open(ctx, filepath.Join(dir, "ring"), keyring.NewKEK(), keyring.WithCreate())
	if err != nil {
		panic(err)
	}
	c := catalog.New(ring)

	input := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	}, nil)
	plan, err := c.Plan(ctx, "orders", input)
	if err != nil {
		panic(err)
	}
	// ... write the object with plan.Schema, put its DEK in the ring ...
	obj := catalog.Object{ID: storageid.Sum([]byte("object bytes")), Rows: 2, UnpaddedSize: 1000, Size: 1024}
	if err := c.Append(ctx, plan, obj); err != nil {
		panic(err)
	}
	if _, err := c.Promote(ctx, "orders", "amount", arrow.PrimitiveTypes.Float64); err != nil {
		panic(err)
	}
	if _, err := c.AddColumn(ctx, "orders", "note", arrow.BinaryTypes.String); err != nil {
		panic(err)
	}

	t, err := c.Table(ctx, "orders")
	if err != nil {
		panic(err)
	}
	for _, v := range t.Versions {
		fmt.Printf("version %d: %s\n", v.ID, v.Change)
	}
	for _, f := range t.Current().Schema.Fields() {
		id, _ := f.Metadata.GetValue("PARQUET:field_id")
		fmt.Printf("%s %s id %s\n", f.Name, f.Type, id)
	}
	fmt.Printf("%d object(s), %d rows, high water %d\n", len(t.Objects), t.Objects[0].Rows, t.HighWater)
	// Output:
	// version 1: create
	// version 2: promote amount from float32 to float64
	// version 3: add note (id 3)
	// id int64 id 1
	// amount float64 id 2
	// note utf8 id 3
	// 1 object(s), 2 rows, high water 3
}
