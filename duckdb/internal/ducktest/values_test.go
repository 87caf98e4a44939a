package ducktest

import (
	"math"
	"math/big"
	"testing"
	"time"

	"github.com/duckdb/duckdb-go/v2"
)

// TestSameValue checks that the comparison the suites rely on tells apart
// what it must: types, -0 and 0, list order, map order, nulls; and that
// SameBits, unlike SameValue, tells NaNs of other bits apart.
func TestSameValue(t *testing.T) {
	t.Parallel()
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
		if got := SameValue(c.want, c.got); got != c.same {
			t.Errorf("case %d: SameValue(%s, %s) = %v, want %v", i, Show(c.want), Show(c.got), got, c.same)
		}
	}
	for _, c := range []struct {
		want, got any
		same      bool
	}{
		{nan, nan, true},
		{nan, -nan, false},
		{[]any{float32(nan)}, []any{float32(-nan)}, false},
		{0.0, math.Copysign(0, -1), false},
		{1.5, 1.5, true},
	} {
		if got := SameBits(c.want, c.got); got != c.same {
			t.Errorf("SameBits(%s, %s) = %v, want %v", Show(c.want), Show(c.got), got, c.same)
		}
	}
}
