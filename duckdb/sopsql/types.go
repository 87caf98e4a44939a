package sopsql

import (
	"fmt"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
	"github.com/apache/arrow-go/v18/arrow/float16"
	"github.com/duckdb/duckdb-go/v2"
	"github.com/sovm/sop-pme/writer"
)

// This file maps the Arrow types the reader returns to the DuckDB types that
// DuckDB's own read_parquet gives the same Parquet columns (the table is in
// Register's documentation), and writes Arrow values into DuckDB vectors.
//
// The reader returns the Arrow types pqarrow derives from the Parquet schema
// and the Arrow schema stored in the footer, when the writer stored one;
// read_parquet derives its types from the Parquet schema alone. The
// equivalence tests compare DESCRIBE output for both.

// A column is a top-level field of an object as sop_scan returns it.
type column struct {
	name  string
	dt    arrow.DataType
	info  duckdb.TypeInfo
	id    int32 // Parquet field ID, if hasID
	hasID bool
	fill  fillFunc  // the value-by-value path
	write vecWriter // the bulk path (vector.go), or nil
}

// fillFunc writes the elements [off, off+n) of arr as rows 0..n-1 of column
// col of ch.
type fillFunc func(ch duckdb.DataChunk, col int, arr arrow.Array, off, n int) error

// valueFunc returns the non-null element i of arr as the Go value duckdb-go
// writes into a vector of the column's DuckDB type (used inside lists,
// structs, maps and dictionaries).
type valueFunc func(arr arrow.Array, i int) (any, error)

// A conv converts one Arrow type to its DuckDB type.
type conv struct {
	info  duckdb.TypeInfo
	value valueFunc
	fill  fillFunc
}

// columns maps the top-level fields of schema to sop_scan's columns.
func columns(schema *arrow.Schema) ([]column, error) {
	cols := make([]column, schema.NumFields())
	for i, f := range schema.Fields() {
		c, err := newConv(f.Type)
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", f.Name, err)
		}
		cols[i] = column{name: f.Name, dt: f.Type, info: c.info, fill: c.fill, write: bulkWriter(f.Type)}
		// pqarrow gives a field without a field ID the ID -1.
		if v, ok := f.Metadata.GetValue(writer.FieldIDKey); ok {
			id, err := strconv.ParseInt(v, 10, 32)
			if err == nil && id >= 0 {
				cols[i].id, cols[i].hasID = int32(id), true
			}
		}
	}
	return cols, nil
}

func typeInfo(t duckdb.Type) duckdb.TypeInfo {
	info, err := duckdb.NewTypeInfo(t)
	if err != nil {
		// Only called with the primitive types NewTypeInfo accepts.
		panic("sopsql: internal error: " + err.Error())
	}
	return info
}

func same[V any](v V) (V, error) { return v, nil }

