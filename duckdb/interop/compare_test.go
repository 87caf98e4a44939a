package interop

import (
	"bytes"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/duckdb/duckdb-go/v2"
)

// duckValue returns element i of arr as duckdb-go returns the value DuckDB
// reads from the Parquet column arr was written to: Go integers and floats
// of the same width, string, []byte, bool, duckdb.Decimal, time.Time (UTC),
// []any for lists, map[string]any for structs, duckdb.OrderedMap for maps
// (entries in their written order), and nil
// for null.
//
// One conversion is lossy by DuckDB's design: a Parquet TIMESTAMP(NANOS)
// with isAdjustedToUTC (Arrow timestamp[ns, tz]) is read as TIMESTAMP WITH
// TIME ZONE, whose unit is the microsecond, truncated toward zero
// (notes/duckdb-encrypted-parquet.md).
func duckValue(arr arrow.Array, i int) any {
	if arr.IsNull(i) {
		return nil
	}
	switch a := arr.(type) {
	case *array.Int8:
		return a.Value(i)
	case *array.Int16:
		return a.Value(i)
	case *array.Int32:
		return a.Value(i)
	case *array.Int64:
		return a.Value(i)
	case *array.Uint8:
		return a.Value(i)
	case *array.Uint16:
		return a.Value(i)
	case *array.Uint32:
		return a.Value(i)
	case *array.Uint64:
		return a.Value(i)
	case *array.Float32:
		return a.Value(i)
	case *array.Float64:
		return a.Value(i)
	case *array.Boolean:
		return a.Value(i)
	case *array.String:
		return a.Value(i)
	case *array.Binary:
		return bytes.Clone(a.Value(i))
	case *array.FixedSizeBinary:
		return bytes.Clone(a.Value(i))
	case *array.Decimal128:
		dt := a.DataType().(*arrow.Decimal128Type)
		return duckdb.Decimal{Width: uint8(dt.Precision), Scale: uint8(dt.Scale), Value: a.Value(i).BigInt()}
	case *array.Date32:
		return a.Value(i).ToTime()
	case *array.Timestamp:
		dt := a.DataType().(*arrow.TimestampType)
		v := int64(a.Value(i))
		if dt.Unit == arrow.Nanosecond && dt.TimeZone != "" {
			return time.UnixMicro(v / 1000).UTC() // Go's / truncates toward zero
		}
		return a.Value(i).ToTime(dt.Unit)
	case *array.Map: // before *array.List, which it embeds
		start, end := a.ValueOffsets(i)
		var m duckdb.OrderedMap
		for j := start; j < end; j++ {
			m.Set(duckValue(a.Keys(), int(j)), duckValue(a.Items(), int(j)))
		}
		return m
	case *array.List:
		start, end := a.ValueOffsets(i)
		out := make([]any, 0, end-start)
		for j := start; j < end; j++ {
			out = append(out, duckValue(a.ListValues(), int(j)))
		}
		return out
	case *array.Struct:
		m := map[string]any{}
		for k, f := range a.DataType().(*arrow.StructType).Fields() {
			m[f.Name] = duckValue(a.Field(k), i)
		}
		return m
	}
	panic("interop: no DuckDB value for " + arr.DataType().String())
}

// sameValue reports whether DuckDB's value got is exactly want: same Go
// type, same value. Floats compare by their bits (so -0 is not 0), except
// that any NaN equals any NaN; times compare as instants.
func sameValue(want, got any) bool {
	switch w := want.(type) {
	case nil:
		return got == nil
	case float32:
		g, ok := got.(float32)
		return ok && (math.Float32bits(w) == math.Float32bits(g) || w != w && g != g)
	case float64:
		g, ok := got.(float64)
		return ok && (math.Float64bits(w) == math.Float64bits(g) || w != w && g != g)
	case []byte:
		g, ok := got.([]byte)
		return ok && bytes.Equal(w, g)
	case time.Time:
		g, ok := got.(time.Time)
		return ok && w.Equal(g)
	case duckdb.Decimal:
		g, ok := got.(duckdb.Decimal)
		return ok && w.Width == g.Width && w.Scale == g.Scale && g.Value != nil && w.Value.Cmp(g.Value) == 0
	case []any:
		g, ok := got.([]any)
		return ok && slices.EqualFunc(w, g, sameValue)
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for k, wv := range w {
			if gv, ok := g[k]; !ok || !sameValue(wv, gv) {
				return false
			}
		}
		return true
	case duckdb.OrderedMap: // entries in the order written
		g, ok := got.(duckdb.OrderedMap)
		return ok && slices.EqualFunc(w.Keys(), g.Keys(), sameValue) && slices.EqualFunc(w.Values(), g.Values(), sameValue)
	}
	return want == got // integers, bool, string: the dynamic types must match too
}

