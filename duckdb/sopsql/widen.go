package sopsql

import (
	"fmt"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/duckdb/duckdb-go/v2"

	"github.com/sovm/sop-pme/table"
)

// This file adapts the columns of a table's objects to the table's current
// schema (Iceberg-style evolution by Parquet field ID): an object written
// before a type promotion holds the narrower type, which is widened here,
// in Arrow, before the column is written into DuckDB's vectors. The
// promotions are those that lose no value: a signed integer to a wider
// signed one, an unsigned integer to a wider unsigned or signed one,
// float32 to float64, and a decimal to one of more digits at the same
// scale.

// widenFunc returns arr, of an object's type, as an array of the table's
// type; the caller releases the result.
type widenFunc func(arr arrow.Array) (arrow.Array, error)

// adapt returns how an object column of Arrow type got (as the scan
// returns it: narrow decimals, dictionaries) is written into a table
// column of Arrow type want: as it is (nil widen, target got) when both
// have the same DuckDB type, or widened into target. ok is false for a
// type that is neither.
func adapt(got, want arrow.DataType) (widen widenFunc, target arrow.DataType, ok bool) {
	if arrow.TypeEqual(got, want) || sameDuckType(got, want) {
		return nil, got, true
	}
	if gd, isDec := got.(arrow.DecimalType); isDec {
		wd, isDec := want.(arrow.DecimalType)
		if !isDec || gd.GetScale() != wd.GetScale() || gd.GetPrecision() >= wd.GetPrecision() || wd.GetPrecision() > 38 {
			return nil, nil, false
		}
		return decimalWidener(got, wd.GetPrecision(), wd.GetScale())
	}
	if w := numWidener(got, want); w != nil {
		return w, want, true
	}
	return nil, nil, false
}

// sameDuckType reports whether Arrow types a and b have the same DuckDB
// type (newConv): then the writer of a writes a column of b's type. So a
// table column takes an object's column of another Arrow type that DuckDB
// does not tell apart: a string of any width or a dictionary of strings,
// a decimal of the same precision and scale in any width, a time32[ms]
// for a time32[s] (Parquet keeps TIME in milliseconds at least), a list
// whose element field has another name, nested types of such. A nested
// column whose children evolved otherwise (a child promoted, renamed,
// added or dropped) goes through adaptNested.
func sameDuckType(a, b arrow.DataType) bool {
	ca, err := newConv(a)
	if err != nil {
		return false
	}
	cb, err := newConv(b)
	if err != nil {
		return false
	}
	return sameInfo(ca.info, cb.info)
}

// sameInfo reports whether two DuckDB types are the same.
func sameInfo(a, b duckdb.TypeInfo) bool {
	if a.InternalType() != b.InternalType() {
		return false
	}
	switch da := a.Details().(type) {
	case nil:
		return b.Details() == nil
	case *duckdb.DecimalDetails:
		db, ok := b.Details().(*duckdb.DecimalDetails)
		return ok && *da == *db
	case *duckdb.ListDetails:
		db, ok := b.Details().(*duckdb.ListDetails)
		return ok && sameInfo(da.Child, db.Child)
	case *duckdb.ArrayDetails:
		db, ok := b.Details().(*duckdb.ArrayDetails)
		return ok && da.Size == db.Size && sameInfo(da.Child, db.Child)
	case *duckdb.MapDetails:
		db, ok := b.Details().(*duckdb.MapDetails)
		return ok && sameInfo(da.Key, db.Key) && sameInfo(da.Value, db.Value)
	case *duckdb.StructDetails:
		db, ok := b.Details().(*duckdb.StructDetails)
		if !ok || len(da.Entries) != len(db.Entries) {
			return false
		}
		for i, e := range da.Entries {
			if e.Name() != db.Entries[i].Name() || !sameInfo(e.Info(), db.Entries[i].Info()) {
				return false
			}
		}
		return true
	}
	return false // enums, unions: not sop_scan's types
}

type number interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~float32 | ~float64
}

