package table_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/sovm/sop-pme/internal/testkit/memstore"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/table"
)

func str(name string, id int) arrow.Field {
	return arrow.Field{Name: name, Type: arrow.BinaryTypes.String, Nullable: true, Metadata: fid(id)}
}

func typed(name string, dt arrow.DataType, id int) arrow.Field {
	return arrow.Field{Name: name, Type: dt, Nullable: true, Metadata: fid(id)}
}

// evolution is a table written as four objects under four schemas: v1 and
// v2 (id int32, x float32, amount decimal(9,2), nm, old, s{a}), v3 (id
// promoted to int64, x to float64, amount to decimal(18,2), nm renamed name,
// old dropped, s.b added, note and tags added), v4 (s's children reordered,
// tags' element kept). It returns the store, the keys, the objects, the
// table's schema (v4) and the rows expected at it.
func evolution(t testing.TB) (*memstore.Store, keys, []storageid.ID, *arrow.Schema, []string) {
	st, k := memstore.New(), keys{}
	v1 := arrow.NewSchema([]arrow.Field{
		typed("id", arrow.PrimitiveTypes.Int32, 1),
		typed("x", arrow.PrimitiveTypes.Float32, 2),
		typed("amount", &arrow.Decimal128Type{Precision: 9, Scale: 2}, 3),
		str("nm", 4),
		str("old", 5),
		typed("s", arrow.StructOf(typed("a", arrow.PrimitiveTypes.Int64, 7)), 6),
	}, nil)
	sV3 := arrow.StructOf(typed("a", arrow.PrimitiveTypes.Int64, 7), str("b", 8))
	tags := arrow.ListOfField(typed("element", arrow.PrimitiveTypes.Int32, 10))
	v3 := arrow.NewSchema([]arrow.Field{
		typed("id", arrow.PrimitiveTypes.Int64, 1),
		typed("x", arrow.PrimitiveTypes.Float64, 2),
		typed("amount", &arrow.Decimal128Type{Precision: 18, Scale: 2}, 3),
		str("name", 4),
		typed("s", sV3, 6),
		str("note", 11),
		typed("tags", tags, 9),
	}, nil)
	sV4 := arrow.StructOf(str("b", 8), typed("a", arrow.PrimitiveTypes.Int64, 7))
	v4 := arrow.NewSchema([]arrow.Field{
		typed("id", arrow.PrimitiveTypes.Int64, 1),
		typed("x", arrow.PrimitiveTypes.Float64, 2),
		typed("amount", &arrow.Decimal128Type{Precision: 18, Scale: 2}, 3),
		str("name", 4),
		typed("s", sV4, 6),
		str("note", 11),
		typed("tags", tags, 9),
	}, nil)
	var ids []storageid.ID
	write := func(s *arrow.Schema, rows string) {
		rec := fromJSON(t, s, rows)
		defer rec.Release()
		ids = append(ids, put(t, st, k, s, []arrow.RecordBatch{rec}).StorageID)
	}
	write(v1, `[{"id":1,"x":1.5,"amount":"10.25","nm":"ann","old":"o1","s":{"a":11}},
		{"id":2,"x":null,"amount":null,"nm":null,"old":"o2","s":null}]`)
	write(v1, `[{"id":3,"x":-2.25,"amount":"-9999999.99","nm":"bob","old":null,"s":{"a":null}}]`)
	write(v3, `[{"id":4000000000,"x":0.1,"amount":"9999999999999999.99","name":"cy","s":{"a":44,"b":"bee"},"note":"n4","tags":[1,2]},
		{"id":5,"x":null,"amount":"0.01","name":"dee","s":{"a":null,"b":null},"note":null,"tags":null}]`)
	write(v4, `[{"id":6,"x":6.5,"amount":"6.00","name":"eve","s":{"b":"b6","a":66},"note":"n6","tags":[]}]`)
	want := []string{
		`{"amount":"10.25","id":1,"name":"ann","note":null,"s":{"a":11,"b":null},"tags":null,"x":1.5}`,
		`{"amount":null,"id":2,"name":null,"note":null,"s":null,"tags":null,"x":null}`,
		`{"amount":"-9999999.99","id":3,"name":"bob","note":null,"s":{"a":null,"b":null},"tags":null,"x":-2.25}`,
		`{"amount":"9999999999999999.99","id":4000000000,"name":"cy","note":"n4","s":{"a":44,"b":"bee"},"tags":[1,2],"x":0.1}`,
		`{"amount":"0.01","id":5,"name":"dee","note":null,"s":{"a":null,"b":null},"tags":null,"x":null}`,
		`{"amount":"6","id":6,"name":"eve","note":"n6","s":{"a":66,"b":"b6"},"tags":[],"x":6.5}`,
	}
	return st, k, ids, v4, want
}

