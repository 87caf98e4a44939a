package sopsql

import (
	"fmt"
	"math"
	"math/big"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/duckdb/duckdb-go/v2"
)

// This file holds the conversions newConv builds for decimals, timestamps,
// lists, structs and maps (see types.go).

func decimalConv(dt *arrow.Decimal128Type) (conv, error) {
	if dt.Precision < 1 || dt.Precision > 38 || dt.Scale < 0 || dt.Scale > dt.Precision {
		return conv{}, fmt.Errorf("%w: %s", ErrType, dt)
	}
	info, err := duckdb.NewDecimalInfo(uint8(dt.Precision), uint8(dt.Scale))
	if err != nil {
		return conv{}, fmt.Errorf("%w: %s: %v", ErrType, dt, err)
	}
	// DuckDB keeps DECIMAL(p, s) in an integer of 16, 32 or 64 bits up to
	// p = 18, which duckdb-go writes from an int64, and in a HUGEINT above,
	// which it writes from a *big.Int.
	// A value with more digits than the precision (which only a crafted
	// object holds) is refused, never wrapped.
	p := dt.Precision
	if p > 18 {
		limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(p)), nil)
		return primInfo[*array.Decimal128](info, func(v decimal128.Num) (*big.Int, error) {
			b := v.BigInt()
			if b.CmpAbs(limit) >= 0 {
				return nil, fmt.Errorf("%w: %s has more than %d digits", ErrData, b, p)
			}
			return b, nil
		}), nil
	}
	return primInfo[*array.Decimal128](info, narrow128[int64](p)), nil
}

// narrowDecimalConv converts the decimal32 and decimal64 arrays of a scan
// WithNarrowDecimals (DECIMAL(p, s) up to 18 digits, which duckdb-go writes
// from an int64), refusing a value of more digits than the precision.
func narrowDecimalConv[A valueArray[V], V decimal.Decimal32 | decimal.Decimal64](p, s int32) (conv, error) {
	if p < 1 || p > 18 || s < 0 || s > p {
		return conv{}, fmt.Errorf("%w: decimal(%d, %d)", ErrType, p, s)
	}
	info, err := duckdb.NewDecimalInfo(uint8(p), uint8(s))
	if err != nil {
		return conv{}, fmt.Errorf("%w: decimal(%d, %d): %v", ErrType, p, s, err)
	}
	check := narrowInt[int64](p)
	return primInfo[A](info, func(v V) (int64, error) { return check(int64(v)) }), nil
}

// decimalToFloat returns the float64 nearest unscaled × 10^-scale.
func decimalToFloat(unscaled *big.Int, scale int32) float64 {
	r := new(big.Rat).SetInt(unscaled)
	if scale != 0 {
		p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(max(scale, -scale))), nil)
		if scale > 0 {
			r.Quo(r, new(big.Rat).SetInt(p))
		} else {
			r.Mul(r, new(big.Rat).SetInt(p))
		}
	}
	f, _ := r.Float64()
	return f
}

func timestampConv(dt *arrow.TimestampType) conv {
	if dt.TimeZone == "" && dt.Unit == arrow.Nanosecond {
		return prim[*array.Timestamp](duckdb.TYPE_TIMESTAMP_NS, func(v arrow.Timestamp) (time.Time, error) {
			return time.Unix(0, int64(v)).UTC(), nil
		})
	}
	t := duckdb.TYPE_TIMESTAMP
	if dt.TimeZone != "" {
		t = duckdb.TYPE_TIMESTAMP_TZ
	}
	unit := dt.Unit
	return prim[*array.Timestamp](t, func(v arrow.Timestamp) (time.Time, error) {
		us, err := micros(int64(v), unit)
		return time.UnixMicro(us).UTC(), err
	})
}

// micros converts v in unit to microseconds, nanoseconds truncated toward
// zero as DuckDB truncates them.
func micros(v int64, unit arrow.TimeUnit) (int64, error) {
	var mul int64
	switch unit {
	case arrow.Nanosecond:
		return v / 1000, nil // Go's / truncates toward zero
	case arrow.Microsecond:
		return v, nil
	case arrow.Millisecond:
		mul = 1000
	default:
		mul = 1_000_000
	}
	if v > math.MaxInt64/mul || v < math.MinInt64/mul {
		return 0, fmt.Errorf("%w: timestamp %d %s overflows microseconds", ErrData, v, unit)
	}
	return v * mul, nil
}