// widens reports whether an integer or float type got widens into want
// without loss.
func widens(got, want arrow.DataType) bool {
	type num struct {
		size  int
		sign  bool
		float bool
	}
	info := func(dt arrow.DataType) (num, bool) {
		switch dt.ID() {
		case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64:
			return num{size: dt.(arrow.FixedWidthDataType).BitWidth(), sign: true}, true
		case arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
			return num{size: dt.(arrow.FixedWidthDataType).BitWidth()}, true
		case arrow.FLOAT32, arrow.FLOAT64:
			return num{size: dt.(arrow.FixedWidthDataType).BitWidth(), float: true}, true
		}
		return num{}, false
	}
	g, ok1 := info(got)
	w, ok2 := info(want)
	switch {
	case !ok1 || !ok2 || g.float != w.float || g.size > w.size:
		return false
	case g.float:
		return g.size < w.size
	case g.sign == w.sign:
		return g.size < w.size
	}
	return !g.sign && g.size < w.size // unsigned into a wider signed integer
}

// numWidener returns the widening of integer or float type got into want,
// or nil.
func numWidener(got, want arrow.DataType) widenFunc {
	if !widens(got, want) {
		return nil
	}
	switch got.ID() {
	case arrow.INT8:
		return numTo[int8](want)
	case arrow.INT16:
		return numTo[int16](want)
	case arrow.INT32:
		return numTo[int32](want)
	case arrow.UINT8:
		return numTo[uint8](want)
	case arrow.UINT16:
		return numTo[uint16](want)
	case arrow.UINT32:
		return numTo[uint32](want)
	case arrow.FLOAT32:
		return numTo[float32](want)
	}
	return nil
}

func numTo[S number](want arrow.DataType) widenFunc {
	switch want.ID() {
	case arrow.INT16:
		return widenNum[S, int16](want)
	case arrow.INT32:
		return widenNum[S, int32](want)
	case arrow.INT64:
		return widenNum[S, int64](want)
	case arrow.UINT16:
		return widenNum[S, uint16](want)
	case arrow.UINT32:
		return widenNum[S, uint32](want)
	case arrow.UINT64:
		return widenNum[S, uint64](want)
	case arrow.FLOAT64:
		return widenNum[S, float64](want)
	}
	return nil
}

// widenNum converts every value of an array of S into an array of type dt
// over D, nulls kept (a null row's value is converted too: Arrow leaves it
// unspecified, and so does the result).
func widenNum[S, D number](dt arrow.DataType) widenFunc {
	return func(arr arrow.Array) (arrow.Array, error) {
		return convert(arr, dt, func(src []S, dst []D) error {
			for i, v := range src {
				dst[i] = D(v)
			}
			return nil
		})
	}
}

// convert builds an array of type dt, of arr's length and nulls, whose
// values f writes from arr's.
func convert[S, D any](arr arrow.Array, dt arrow.DataType, f func(src []S, dst []D) error) (arrow.Array, error) {
	n := arr.Len()
	src, err := values[S](arr, 0, n)
	if err != nil {
		return nil, err
	}
	buf := memory.NewResizableBuffer(memory.DefaultAllocator)
	buf.Resize(n * int(unsafe.Sizeof(*new(D))))
	defer buf.Release()
	var dst []D
	if n > 0 {
		dst = unsafe.Slice((*D)(unsafe.Pointer(&buf.Bytes()[0])), n)
	}
	if err := f(src, dst); err != nil {
		return nil, err
	}
	var nulls *memory.Buffer
	if arr.NullN() > 0 {
		bits := arr.NullBitmapBytes()
		off := arr.Data().Offset()
		if bits == nil || (off+n+7)/8 > len(bits) {
			return nil, fmt.Errorf("%w: validity bitmap of %d bytes for %d rows", ErrData, len(bits), n)
		}
		nulls = memory.NewResizableBuffer(memory.DefaultAllocator)
		nulls.Resize(int(bitutil.BytesForBits(int64(n))))
		defer nulls.Release()
		bitutil.CopyBitmap(bits, off, n, nulls.Bytes(), 0)
	}
	data := array.NewData(dt, n, []*memory.Buffer{nulls, buf}, nil, arr.NullN(), 0)
	defer data.Release()
	return array.MakeFromData(data), nil
}

