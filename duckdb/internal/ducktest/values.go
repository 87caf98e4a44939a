package ducktest

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/duckdb/duckdb-go/v2"
)

// SameValue reports whether DuckDB's value got is exactly want: same Go
// type, same value. Floats compare by their bits (so -0 is not 0), except
// that any NaN equals any NaN; times compare as instants; lists, structs
// and maps element by element (map entries in their order).
func SameValue(want, got any) bool { return same(want, got, true) }

// SameBits is SameValue, except that a NaN equals only a NaN of the same
// bits: for two engines' reads of the same bytes.
func SameBits(want, got any) bool { return same(want, got, false) }

func same(want, got any, anyNaN bool) bool {
	eq := func(a, b any) bool { return same(a, b, anyNaN) }
	switch w := want.(type) {
	case nil:
		return got == nil
	case float32:
		g, ok := got.(float32)
		return ok && (math.Float32bits(w) == math.Float32bits(g) || anyNaN && w != w && g != g)
	case float64:
		g, ok := got.(float64)
		return ok && (math.Float64bits(w) == math.Float64bits(g) || anyNaN && w != w && g != g)
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
		return ok && slices.EqualFunc(w, g, eq)
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for k, wv := range w {
			if gv, ok := g[k]; !ok || !eq(wv, gv) {
				return false
			}
		}
		return true
	case duckdb.OrderedMap: // entries in the order written
		g, ok := got.(duckdb.OrderedMap)
		return ok && slices.EqualFunc(w.Keys(), g.Keys(), eq) && slices.EqualFunc(w.Values(), g.Values(), eq)
	}
	return want == got // integers, bool, string: the dynamic types must match too
}

// Show formats a value with its Go type, for failure messages.
func Show(v any) string {
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
			parts[i] = Show(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return fmt.Sprintf("%T(%v)", v, v)
}

// CompareRows checks got against want row by row, in order, value by value
// with equal (SameValue or SameBits), and reports up to 5 differences per
// column, named by cols (or by number where cols is nil).
func CompareRows(t testing.TB, what string, cols []string, want, got [][]any, equal func(want, got any) bool) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d rows, want %d", what, len(got), len(want))
	}
	for i := range want {
		if len(got[i]) != len(want[i]) {
			t.Fatalf("%s: row %d has %d columns, want %d", what, i, len(got[i]), len(want[i]))
		}
	}
	if len(want) == 0 {
		return
	}
	for c := range want[0] {
		name := fmt.Sprint(c)
		if c < len(cols) {
			name = cols[c]
		}
		bad := 0
		for r := range want {
			if !equal(want[r][c], got[r][c]) {
				if bad++; bad <= 5 {
					t.Errorf("%s: column %s row %d: %s, want %s", what, name, r, Show(got[r][c]), Show(want[r][c]))
				}
			}
		}
		if bad > 5 {
			t.Errorf("%s: column %s: %d rows differ in all", what, name, bad)
		}
	}
}