// show formats a value with its Go type, for failure messages.
func show(v any) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case time.Time:
		return "time.Time(" + v.Format(time.RFC3339Nano) + ")"
	case duckdb.Decimal:
		return fmt.Sprintf("duckdb.Decimal(%d,%d)(%v)", v.Width, v.Scale, v.Value)
	case string:
		return fmt.Sprintf("string(%q)", v)
	case []byte:
		return fmt.Sprintf("[]byte(%x)", v)
	case float32:
		return fmt.Sprintf("float32(%v, bits %#08x)", v, math.Float32bits(v))
	case float64:
		return fmt.Sprintf("float64(%v, bits %#016x)", v, math.Float64bits(v))
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = show(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return fmt.Sprintf("%T(%v)", v, v)
}

// compareRows checks DuckDB's rows against rec value by value, one subtest
// per column, and reports up to 5 mismatches per column with the column,
// the row, the value written and the value read.
func compareRows(t *testing.T, rec arrow.RecordBatch, got [][]any) {
	t.Helper()
	if int64(len(got)) != rec.NumRows() {
		t.Fatalf("DuckDB returned %d rows, wrote %d", len(got), rec.NumRows())
	}
	for c, f := range rec.Schema().Fields() {
		t.Run(f.Name, func(t *testing.T) {
			col := rec.Column(c)
			bad := 0
			for row := range got {
				want, g := duckValue(col, row), got[row][c]
				if sameValue(want, g) {
					continue
				}
				if bad++; bad <= 5 {
					t.Errorf("column %s row %d: want %s, got %s", f.Name, row, show(want), show(g))
				}
			}
			if bad > 5 {
				t.Errorf("column %s: %d rows differ in all", f.Name, bad)
			}
		})
	}
}

// TestSameValue checks that the comparison the suite relies on tells apart
// what it must: types, -0 and 0, list order, map order, nulls.
func TestSameValue(t *testing.T) {
	var m1, m2 duckdb.OrderedMap
	m1.Set("a", int64(1))
	m1.Set("b", nil)
	m2.Set("b", nil)
	m2.Set("a", int64(1))
	nan := math.NaN()
	cases := []struct {
		want, got any
		same      bool
	}{
		{int64(1), int64(1), true},
		{int64(1), int32(1), false},
		{uint64(1 << 63), uint64(1 << 63), true},
		{nil, nil, true},
		{nil, int64(0), false},
		{int64(0), nil, false},
		{nan, -nan, true},
		{0.0, math.Copysign(0, -1), false},
		{float32(1), 1.0, false},
		{"", []byte{}, false},
		{[]byte{}, []byte(nil), true},
		{time.Unix(1, 0).UTC(), time.Unix(1, 0).In(time.FixedZone("x", 3600)), true},
		{time.Unix(1, 0), time.Unix(1, 1), false},
		{duckdb.Decimal{Width: 18, Scale: 4, Value: big.NewInt(5)}, duckdb.Decimal{Width: 18, Scale: 4, Value: big.NewInt(5)}, true},
		{duckdb.Decimal{Width: 18, Scale: 4, Value: big.NewInt(5)}, duckdb.Decimal{Width: 18, Scale: 3, Value: big.NewInt(5)}, false},
		{[]any{int64(1), nil}, []any{int64(1), nil}, true},
		{[]any{int64(1), nil}, []any{nil, int64(1)}, false},
		{[]any{}, []any{nil}, false},
		{map[string]any{"a": nil}, map[string]any{}, false},
		{map[string]any{"a": "x"}, map[string]any{"a": "x"}, true},
		{m1, m1, true},
		{m1, m2, false},
	}
	for i, c := range cases {
		if got := sameValue(c.want, c.got); got != c.same {
			t.Errorf("case %d: sameValue(%s, %s) = %v, want %v", i, show(c.want), show(c.got), got, c.same)
		}
	}
}