// newConv returns the conversion of Arrow type dt.
func newConv(dt arrow.DataType) (conv, error) {
	switch dt := dt.(type) {
	case *arrow.BooleanType:
		return prim[*array.Boolean](duckdb.TYPE_BOOLEAN, same[bool]), nil
	case *arrow.Int8Type:
		return prim[*array.Int8](duckdb.TYPE_TINYINT, same[int8]), nil
	case *arrow.Int16Type:
		return prim[*array.Int16](duckdb.TYPE_SMALLINT, same[int16]), nil
	case *arrow.Int32Type:
		return prim[*array.Int32](duckdb.TYPE_INTEGER, same[int32]), nil
	case *arrow.Int64Type:
		return prim[*array.Int64](duckdb.TYPE_BIGINT, same[int64]), nil
	case *arrow.Uint8Type:
		return prim[*array.Uint8](duckdb.TYPE_UTINYINT, same[uint8]), nil
	case *arrow.Uint16Type:
		return prim[*array.Uint16](duckdb.TYPE_USMALLINT, same[uint16]), nil
	case *arrow.Uint32Type:
		return prim[*array.Uint32](duckdb.TYPE_UINTEGER, same[uint32]), nil
	case *arrow.Uint64Type:
		return prim[*array.Uint64](duckdb.TYPE_UBIGINT, same[uint64]), nil
	case *arrow.Float16Type:
		return prim[*array.Float16](duckdb.TYPE_FLOAT, func(v float16.Num) (float32, error) { return v.Float32(), nil }), nil
	case *arrow.Float32Type:
		return prim[*array.Float32](duckdb.TYPE_FLOAT, same[float32]), nil
	case *arrow.Float64Type:
		return prim[*array.Float64](duckdb.TYPE_DOUBLE, same[float64]), nil
	case *arrow.StringType:
		return prim[*array.String](duckdb.TYPE_VARCHAR, same[string]), nil
	case *arrow.LargeStringType:
		return prim[*array.LargeString](duckdb.TYPE_VARCHAR, same[string]), nil
	case *arrow.StringViewType:
		return prim[*array.StringView](duckdb.TYPE_VARCHAR, same[string]), nil
	case *arrow.BinaryType:
		return prim[*array.Binary](duckdb.TYPE_BLOB, same[[]byte]), nil
	case *arrow.LargeBinaryType:
		return prim[*array.LargeBinary](duckdb.TYPE_BLOB, same[[]byte]), nil
	case *arrow.BinaryViewType:
		return prim[*array.BinaryView](duckdb.TYPE_BLOB, same[[]byte]), nil
	case *arrow.FixedSizeBinaryType:
		return prim[*array.FixedSizeBinary](duckdb.TYPE_BLOB, same[[]byte]), nil
	case *arrow.Decimal128Type:
		return decimalConv(dt)
	case *arrow.Decimal32Type:
		return narrowDecimalConv[*array.Decimal32](dt.Precision, dt.Scale)
	case *arrow.Decimal64Type:
		return narrowDecimalConv[*array.Decimal64](dt.Precision, dt.Scale)
	case *arrow.Decimal256Type:
		if dt.Precision <= 38 {
			break // pqarrow reads these as decimal128; read_parquet as DECIMAL
		}
		scale := dt.Scale
		return prim[*array.Decimal256](duckdb.TYPE_DOUBLE, func(v decimal256.Num) (float64, error) {
			return decimalToFloat(v.BigInt(), scale), nil
		}), nil
	case *arrow.Date32Type:
		return prim[*array.Date32](duckdb.TYPE_DATE, func(v arrow.Date32) (time.Time, error) {
			return time.Unix(int64(v)*86400, 0).UTC(), nil
		}), nil
	case *arrow.Date64Type:
		// The Parquet column holds days; pqarrow writes ms / 86_400_000.
		return prim[*array.Date64](duckdb.TYPE_DATE, func(v arrow.Date64) (time.Time, error) {
			return time.Unix(int64(v)/86_400_000*86400, 0).UTC(), nil
		}), nil
	case *arrow.Time32Type:
		mul := int64(1000) // milliseconds to microseconds
		if dt.Unit == arrow.Second {
			mul = 1_000_000
		}
		return prim[*array.Time32](duckdb.TYPE_TIME, func(v arrow.Time32) (time.Time, error) {
			return time.UnixMicro(int64(v) * mul).UTC(), nil
		}), nil
	case *arrow.Time64Type:
		if dt.Unit != arrow.Microsecond {
			return conv{}, fmt.Errorf("%w: %s (DuckDB TIME_NS)", ErrType, dt)
		}
		return prim[*array.Time64](duckdb.TYPE_TIME, func(v arrow.Time64) (time.Time, error) {
			return time.UnixMicro(int64(v)).UTC(), nil
		}), nil
	case *arrow.TimestampType:
		return timestampConv(dt), nil
	case *arrow.NullType:
		return conv{
			info:  typeInfo(duckdb.TYPE_INTEGER),
			value: func(arrow.Array, int) (any, error) { return nil, nil },
			fill: func(ch duckdb.DataChunk, col int, _ arrow.Array, _, n int) error {
				for i := range n {
					if err := duckdb.SetChunkValue[any](ch, col, i, nil); err != nil {
						return err
					}
				}
				return nil
			},
		}, nil
	case *arrow.MapType: // before the list types: a map is a list of structs
		return mapConv(dt)
	case arrow.ListLikeType:
		elem, err := newConv(dt.Elem())
		if err != nil {
			return conv{}, err
		}
		info, err := duckdb.NewListInfo(elem.info)
		if err != nil {
			return conv{}, fmt.Errorf("%w: %s: %v", ErrType, dt, err)
		}
		return nested(info, listValue(elem.value)), nil
	case *arrow.StructType:
		return structConv(dt)
	case *arrow.DictionaryType:
		val, err := newConv(dt.ValueType)
		if err != nil {
			return conv{}, err
		}
		return nested(val.info, func(arr arrow.Array, i int) (any, error) {
			a, ok := arr.(*array.Dictionary)
			if !ok {
				return nil, mismatch(arr)
			}
			j := a.GetValueIndex(i)
			d := a.Dictionary()
			if j < 0 || j >= d.Len() {
				return nil, fmt.Errorf("%w: dictionary index %d of %d", ErrData, j, d.Len())
			}
			if d.IsNull(j) {
				return nil, nil
			}
			return val.value(d, j)
		}), nil
	case *arrow.DurationType:
		// read_parquet reads a duration's INT64 as BIGINT.
		return prim[*array.Duration](duckdb.TYPE_BIGINT, func(v arrow.Duration) (int64, error) { return int64(v), nil }), nil
	case arrow.ExtensionType:
		// An extension type (a GeoArrow geometry, a UUID, JSON) as its
		// storage, as read_parquet reads the column.
		return extensionConv(dt)
	}
	return conv{}, fmt.Errorf("%w: %s", ErrType, dt)
}