func scanAll(t *testing.T, st *memstore.Store, k keys, schema *arrow.Schema, ids []storageid.ID, opts ...table.Option) ([]string, *arrow.Schema, error) {
	t.Helper()
	rr, err := table.Scan(context.Background(), st, k, schema, ids, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Release()
	rows, err := jsonRows(t, rr)
	return rows, rr.Schema(), err
}

func TestEvolution(t *testing.T) {
	t.Parallel()
	st, k, ids, schema, want := evolution(t)
	for _, tc := range []struct {
		name string
		opts []table.Option
	}{
		{"default", nil},
		{"sequential", []table.Option{table.WithPrefetch(0), table.WithScanOptions(reader.WithParallelism(1))}},
		{"narrow decimals", []table.Option{table.WithScanOptions(reader.WithNarrowDecimals())}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			rows, got, err := scanAll(t, st, k, schema, ids, append(tc.opts, table.WithAllocator(mem))...)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Equal(schema) {
				t.Fatalf("schema %v, want %v", got, schema)
			}
			if !slices.Equal(rows, want) {
				t.Fatalf("rows:\n%s\nwant:\n%s", join(rows), join(want))
			}
		})
	}
}

func join(rows []string) string {
	s := ""
	for _, r := range rows {
		s += r + "\n"
	}
	return s
}

// TestSwappedNames: object 2 holds a and b under each other's names, with
// their field IDs kept; the scan reads by ID.
func TestSwappedNames(t *testing.T) {
	t.Parallel()
	st, k := memstore.New(), keys{}
	s1 := arrow.NewSchema([]arrow.Field{typed("a", arrow.PrimitiveTypes.Int64, 1), str("b", 2)}, nil)
	s2 := arrow.NewSchema([]arrow.Field{str("a", 2), typed("b", arrow.PrimitiveTypes.Int64, 1)}, nil)
	r1 := fromJSON(t, s1, `[{"a":1,"b":"one"}]`)
	defer r1.Release()
	r2 := fromJSON(t, s2, `[{"a":"two","b":2}]`)
	defer r2.Release()
	ids := []storageid.ID{
		put(t, st, k, s1, []arrow.RecordBatch{r1}).StorageID,
		put(t, st, k, s2, []arrow.RecordBatch{r2}).StorageID,
	}
	rows, _, err := scanAll(t, st, k, s1, ids)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`{"a":1,"b":"one"}`, `{"a":2,"b":"two"}`}
	if !slices.Equal(rows, want) {
		t.Fatalf("rows %q, want %q", rows, want)
	}
	// By name, a resolves in the table's schema to ID 1, whatever the
	// objects call it.
	fields, err := table.Resolve(s1, "a")
	if err != nil || !slices.Equal(fields, []int32{1}) {
		t.Fatalf("Resolve(a) = %v, %v", fields, err)
	}
	rows, _, err = scanAll(t, st, k, s1, ids, table.WithFields(fields...))
	if want := []string{`{"a":1}`, `{"a":2}`}; err != nil || !slices.Equal(rows, want) {
		t.Fatalf("rows %q, %v, want %q", rows, err, want)
	}
}

