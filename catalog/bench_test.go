package catalog_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/sovm/sop-pme/catalog"
)

func benchSchema(n int) *arrow.Schema {
	fs := make([]arrow.Field, n)
	for i := range fs {
		fs[i] = fld(fmt.Sprint("c", i), arrow.PrimitiveTypes.Int64, true, 0)
	}
	return schema(fs...)
}

// BenchmarkAppend measures one Append of one object (a transaction, its
// sync, and the scrub of the replaced header) into a table of 20 columns
// already holding 1k objects.
func BenchmarkAppend(b *testing.B) {
	ctx := context.Background()
	e := newEnv(b)
	p := mustPlan(b, e.cat, "t", benchSchema(20))
	for i := range 10 {
		batch := make([]catalog.Object, 100)
		for j := range batch {
			batch[j] = obj(fmt.Sprint("pre ", i, " ", j), 1)
		}
		if err := e.cat.Append(ctx, p, batch...); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := range b.N {
		if err := e.cat.Append(ctx, p, obj(fmt.Sprint("o ", i), 1)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPlan measures Plan of an input that fits a table of 20 columns
// (a write transaction, no change).
func BenchmarkPlan(b *testing.B) {
	ctx := context.Background()
	e := newEnv(b)
	s := benchSchema(20)
	mustPlan(b, e.cat, "t", s)
	b.ResetTimer()
	for range b.N {
		if _, err := e.cat.Plan(ctx, "t", s); err != nil {
			b.Fatal(err)
		}
	}
}
