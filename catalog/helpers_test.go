package catalog_test

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/sovm/sop-pme/catalog"
	"github.com/sovm/sop-pme/keyring"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/writer"
)

type env struct {
	path string
	kek  keyring.KEK
	ring *keyring.Ring
	cat  *catalog.Catalog
}

func newEnv(t testing.TB) *env {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ring")
	kek := keyring.NewKEK()
	r, err := keyring.Open(context.Background(), path, kek, keyring.WithCreate())
	if err != nil {
		t.Fatal(err)
	}
	return &env{path: path, kek: kek, ring: r, cat: catalog.New(r)}
}

// fld makes a field, with an ID if id > 0.
func fld(name string, typ arrow.DataType, nullable bool, id int) arrow.Field {
	f := arrow.Field{Name: name, Type: typ, Nullable: nullable}
	if id > 0 {
		f.Metadata = arrow.NewMetadata([]string{writer.FieldIDKey}, []string{strconv.Itoa(id)})
	}
	return f
}

func schema(fs ...arrow.Field) *arrow.Schema { return arrow.NewSchema(fs, nil) }

// ids returns the dotted paths of a schema's fields with their IDs.
func ids(t testing.TB, s *arrow.Schema) map[string]int {
	t.Helper()
	out := map[string]int{}
	var walk func(fs []arrow.Field, path string)
	walk = func(fs []arrow.Field, path string) {
		for _, f := range fs {
			p := f.Name
			if path != "" {
				p = path + "." + f.Name
			}
			v, ok := f.Metadata.GetValue(writer.FieldIDKey)
			if !ok {
				t.Fatalf("%s has no field ID", p)
			}
			n, _ := strconv.Atoi(v)
			out[p] = n
			switch ty := f.Type.(type) {
			case *arrow.StructType:
				walk(ty.Fields(), p)
			case *arrow.MapType:
				walk([]arrow.Field{ty.KeyField(), ty.ItemField()}, p)
			case arrow.ListLikeType:
				walk([]arrow.Field{ty.ElemField()}, p)
			}
		}
	}
	walk(s.Fields(), "")
	return out
}

func obj(name string, rows int64) catalog.Object {
	return catalog.Object{ID: storageid.Sum([]byte(name)), Rows: rows, UnpaddedSize: rows * 10, Size: rows*10 + 7}
}

func mustPlan(t testing.TB, c *catalog.Catalog, table string, s *arrow.Schema, opts ...catalog.PlanOption) *catalog.Plan {
	t.Helper()
	p, err := c.Plan(context.Background(), table, s, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustTable(t testing.TB, c *catalog.Catalog, name string) *catalog.Table {
	t.Helper()
	tb, err := c.Table(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// columnErr checks that err is a *ColumnError about column, matching want.
func columnErr(t testing.TB, err error, column string, want error) {
	t.Helper()
	var ce *catalog.ColumnError
	if !errors.As(err, &ce) || !errors.Is(err, want) {
		t.Fatalf("got %v, want a ColumnError %v about %q", err, want, column)
	}
	if ce.Column != column {
		t.Fatalf("got %v about %q, want %q", err, ce.Column, column)
	}
}