// extensionConv converts an extension type's arrays through their storage.
func extensionConv(dt arrow.ExtensionType) (conv, error) {
	c, err := newConv(dt.StorageType())
	if err != nil {
		return conv{}, err
	}
	storage := func(arr arrow.Array) (arrow.Array, error) {
		a, ok := arr.(array.ExtensionArray)
		if !ok {
			return nil, mismatch(arr)
		}
		return a.Storage(), nil
	}
	return conv{
		info: c.info,
		value: func(arr arrow.Array, i int) (any, error) {
			s, err := storage(arr)
			if err != nil {
				return nil, err
			}
			return c.value(s, i)
		},
		fill: func(ch duckdb.DataChunk, col int, arr arrow.Array, off, n int) error {
			s, err := storage(arr)
			if err != nil {
				return err
			}
			return c.fill(ch, col, s, off, n)
		},
	}, nil
}

// valueArray is an Arrow array with a typed Value accessor.
type valueArray[V any] interface {
	arrow.Array
	Value(int) V
}

// prim is the conversion of a flat type: element by element, through f, as
// the duckdb-go value T.
func prim[A valueArray[V], V, T any](t duckdb.Type, f func(V) (T, error)) conv {
	return primInfo[A](typeInfo(t), f)
}

// primInfo is prim for a DuckDB type given by its TypeInfo.
func primInfo[A valueArray[V], V, T any](info duckdb.TypeInfo, f func(V) (T, error)) conv {
	return conv{
		info: info,
		value: func(arr arrow.Array, i int) (any, error) {
			a, ok := arr.(A)
			if !ok {
				return nil, mismatch(arr)
			}
			return f(a.Value(i))
		},
		fill: func(ch duckdb.DataChunk, col int, arr arrow.Array, off, n int) error {
			a, ok := arr.(A)
			if !ok {
				return mismatch(arr)
			}
			nulls := a.NullN() > 0
			for i := range n {
				j := off + i
				if nulls && a.IsNull(j) {
					if err := duckdb.SetChunkValue[any](ch, col, i, nil); err != nil {
						return err
					}
					continue
				}
				v, err := f(a.Value(j))
				if err != nil {
					return err
				}
				if err := duckdb.SetChunkValue(ch, col, i, v); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

// nested is the conversion of a type whose values go to duckdb-go as Go
// values built by value.
func nested(info duckdb.TypeInfo, value valueFunc) conv {
	return conv{
		info:  info,
		value: value,
		fill: func(ch duckdb.DataChunk, col int, arr arrow.Array, off, n int) error {
			for i := range n {
				var v any
				if j := off + i; !arr.IsNull(j) {
					var err error
					if v, err = value(arr, j); err != nil {
						return err
					}
				}
				if err := duckdb.SetChunkValue(ch, col, i, v); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

func mismatch(arr arrow.Array) error {
	return fmt.Errorf("%w: unexpected Arrow array %T of type %s", ErrData, arr, arr.DataType())
}