func TestProjection(t *testing.T) {
	t.Parallel()
	st, k, ids, schema, _ := evolution(t)
	for _, tc := range []struct {
		columns []string
		want    []string
	}{
		{[]string{"name"}, []string{`{"name":"ann"}`, `{"name":null}`, `{"name":"bob"}`, `{"name":"cy"}`, `{"name":"dee"}`, `{"name":"eve"}`}},
		// A nested field brings its top-level column.
		{[]string{"s.b", "4"}, []string{
			`{"name":"ann","s":{"a":11,"b":null}}`, `{"name":null,"s":null}`, `{"name":"bob","s":{"a":null,"b":null}}`,
			`{"name":"cy","s":{"a":44,"b":"bee"}}`, `{"name":"dee","s":{"a":null,"b":null}}`, `{"name":"eve","s":{"a":66,"b":"b6"}}`}},
		// A column only the later objects have: the earlier ones still
		// count their rows, from a column they hold.
		{[]string{"note"}, []string{`{"note":null}`, `{"note":null}`, `{"note":null}`, `{"note":"n4"}`, `{"note":null}`, `{"note":"n6"}`}},
		{[]string{"tags.element"}, []string{`{"tags":null}`, `{"tags":null}`, `{"tags":null}`, `{"tags":[1,2]}`, `{"tags":null}`, `{"tags":[]}`}},
	} {
		fields, err := table.Resolve(schema, tc.columns...)
		if err != nil {
			t.Fatal(err)
		}
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		rows, _, err := scanAll(t, st, k, schema, ids, table.WithFields(fields...), table.WithAllocator(mem))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(rows, tc.want) {
			t.Errorf("%q: rows\n%s\nwant\n%s", tc.columns, join(rows), join(tc.want))
		}
		mem.AssertSize(t, 0)
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	_, _, _, schema, _ := evolution(t)
	got, err := table.Resolve(schema, "id", "s.a", "s.b", "tags", "tags.element", "11", "2")
	if err != nil || !slices.Equal(got, []int32{1, 7, 8, 9, 10, 11, 2}) {
		t.Fatalf("Resolve = %v, %v", got, err)
	}
	for _, bad := range []string{"old", "nm", "5", "s.c", "", "99"} {
		_, err := table.Resolve(schema, bad)
		var ce *table.ColumnError
		if !errors.Is(err, table.ErrColumn) || !errors.As(err, &ce) || ce.Column != bad {
			t.Errorf("Resolve(%q) = %v, want a *ColumnError matching ErrColumn", bad, err)
		}
	}
	if _, err := table.Scan(context.Background(), nil, nil, schema, nil, table.WithFields(5)); !errors.Is(err, table.ErrColumn) {
		t.Errorf("Scan WithFields(a dropped column) = %v", err)
	}
}

// TestSchemaMismatch: a column an object holds at a type the table's is not
// a promotion of fails the scan, naming the object and the column.
func TestSchemaMismatch(t *testing.T) {
	t.Parallel()
	st, k := memstore.New(), keys{}
	s1 := arrow.NewSchema([]arrow.Field{typed("a", arrow.PrimitiveTypes.Int64, 1), str("b", 2)}, nil)
	r1 := fromJSON(t, s1, `[{"a":1,"b":"one"}]`)
	defer r1.Release()
	id := put(t, st, k, s1, []arrow.RecordBatch{r1}).StorageID
	for _, target := range []*arrow.Schema{
		arrow.NewSchema([]arrow.Field{typed("a", arrow.PrimitiveTypes.Int32, 1)}, nil),   // narrowing
		arrow.NewSchema([]arrow.Field{typed("a", arrow.BinaryTypes.String, 1)}, nil),     // another type
		arrow.NewSchema([]arrow.Field{typed("b", arrow.PrimitiveTypes.Float64, 2)}, nil), // another type
		// A required column the object lacks.
		arrow.NewSchema([]arrow.Field{{Name: "c", Type: arrow.PrimitiveTypes.Int64, Metadata: fid(3)}}, nil),
		// A required struct child the object lacks.
		arrow.NewSchema([]arrow.Field{typed("a", arrow.StructOf(arrow.Field{Name: "z", Type: arrow.PrimitiveTypes.Int64, Metadata: fid(9)}), 1)}, nil),
		// A list where the object has an int64.
		arrow.NewSchema([]arrow.Field{typed("a", arrow.ListOfField(typed("element", arrow.PrimitiveTypes.Int64, 9)), 1)}, nil),
	} {
		rows, _, err := scanAll(t, st, k, target, []storageid.ID{id, id})
		var oe *table.ObjectError
		var ce *table.ColumnError
		if !errors.Is(err, table.ErrSchema) || !errors.As(err, &oe) || oe.Index != 0 || oe.ID != id || !errors.As(err, &ce) || ce.Column != target.Field(0).Name || len(rows) != 0 {
			t.Errorf("%v: %d rows, err %v", target, len(rows), err)
		}
	}
}

// TestAdapter adapts records directly: sliced arrays (offsets and nulls),
// promotions of every kind, nulls for what is missing, and no leak.
func TestAdapter(t *testing.T) {
	t.Parallel()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	source := arrow.NewSchema([]arrow.Field{
		typed("i8", arrow.PrimitiveTypes.Int8, 1),
		typed("u16", arrow.PrimitiveTypes.Uint16, 2),
		typed("f", arrow.PrimitiveTypes.Float32, 3),
		typed("d32", &arrow.Decimal32Type{Precision: 9, Scale: 2}, 4),
		typed("d64", &arrow.Decimal64Type{Precision: 18, Scale: 3}, 5),
		typed("d128", &arrow.Decimal128Type{Precision: 20, Scale: 1}, 6),
		typed("s", arrow.StructOf(typed("x", arrow.PrimitiveTypes.Int32, 8)), 7),
		typed("l", arrow.ListOfField(typed("element", arrow.PrimitiveTypes.Int16, 10)), 9),
		typed("m", arrow.MapOfFields(arrow.Field{Name: "key", Type: arrow.BinaryTypes.String, Metadata: fid(12)}, typed("value", arrow.PrimitiveTypes.Float32, 13)), 11),
		str("same", 14),
	}, nil)
	target := arrow.NewSchema([]arrow.Field{
		str("same2", 14),
		typed("i8", arrow.PrimitiveTypes.Int64, 1),
		typed("u16", arrow.PrimitiveTypes.Int32, 2),
		typed("f", arrow.PrimitiveTypes.Float64, 3),
		typed("d32", &arrow.Decimal128Type{Precision: 12, Scale: 2}, 4),
		typed("d64", &arrow.Decimal256Type{Precision: 40, Scale: 3}, 5),
		typed("d128", &arrow.Decimal128Type{Precision: 38, Scale: 1}, 6),
		typed("s", arrow.StructOf(typed("y", arrow.PrimitiveTypes.Int64, 8), str("new", 15)), 7),
		typed("l", arrow.ListOfField(typed("element", arrow.PrimitiveTypes.Int64, 10)), 9),
		typed("m", arrow.MapOfFields(arrow.Field{Name: "key", Type: arrow.BinaryTypes.String, Metadata: fid(12)}, typed("value", arrow.PrimitiveTypes.Float64, 13)), 11),
		typed("added", arrow.PrimitiveTypes.Int16, 16),
	}, nil)
	rec, _, err := array.RecordFromJSON(mem, source, stringsReader(`[
		{"i8":-1,"u16":65535,"f":0.5,"d32":"1.23","d64":"-4.567","d128":"12345678901234567.8","s":{"x":1},"l":[1,-2],"m":[{"key":"k","value":1.5}],"same":"a"},
		{"i8":null,"u16":null,"f":null,"d32":null,"d64":null,"d128":null,"s":null,"l":null,"m":null,"same":null},
		{"i8":127,"u16":7,"f":-3.25,"d32":"-0.01","d64":"0","d128":"-1","s":{"x":null},"l":[null],"m":[],"same":"c"},
		{"i8":-128,"u16":0,"f":1e30,"d32":"9999999.99","d64":"1.000","d128":"0.1","s":{"x":-7},"l":[],"m":[{"key":"q","value":null}],"same":"d"}]`))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	ad, err := table.NewAdapter(target, source, table.WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	if got := ad.Fields(); !slices.Equal(got, []int32{14, 1, 2, 3, 4, 5, 6, 7, 9, 11}) {
		t.Errorf("Fields = %v", got)
	}
	want := []string{
		`{"added":null,"d128":"12345678901234567.8","d32":"1.23","d64":"-4.567","f":0.5,"i8":-1,"l":[1,-2],"m":[{"key":"k","value":1.5}],"s":{"new":null,"y":1},"same2":"a","u16":65535}`,
		`{"added":null,"d128":null,"d32":null,"d64":null,"f":null,"i8":null,"l":null,"m":null,"s":null,"same2":null,"u16":null}`,
		`{"added":null,"d128":"-1","d32":"-0.01","d64":"0","f":-3.25,"i8":127,"l":[null],"m":[],"s":{"new":null,"y":null},"same2":"c","u16":7}`,
		`{"added":null,"d128":"0.1","d32":"9999999.99","d64":"1","f":1.0000000150474662e+30,"i8":-128,"l":[],"m":[{"key":"q","value":null}],"s":{"new":null,"y":-7},"same2":"d","u16":0}`,
	}
	for _, sl := range [][2]int64{{0, 4}, {1, 4}, {2, 3}, {3, 4}} {
		part := rec.NewSlice(sl[0], sl[1])
		out, err := ad.Adapt(part)
		part.Release()
		if err != nil {
			t.Fatal(err)
		}
		if !out.Schema().Equal(target) {
			t.Fatalf("schema %v", out.Schema())
		}
		if err := array.ValidateRecordFull(out); err != nil {
			t.Fatalf("slice %v: %v", sl, err)
		}
		if got := recordRows(t, out); !slices.Equal(got, want[sl[0]:sl[1]]) {
			t.Errorf("slice %v:\n%s\nwant\n%s", sl, join(got), join(want[sl[0]:sl[1]]))
		}
		// The identical column is the record's own array.
		if out.Column(0).Data().Buffers()[2] != rec.Column(9).Data().Buffers()[2] {
			t.Error("the identical column was copied")
		}
		out.Release()
	}
}
