package sopsql

import (
	"errors"
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestUnsupportedTypes: types with no DuckDB column here fail with ErrType.
func TestUnsupportedTypes(t *testing.T) {
	t.Parallel()
	for _, dt := range []arrow.DataType{
		arrow.FixedWidthTypes.Time64ns,
		arrow.MapOf(arrow.BinaryTypes.Binary, arrow.PrimitiveTypes.Int64),
		arrow.MapOf(arrow.ListOf(arrow.PrimitiveTypes.Int64), arrow.PrimitiveTypes.Int64),
		&arrow.Decimal128Type{Precision: 5, Scale: -1},
		arrow.FixedWidthTypes.MonthInterval,
		arrow.ListOf(arrow.FixedWidthTypes.Time64ns),
		arrow.StructOf(),
		arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int8}, arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int8}),
	} {
		if _, err := newConv(dt); !errors.Is(err, ErrType) {
			t.Errorf("%s: %v, want ErrType", dt, err)
		}
	}
}

// TestValuesThatDoNotFit: a value its DuckDB type cannot hold is an ErrData,
// never a wrapped or dropped value.
func TestValuesThatDoNotFit(t *testing.T) {
	t.Parallel()
	mem := memory.NewGoAllocator()
	check := func(name string, dt arrow.DataType, build func(array.Builder)) {
		t.Helper()
		b := array.NewBuilder(mem, dt)
		defer b.Release()
		build(b)
		arr := b.NewArray()
		defer arr.Release()
		c, err := newConv(dt)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if v, err := c.value(arr, 0); !errors.Is(err, ErrData) {
			t.Errorf("%s: %v, %v; want ErrData", name, v, err)
		}
	}
	for _, p := range []int32{4, 18, 38} {
		over := decimal128.FromI64(1)
		for range p {
			over = over.Mul(decimal128.FromI64(10))
		}
		check("decimal with more digits than its precision", &arrow.Decimal128Type{Precision: p, Scale: 0}, func(b array.Builder) {
			b.(*array.Decimal128Builder).Append(over)
		})
		check("negative decimal with more digits than its precision", &arrow.Decimal128Type{Precision: p, Scale: 1}, func(b array.Builder) {
			b.(*array.Decimal128Builder).Append(over.Negate())
		})
	}
	check("smallest decimal128", &arrow.Decimal128Type{Precision: 38, Scale: 0}, func(b array.Builder) {
		b.(*array.Decimal128Builder).Append(decimal128.New(math.MinInt64, 0))
	})
	check("seconds beyond the microsecond range", &arrow.TimestampType{Unit: arrow.Second}, func(b array.Builder) {
		b.(*array.TimestampBuilder).Append(math.MaxInt64 / 100)
	})
	check("milliseconds beyond the microsecond range", &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, func(b array.Builder) {
		b.(*array.TimestampBuilder).Append(math.MinInt64 / 10)
	})
	check("a map with two equal keys", arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64), func(b array.Builder) {
		mb := b.(*array.MapBuilder)
		mb.Append(true)
		mb.KeyBuilder().(*array.StringBuilder).AppendValues([]string{"k", "k"}, nil)
		mb.ItemBuilder().(*array.Int64Builder).AppendValues([]int64{1, 2}, nil)
	})

	// The largest values that fit do.
	b := array.NewDecimal128Builder(mem, &arrow.Decimal128Type{Precision: 4, Scale: 0})
	defer b.Release()
	b.Append(decimal128.FromI64(-9999))
	arr := b.NewArray()
	defer arr.Release()
	c, _ := newConv(arr.DataType())
	if v, err := c.value(arr, 0); err != nil || v != int64(-9999) {
		t.Errorf("DECIMAL(4,0) -9999: %v, %v", v, err)
	}
}
