package sopsql

import (
	"errors"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestAdapt covers which object types a table column takes, as they are
// or widened, and the values and nulls of each widening, on an array
// sliced at an odd offset.
func TestAdapt(t *testing.T) {
	t.Parallel()
	p := arrow.PrimitiveTypes
	dec := func(p, s int32) arrow.DataType { return &arrow.Decimal128Type{Precision: p, Scale: s} }
	dict := &arrow.DictionaryType{IndexType: p.Int32, ValueType: arrow.BinaryTypes.String}
	for _, c := range []struct {
		got, want arrow.DataType
		ok, widen bool
	}{
		{p.Int64, p.Int64, true, false},
		{p.Int8, p.Int64, true, true},
		{p.Int16, p.Int32, true, true},
		{p.Int32, p.Int64, true, true},
		{p.Uint8, p.Uint64, true, true},
		{p.Uint16, p.Int32, true, true},
		{p.Uint32, p.Int64, true, true},
		{p.Float32, p.Float64, true, true},
		{p.Int64, p.Int32, false, false},
		{p.Uint32, p.Int32, false, false},
		{p.Int32, p.Uint64, false, false},
		{p.Int32, p.Float64, false, false},
		{p.Float64, p.Float32, false, false},
		{dict, arrow.BinaryTypes.String, true, false},
		{arrow.BinaryTypes.String, dict, true, false},
		{arrow.BinaryTypes.LargeString, arrow.BinaryTypes.String, true, false},
		{arrow.BinaryTypes.String, arrow.BinaryTypes.Binary, false, false},
		{&arrow.Decimal32Type{Precision: 9, Scale: 2}, dec(9, 2), true, false},
		{&arrow.Decimal64Type{Precision: 15, Scale: 2}, dec(15, 2), true, false},
		{&arrow.Decimal32Type{Precision: 9, Scale: 2}, dec(18, 2), true, true},
		{&arrow.Decimal64Type{Precision: 12, Scale: 2}, dec(18, 2), true, true},
		{&arrow.Decimal64Type{Precision: 18, Scale: 2}, dec(30, 2), true, true},
		{dec(10, 2), dec(12, 2), true, true},
		{dec(20, 2), dec(30, 2), true, true},
		{dec(9, 2), dec(18, 3), false, false},
		{dec(18, 2), dec(9, 2), false, false},
		{arrow.FixedWidthTypes.Date32, p.Int32, false, false},
		{arrow.ListOfField(arrow.Field{Name: "element", Type: p.Int64, Nullable: true}), arrow.ListOf(p.Int64), true, false},
		{arrow.ListOf(p.Int32), arrow.ListOf(p.Int64), false, false},
		{arrow.StructOf(arrow.Field{Name: "x", Type: arrow.BinaryTypes.String}), arrow.StructOf(arrow.Field{Name: "x", Type: arrow.BinaryTypes.LargeString, Nullable: true}), true, false},
		{arrow.StructOf(arrow.Field{Name: "x", Type: p.Int64}), arrow.StructOf(arrow.Field{Name: "y", Type: p.Int64}), false, false},
		{arrow.MapOf(arrow.BinaryTypes.String, p.Int64), arrow.MapOf(arrow.BinaryTypes.String, p.Int64), true, false},
		{arrow.MapOf(arrow.BinaryTypes.String, p.Int64), arrow.ListOf(arrow.StructOf(arrow.Field{Name: "key", Type: arrow.BinaryTypes.String}, arrow.Field{Name: "value", Type: p.Int64})), false, false},
	} {
		w, target, ok := adapt(c.got, c.want)
		if ok != c.ok || (w != nil) != c.widen {
			t.Errorf("adapt(%s, %s): ok %v, widens %v; want %v, %v", c.got, c.want, ok, w != nil, c.ok, c.widen)
			continue
		}
		if !ok {
			continue
		}
		if target == nil || bulkWriter(target) == nil {
			t.Errorf("adapt(%s, %s): target %v has no writer", c.got, c.want, target)
		}
		if w == nil {
			continue
		}
		// Values base..base+9, the fourth null, from offset 1.
		base := -3
		if c.got.ID() == arrow.UINT8 || c.got.ID() == arrow.UINT16 || c.got.ID() == arrow.UINT32 {
			base = 0
		}
		arr := build(t, c.got, base)
		defer arr.Release()
		sl := array.NewSlice(arr, 1, int64(arr.Len()))
		defer sl.Release()
		out, err := w(sl)
		if err != nil {
			t.Errorf("widen %s → %s: %v", c.got, target, err)
			continue
		}
		if !arrow.TypeEqual(out.DataType(), target) || out.Len() != sl.Len() || out.NullN() != 1 {
			t.Errorf("widen %s → %s: %s of %d with %d nulls", c.got, target, out.DataType(), out.Len(), out.NullN())
		}
		for i := range out.Len() {
			want := fmt.Sprint(base + 1 + i)
			if i == 2 {
				want = "(null)"
			}
			if got := out.ValueStr(i); !sameNumber(got, want, c.want) {
				t.Errorf("widen %s → %s: element %d is %s, want %s", c.got, target, i, got, want)
			}
		}
		out.Release()
	}
}

// sameNumber compares an element's text with an integer's, decimals at
// their scale, after a failure explains itself.
func sameNumber(got, want string, dt arrow.DataType) bool {
	if want == "(null)" {
		return got == want
	}
	if d, ok := dt.(arrow.DecimalType); ok {
		var n int
		fmt.Sscan(want, &n)
		return got == decimal128.FromI64(int64(n)).ToString(d.GetScale())
	}
	return got == want
}

// build makes an array of dt holding base..base+9, element 3 null.
func build(t *testing.T, dt arrow.DataType, base int) arrow.Array {
	t.Helper()
	b := array.NewBuilder(memory.DefaultAllocator, dt)
	defer b.Release()
	for v := base; v < base+10; v++ {
		if v == base+3 {
			b.AppendNull()
			continue
		}
		switch b := b.(type) {
		case *array.Int8Builder:
			b.Append(int8(v))
		case *array.Int16Builder:
			b.Append(int16(v))
		case *array.Int32Builder:
			b.Append(int32(v))
		case *array.Uint8Builder:
			b.Append(uint8(v))
		case *array.Uint16Builder:
			b.Append(uint16(v))
		case *array.Uint32Builder:
			b.Append(uint32(v))
		case *array.Float32Builder:
			b.Append(float32(v))
		case *array.Decimal32Builder:
			b.Append(decimal.Decimal32(v))
		case *array.Decimal64Builder:
			b.Append(decimal.Decimal64(v))
		case *array.Decimal128Builder:
			b.Append(decimal128.FromI64(int64(v)))
		default:
			t.Fatalf("no builder for %s", dt)
		}
	}
	return b.NewArray()
}

// TestWidenDecimalDigits: a decimal128 of more digits than the table's
// decimal64 precision (a crafted object) is refused with ErrData, never
// truncated.
func TestWidenDecimalDigits(t *testing.T) {
	t.Parallel()
	w, _, ok := adapt(&arrow.Decimal128Type{Precision: 10, Scale: 0}, &arrow.Decimal128Type{Precision: 12, Scale: 0})
	if !ok || w == nil {
		t.Fatal("decimal(10, 0) does not widen to decimal(12, 0)")
	}
	b := array.NewDecimal128Builder(memory.DefaultAllocator, &arrow.Decimal128Type{Precision: 10, Scale: 0})
	defer b.Release()
	b.Append(decimal128.FromI64(1_000_000_000_000)) // 13 digits
	arr := b.NewArray()
	defer arr.Release()
	if _, err := w(arr); !errors.Is(err, ErrData) {
		t.Errorf("widening 13 digits into decimal(12, 0): %v; want ErrData", err)
	}
}