// decimalWidener returns the widening of decimal type got into a decimal
// of precision p and the same scale s: decimal64 up to 18 digits (DuckDB
// keeps those in an int16, int32 or int64, which narrowDecimalWriter
// writes by the precision), decimal128 above. The unscaled integers are
// the same; only their width changes.
func decimalWidener(got arrow.DataType, p, s int32) (widenFunc, arrow.DataType, bool) {
	if p <= 18 {
		dt := &arrow.Decimal64Type{Precision: p, Scale: s}
		switch got.ID() {
		case arrow.DECIMAL32:
			return widenNum[decimal.Decimal32, decimal.Decimal64](dt), dt, true
		case arrow.DECIMAL64:
			return widenNum[decimal.Decimal64, decimal.Decimal64](dt), dt, true
		case arrow.DECIMAL128:
			// Precision at most p <= 18: a value of more digits (a
			// crafted object) is refused, never truncated.
			limit := decimal128.GetScaleMultiplier(int(p))
			neg := limit.Negate()
			return func(arr arrow.Array) (arrow.Array, error) {
				return convert(arr, dt, func(src []decimal128.Num, dst []decimal.Decimal64) error {
					for i, v := range src {
						if arr.IsValid(i) && (!v.Less(limit) || !v.Greater(neg)) {
							return fmt.Errorf("%w: %s has more than %d digits", ErrData, v.BigInt(), p)
						}
						dst[i] = decimal.Decimal64(int64(v.LowBits()))
					}
					return nil
				})
			}, dt, true
		}
		return nil, nil, false
	}
	dt := &arrow.Decimal128Type{Precision: p, Scale: s}
	switch got.ID() {
	case arrow.DECIMAL32:
		return widenDecimal128[decimal.Decimal32](dt), dt, true
	case arrow.DECIMAL64:
		return widenDecimal128[decimal.Decimal64](dt), dt, true
	case arrow.DECIMAL128:
		return widenDecimal128[decimal128.Num](dt), dt, true
	}
	return nil, nil, false
}

func widenDecimal128[S decimal.Decimal32 | decimal.Decimal64 | decimal128.Num](dt arrow.DataType) widenFunc {
	return func(arr arrow.Array) (arrow.Array, error) {
		return convert(arr, dt, func(src []S, dst []decimal128.Num) error {
			for i, v := range src {
				switch v := any(v).(type) {
				case decimal.Decimal32:
					dst[i] = decimal128.FromI64(int64(v))
				case decimal.Decimal64:
					dst[i] = decimal128.FromI64(int64(v))
				case decimal128.Num:
					dst[i] = v
				}
			}
			return nil
		})
	}
}

// adaptNested returns how an object's nested column f (a struct, list or
// map) is read as a table column of type want whose children were evolved
// (a child promoted, renamed, added or dropped): by package table's
// Adapter, which matches children by field ID at every depth, as
// table.Scan does, and widens a promoted leaf. ok is false for a column
// that is not nested, or that the Adapter refuses.
func adaptNested(f arrow.Field, name string, want arrow.DataType) (widenFunc, arrow.DataType, bool) {
	switch f.Type.(type) {
	case *arrow.StructType, arrow.ListLikeType:
	default:
		return nil, nil, false
	}
	target := arrow.NewSchema([]arrow.Field{{Name: name, Type: want, Nullable: true, Metadata: f.Metadata}}, nil)
	source := arrow.NewSchema([]arrow.Field{f}, nil)
	ad, err := table.NewAdapter(target, source)
	if err != nil {
		return nil, nil, false
	}
	return func(arr arrow.Array) (arrow.Array, error) {
		rec := array.NewRecordBatch(source, []arrow.Array{arr}, int64(arr.Len()))
		defer rec.Release()
		out, err := ad.Adapt(rec)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrType, err)
		}
		defer out.Release()
		col := out.Column(0)
		col.Retain()
		return col, nil
	}, want, true
}