// listValue returns the elements of list i as a []any.
func listValue(elem valueFunc) valueFunc {
	return func(arr arrow.Array, i int) (any, error) {
		a, ok := arr.(array.ListLike)
		if !ok {
			return nil, mismatch(arr)
		}
		start, end := a.ValueOffsets(i)
		child := a.ListValues()
		if start < 0 || end < start || end > int64(child.Len()) {
			return nil, fmt.Errorf("%w: list offsets [%d, %d) of %d values", ErrData, start, end, child.Len())
		}
		out := make([]any, end-start)
		for k := start; k < end; k++ {
			if child.IsNull(int(k)) {
				continue
			}
			v, err := elem(child, int(k))
			if err != nil {
				return nil, err
			}
			out[k-start] = v
		}
		return out, nil
	}
}

func structConv(dt *arrow.StructType) (conv, error) {
	n := dt.NumFields()
	if n == 0 {
		return conv{}, fmt.Errorf("%w: empty struct", ErrType)
	}
	names := make([]string, n)
	values := make([]valueFunc, n)
	entries := make([]duckdb.StructEntry, n)
	seen := make(map[string]bool, n)
	for i, f := range dt.Fields() {
		if seen[f.Name] {
			return conv{}, fmt.Errorf("%w: struct with two fields named %q", ErrType, f.Name)
		}
		seen[f.Name] = true
		c, err := newConv(f.Type)
		if err != nil {
			return conv{}, fmt.Errorf("field %q: %w", f.Name, err)
		}
		names[i], values[i] = f.Name, c.value
		if entries[i], err = duckdb.NewStructEntry(c.info, f.Name); err != nil {
			return conv{}, fmt.Errorf("%w: %s: %v", ErrType, dt, err)
		}
	}
	info, err := duckdb.NewStructInfo(entries[0], entries[1:]...)
	if err != nil {
		return conv{}, fmt.Errorf("%w: %s: %v", ErrType, dt, err)
	}
	return nested(info, func(arr arrow.Array, i int) (any, error) {
		a, ok := arr.(*array.Struct)
		if !ok || a.NumField() != n {
			return nil, mismatch(arr)
		}
		m := make(map[string]any, n)
		for f := range n {
			child := a.Field(f)
			var v any
			if !child.IsNull(i) {
				var err error
				if v, err = values[f](child, i); err != nil {
					return nil, err
				}
			}
			m[names[f]] = v
		}
		return m, nil
	}), nil
}

func mapConv(dt *arrow.MapType) (conv, error) {
	switch dt.KeyType().ID() {
	case arrow.BINARY, arrow.LARGE_BINARY, arrow.BINARY_VIEW, arrow.FIXED_SIZE_BINARY,
		arrow.LIST, arrow.LARGE_LIST, arrow.FIXED_SIZE_LIST, arrow.STRUCT, arrow.MAP:
		// duckdb-go writes no MAP with such keys.
		return conv{}, fmt.Errorf("%w: %s (map key type)", ErrType, dt)
	}
	key, err := newConv(dt.KeyType())
	if err != nil {
		return conv{}, err
	}
	item, err := newConv(dt.ItemType())
	if err != nil {
		return conv{}, err
	}
	info, err := duckdb.NewMapInfo(key.info, item.info)
	if err != nil {
		return conv{}, fmt.Errorf("%w: %s: %v", ErrType, dt, err)
	}
	return nested(info, func(arr arrow.Array, i int) (any, error) {
		a, ok := arr.(*array.Map)
		if !ok {
			return nil, mismatch(arr)
		}
		start, end := a.ValueOffsets(i)
		keys, items := a.Keys(), a.Items()
		if start < 0 || end < start || end > int64(keys.Len()) || end > int64(items.Len()) {
			return nil, fmt.Errorf("%w: map offsets [%d, %d)", ErrData, start, end)
		}
		var m duckdb.OrderedMap
		for k := int(start); k < int(end); k++ {
			if keys.IsNull(k) {
				return nil, fmt.Errorf("%w: null map key", ErrData)
			}
			kv, err := key.value(keys, k)
			if err != nil {
				return nil, err
			}
			var iv any
			if !items.IsNull(k) {
				if iv, err = item.value(items, k); err != nil {
					return nil, err
				}
			}
			n := m.Len()
			m.Set(kv, iv)
			if m.Len() == n {
				// OrderedMap keeps the last of equal keys: refuse rather
				// than drop an entry.
				return nil, fmt.Errorf("%w: duplicate map key %v", ErrData, kv)
			}
		}
		return m, nil
	}), nil
}
