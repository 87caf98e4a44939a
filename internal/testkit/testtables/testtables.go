// Package testtables builds the deterministic tables that the library's
// tests, the test vectors (testdata/vectors) and the DuckDB interop suite
// share: a schema with one column of every type the suite covers (integers,
// floats, decimals, strings, binary, dates, timestamps with and without a
// time zone, lists, a struct and a map), every field with a Parquet field ID
// (SOP-PME-1 Section 11.2), and rows for it drawn from math/rand/v2 with a
// fixed seed.
//
// Every column is nullable and gets nulls; one row in every 64 (row%64 ==
// AllNullRow), and the last row of every table, is null in every column. The
// first rows of each 64 carry each type's edge values.
package testtables

import (
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/float16"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// FieldIDKey is the Arrow field metadata key that carries a Parquet field
// ID (the same as writer.FieldIDKey).
const FieldIDKey = "PARQUET:field_id"

// AllNullRow is the row, modulo 64, that is null in every column.
const AllNullRow = 13

// FieldID returns field metadata carrying Parquet field ID id.
func FieldID(id int) arrow.Metadata {
	return arrow.NewMetadata([]string{FieldIDKey}, []string{strconv.Itoa(id)})
}

// FieldIDs hands out unique Parquet field IDs, Last+1, Last+2, …, in the
// order fields are made, nested fields included (Section 11.2).
type FieldIDs struct{ Last int }

// Next returns the metadata of the next field ID.
func (g *FieldIDs) Next() arrow.Metadata { g.Last++; return FieldID(g.Last) }

// Field returns a nullable field with the next field ID.
func (g *FieldIDs) Field(name string, dt arrow.DataType) arrow.Field {
	return arrow.Field{Name: name, Type: dt, Nullable: true, Metadata: g.Next()}
}

func AllTypes() *arrow.Schema {
	var g FieldIDs
	f := g.Field
	ts := func(u arrow.TimeUnit, tz string) arrow.DataType { return &arrow.TimestampType{Unit: u, TimeZone: tz} }
	return arrow.NewSchema([]arrow.Field{
		f("i8", arrow.PrimitiveTypes.Int8),
		f("i16", arrow.PrimitiveTypes.Int16),
		f("i32", arrow.PrimitiveTypes.Int32),
		f("i64", arrow.PrimitiveTypes.Int64),
		f("u8", arrow.PrimitiveTypes.Uint8),
		f("u16", arrow.PrimitiveTypes.Uint16),
		f("u32", arrow.PrimitiveTypes.Uint32),
		f("u64", arrow.PrimitiveTypes.Uint64),
		f("f32", arrow.PrimitiveTypes.Float32),
		f("f64", arrow.PrimitiveTypes.Float64),
		f("dec9", &arrow.Decimal128Type{Precision: 9, Scale: 2}),
		f("dec18", &arrow.Decimal128Type{Precision: 18, Scale: 4}),
		f("dec38", &arrow.Decimal128Type{Precision: 38, Scale: 10}),
		f("b", arrow.FixedWidthTypes.Boolean),
		f("s", arrow.BinaryTypes.String),
		f("bin", arrow.BinaryTypes.Binary),
		f("d", arrow.FixedWidthTypes.Date32),
		f("ts_ms", ts(arrow.Millisecond, "")),
		f("ts_us", ts(arrow.Microsecond, "")),
		f("ts_ns", ts(arrow.Nanosecond, "")),
		f("tstz_ms", ts(arrow.Millisecond, "UTC")),
		f("tstz_us", ts(arrow.Microsecond, "UTC")),
		f("tstz_ns", ts(arrow.Nanosecond, "UTC")),
		f("l_i64", arrow.ListOfField(f("element", arrow.PrimitiveTypes.Int64))),
		f("l_s", arrow.ListOfField(f("element", arrow.BinaryTypes.String))),
		f("st", arrow.StructOf(f("a", arrow.PrimitiveTypes.Int64), f("b", arrow.BinaryTypes.String))),
		f("m", arrow.MapOfWithMetadata(arrow.BinaryTypes.String, g.Next(), arrow.PrimitiveTypes.Int64, g.Next())),
	}, nil)
}

// ArrowTypes returns a schema of the Arrow types that AllTypes lacks: those
// whose Parquet form is shared with another Arrow type, so that only the
// ARROW:schema footer entry tells them apart (time zones other than UTC,
// large offsets, dictionaries, decimal256, date64,
// extension types), and the other types Parquet holds (half floats, times,
// fixed-size binary). Durations are not among them: arrow-go cannot write
// them to Parquet.
func ArrowTypes() *arrow.Schema {
	jsonType, err := extensions.NewJSONType(arrow.BinaryTypes.String)
	if err != nil {
		panic(err)
	}
	var g FieldIDs
	f := g.Field
	ts := func(u arrow.TimeUnit, tz string) arrow.DataType { return &arrow.TimestampType{Unit: u, TimeZone: tz} }
	dict := func(idx, val arrow.DataType) arrow.DataType {
		return &arrow.DictionaryType{IndexType: idx, ValueType: val}
	}
	return arrow.NewSchema([]arrow.Field{
		f("paris_ms", ts(arrow.Millisecond, "Europe/Paris")),
		f("paris_us", ts(arrow.Microsecond, "Europe/Paris")),
		f("tokyo_ns", ts(arrow.Nanosecond, "Asia/Tokyo")),
		f("offset_us", ts(arrow.Microsecond, "+05:30")),
		f("ls", arrow.BinaryTypes.LargeString),
		f("lbin", arrow.BinaryTypes.LargeBinary),
		f("dict_s", dict(arrow.PrimitiveTypes.Int32, arrow.BinaryTypes.String)),
		f("dict_bin", dict(arrow.PrimitiveTypes.Int64, arrow.BinaryTypes.Binary)),
		f("dec256_20", &arrow.Decimal256Type{Precision: 20, Scale: 2}),
		f("dec256_60", &arrow.Decimal256Type{Precision: 60, Scale: 5}),
		f("d64", arrow.FixedWidthTypes.Date64),
		f("f16", arrow.FixedWidthTypes.Float16),
		f("t32_ms", arrow.FixedWidthTypes.Time32ms),
		f("t64_us", arrow.FixedWidthTypes.Time64us),
		f("t64_ns", arrow.FixedWidthTypes.Time64ns),
		f("fsb5", &arrow.FixedSizeBinaryType{ByteWidth: 5}),
		f("uuid", extensions.NewUUIDType()),
		f("json", jsonType),
		f("bool8", extensions.NewBool8Type()),
		f("ll_ls", arrow.LargeListOfField(f("element", arrow.BinaryTypes.LargeString))),
		f("st_tz", arrow.StructOf(f("at", ts(arrow.Millisecond, "America/New_York")), f("ls", arrow.BinaryTypes.LargeString))),
		f("m_ls", arrow.MapOfWithMetadata(arrow.BinaryTypes.String, g.Next(), arrow.BinaryTypes.LargeString, g.Next())),
	}, nil)
}

// ExtraTypes returns a schema with a column of each type that DuckDB's
// SQL over objects (sop_scan) maps beyond those of AllTypes: float16,
// times, fixed-size binary, large strings, null, timestamps in seconds and
// in a time zone other than UTC, date64, small and all-fraction decimals,
// and lists and structs nested in each other. Its field IDs start at 101.
func ExtraTypes() *arrow.Schema {
	g := FieldIDs{Last: 100}
	f := g.Field
	return arrow.NewSchema([]arrow.Field{
		f("f16", arrow.FixedWidthTypes.Float16),
		f("t32s", arrow.FixedWidthTypes.Time32s),
		f("t32ms", arrow.FixedWidthTypes.Time32ms),
		f("t64us", arrow.FixedWidthTypes.Time64us),
		f("fsb", &arrow.FixedSizeBinaryType{ByteWidth: 5}),
		f("ls", arrow.BinaryTypes.LargeString),
		f("nul", arrow.Null),
		f("ts_s", &arrow.TimestampType{Unit: arrow.Second}),
		f("tstz_s", &arrow.TimestampType{Unit: arrow.Second, TimeZone: "UTC"}),
		f("tstz_ny", &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "America/New_York"}),
		f("d64", arrow.FixedWidthTypes.Date64),
		f("dec1", &arrow.Decimal128Type{Precision: 1, Scale: 0}),
		f("dec4", &arrow.Decimal128Type{Precision: 4, Scale: 1}),
		f("dec19", &arrow.Decimal128Type{Precision: 19, Scale: 19}),
		f("l_l", arrow.ListOfField(f("element", arrow.ListOfField(f("element", arrow.PrimitiveTypes.Int32))))),
		f("l_st", arrow.ListOfField(f("element", arrow.StructOf(f("x", arrow.FixedWidthTypes.Date32), f("y", arrow.PrimitiveTypes.Float64))))),
		f("st_l", arrow.StructOf(f("l", arrow.ListOfField(f("element", arrow.BinaryTypes.String))), f("ts", &arrow.TimestampType{Unit: arrow.Nanosecond}))),
		f("m_i", arrow.MapOfWithMetadata(arrow.PrimitiveTypes.Int32, g.Next(), arrow.ListOfField(f("element", arrow.PrimitiveTypes.Int16)), g.Next())),
	}, nil)
}

// Record returns n deterministic rows of schema, drawn with seed.
func Record(schema *arrow.Schema, n int, seed uint64) arrow.RecordBatch {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for row := range n {
		allNull := row%64 == AllNullRow || row == n-1
		for c, fb := range b.Fields() {
			if allNull || r.IntN(8) == 0 {
				fb.AppendNull()
				continue
			}
			appendValue(fb, schema.Field(c).Type, r, row%64)
		}
	}
	return b.NewRecordBatch()
}

// appendValue appends one non-null value of type dt to b. For edge < the
// number of edge values of dt it appends that edge value, otherwise a random
// one; nested values pass edge = -1 to their children.
func appendValue(b array.Builder, dt arrow.DataType, r *rand.Rand, edge int) {
	pick := func(n int) int { // index of the edge value to use, or -1
		if edge >= 0 && edge < n {
			return edge
		}
		return -1
	}
	switch b := b.(type) {
	case *array.Int8Builder:
		e := []int8{math.MinInt8, math.MaxInt8, 0, -1, 1}
		if i := pick(len(e)); i >= 0 {
			b.Append(e[i])
		} else {
			b.Append(int8(r.Uint32()))
		}
	case *array.Int16Builder:
		e := []int16{math.MinInt16, math.MaxInt16, 0, -1, 1}
		if i := pick(len(e)); i >= 0 {
			b.Append(e[i])
		} else {
			b.Append(int16(r.Uint32()))
		}
	case *array.Int32Builder:
		e := []int32{math.MinInt32, math.MaxInt32, 0, -1, 1}
		if i := pick(len(e)); i >= 0 {
			b.Append(e[i])
		} else {
			b.Append(int32(r.Uint32()))
		}
	case *array.Int64Builder:
		e := []int64{math.MinInt64, math.MaxInt64, 0, -1, 1}
		if i := pick(len(e)); i >= 0 {
			b.Append(e[i])
		} else if r.IntN(2) == 0 {
			b.Append(int64(r.Uint64()))
		} else {
			b.Append(r.Int64N(2000) - 1000) // small values, to exercise dictionaries
		}
	case *array.Uint8Builder:
		e := []uint8{0, math.MaxUint8, 1, 1 << 7}
		if i := pick(len(e)); i >= 0 {
			b.Append(e[i])
		} else {
			b.Append(uint8(r.Uint32()))
		}
	case *array.Uint16Builder:
		e := []uint16{0, math.MaxUint16, 1, 1 << 15}
		if i := pick(len(e)); i >= 0 {
			b.Append(e[i])
		} else {
			b.Append(uint16(r.Uint32()))
		}
	case *array.Uint32Builder:
		e := []uint32{0, math.MaxUint32, 1, 1 << 31}
		if i := pick(len(e)); i >= 0 {
			b.Append(e[i])
		} else {
			b.Append(r.Uint32())
		}
	case *array.Uint64Builder:
		// Values at and above 2^63 do not fit an int64.
		e := []uint64{0, math.MaxUint64, 1, 1 << 63, 1<<63 + 1, 1<<63 - 1}
		if i := pick(len(e)); i >= 0 {
			b.Append(e[i])
		} else {
			b.Append(r.Uint64())
		}
	case *array.Float32Builder:
		e := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)),
			float32(math.Copysign(0, -1)), 0, math.SmallestNonzeroFloat32, -math.MaxFloat32, math.MaxFloat32}
		if i := pick(len(e)); i >= 0 {
			b.Append(e[i])
		} else {
			b.Append(float32(r.NormFloat64() * 1e6))
		}
	case *array.Float64Builder:
		e := []float64{math.NaN(), math.Inf(1), math.Inf(-1),
			math.Copysign(0, -1), 0, math.SmallestNonzeroFloat64, -math.MaxFloat64, math.MaxFloat64}
		if i := pick(len(e)); i >= 0 {
			b.Append(e[i])
		} else {
			b.Append(r.NormFloat64() * 1e12)
		}
	case *array.Decimal128Builder:
		p := dt.(*arrow.Decimal128Type).Precision
		lim := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(p)), nil) // 10^p
		maxv := new(big.Int).Sub(lim, big.NewInt(1))
		e := []*big.Int{maxv, new(big.Int).Neg(maxv), big.NewInt(0), big.NewInt(-1), big.NewInt(1)}
		v := new(big.Int)
		if i := pick(len(e)); i >= 0 {
			v.Set(e[i])
		} else {
			// A random unscaled value with a random number of digits.
			digits := 1 + r.IntN(int(p))
			v.SetUint64(r.Uint64())
			v.Lsh(v, 64).Or(v, new(big.Int).SetUint64(r.Uint64()))
			v.Mod(v, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(digits)), nil))
			if r.IntN(2) == 0 {
				v.Neg(v)
			}
		}
		b.Append(decimal128.FromBigInt(v))
	case *array.BooleanBuilder:
		b.Append(r.IntN(2) == 0)
	case *array.StringBuilder:
		b.Append(randString(r, edge))
	case *array.BinaryBuilder:
		e := [][]byte{{}, {0}, {0xff, 0xfe, 0xfd}, []byte("\xc3\x28 not UTF-8")}
		if i := pick(len(e)); i >= 0 {
			b.Append(e[i])
		} else {
			v := make([]byte, r.IntN(40))
			for j := range v {
				v[j] = byte(r.Uint32())
			}
			b.Append(v)
		}
	case *array.Date32Builder:
		// 0001-01-01, 9999-12-31, the epoch and the day before it.
		e := []arrow.Date32{-719162, 2932896, 0, -1, 1}
		if i := pick(len(e)); i >= 0 {
			b.Append(e[i])
		} else {
			b.Append(arrow.Date32(r.Int32N(2932896+719162) - 719162))
		}
	case *array.TimestampBuilder:
		// Random instants within about ±950 years of the epoch (±95 years
		// for nanoseconds, whose int64 range ends in 1677 and 2262).
		span := map[arrow.TimeUnit]int64{arrow.Second: 3e10, arrow.Millisecond: 3e13, arrow.Microsecond: 3e16, arrow.Nanosecond: 3e18}[dt.(*arrow.TimestampType).Unit]
		e := []int64{0, -1, 1, -1001, 1001, span, -span, -999_999, 999_999}
		if i := pick(len(e)); i >= 0 {
			b.Append(arrow.Timestamp(e[i]))
		} else {
			b.Append(arrow.Timestamp(r.Int64N(2*span) - span))
		}
	case *array.MapBuilder:
		// Empty maps, null values, unique keys.
		b.Append(true)
		if r.IntN(6) == 0 {
			break
		}
		item := dt.(*arrow.MapType).ItemType()
		seen := map[string]bool{}
		for range 1 + r.IntN(4) {
			k := randString(r, -1)
			if seen[k] {
				continue
			}
			seen[k] = true
			switch kb := b.KeyBuilder().(type) {
			case *array.StringBuilder:
				kb.Append(k)
			case *array.Int32Builder:
				kb.Append(int32(len(seen)*1000) - r.Int32N(1000))
			default:
				panic("testtables: no generator for map keys of " + dt.String())
			}
			if r.IntN(6) == 0 {
				b.ItemBuilder().AppendNull()
			} else {
				appendValue(b.ItemBuilder(), item, r, -1)
			}
		}
	case *array.ListBuilder:
		// Empty lists and null elements.
		b.Append(true)
		if r.IntN(6) == 0 {
			break
		}
		elem := dt.(*arrow.ListType).Elem()
		for range 1 + r.IntN(5) {
			if r.IntN(6) == 0 {
				b.ValueBuilder().AppendNull()
			} else {
				appendValue(b.ValueBuilder(), elem, r, -1)
			}
		}
	case *array.StructBuilder:
		// Null children.
		b.Append(true)
		for i, cf := range dt.(*arrow.StructType).Fields() {
			if r.IntN(6) == 0 {
				b.FieldBuilder(i).AppendNull()
			} else {
				appendValue(b.FieldBuilder(i), cf.Type, r, -1)
			}
		}
	case *array.Float16Builder:
		e := []float32{0, -1, 65504, -65504, float32(math.Inf(1))}
		if i := pick(len(e)); i >= 0 {
			b.Append(float16.New(e[i]))
		} else {
			b.Append(float16.New(float32(r.NormFloat64() * 100)))
		}
	case *array.Time32Builder: // milliseconds of the day
		e := []arrow.Time32{0, 86_399_999, 1}
		if i := pick(len(e)); i >= 0 {
			b.Append(e[i])
		} else {
			b.Append(arrow.Time32(r.Int32N(86_400_000)))
		}
	case *array.Time64Builder: // micro- or nanoseconds of the day
		day := int64(86_400_000_000)
		if dt.(*arrow.Time64Type).Unit == arrow.Nanosecond {
			day *= 1000
		}
		e := []arrow.Time64{0, arrow.Time64(day - 1), 1, 999, 1001}
		if i := pick(len(e)); i >= 0 {
			b.Append(e[i])
		} else {
			b.Append(arrow.Time64(r.Int64N(day)))
		}
	case *array.Date64Builder: // milliseconds, whole days
		e := []arrow.Date64{0, -86_400_000, 86_400_000}
		if i := pick(len(e)); i >= 0 {
			b.Append(e[i])
		} else {
			b.Append(arrow.Date64((r.Int64N(2*36500) - 36500) * 86_400_000))
		}
	case *array.FixedSizeBinaryBuilder:
		v := make([]byte, dt.(*arrow.FixedSizeBinaryType).ByteWidth)
		for j := range v {
			v[j] = byte(r.Uint32())
		}
		b.Append(v)
	case *array.LargeStringBuilder:
		b.Append(randString(r, edge))
	case *array.Decimal256Builder:
		v := new(big.Int).SetUint64(r.Uint64())
		if r.IntN(2) == 0 {
			v.Neg(v)
		}
		b.Append(decimal256.FromBigInt(v))
	case *array.FixedSizeListBuilder:
		b.Append(true)
		n := int(dt.(*arrow.FixedSizeListType).Len())
		elem := dt.(*arrow.FixedSizeListType).Elem()
		for range n {
			if r.IntN(6) == 0 {
				b.ValueBuilder().AppendNull()
			} else {
				appendValue(b.ValueBuilder(), elem, r, -1)
			}
		}
	case *array.NullBuilder:
		b.AppendNull()
	case *array.DurationBuilder:
		e := []arrow.Duration{0, -1, 1, math.MaxInt64, math.MinInt64 + 1}
		if i := pick(len(e)); i >= 0 {
			b.Append(e[i])
		} else {
			b.Append(arrow.Duration(r.Int64N(1<<50) - 1<<49))
		}
	case *array.LargeListBuilder:
		b.Append(true)
		elem := dt.(*arrow.LargeListType).Elem()
		for range r.IntN(5) {
			if r.IntN(6) == 0 {
				b.ValueBuilder().AppendNull()
			} else {
				appendValue(b.ValueBuilder(), elem, r, -1)
			}
		}
	case *array.BinaryDictionaryBuilder:
		// Few distinct values, so that dictionaries stay small.
		if err := b.AppendString("key-" + strconv.Itoa(r.IntN(30))); err != nil {
			panic(err)
		}
	case *extensions.UUIDBuilder:
		var u [16]byte
		for j := range u {
			u[j] = byte(r.Uint32())
		}
		b.Append(u)
	case *extensions.Bool8Builder:
		b.Append(r.IntN(2) == 0)
	case *array.ExtensionBuilder:
		switch dt.(arrow.ExtensionType).ExtensionName() {
		case "arrow.json":
			b.StorageBuilder().(*array.StringBuilder).Append(`{"k":` + strconv.Itoa(r.IntN(1000)) + `}`)
		default:
			panic("testtables: no generator for " + dt.String())
		}
	default:
		panic("testtables: no generator for " + dt.String())
	}
}

var specialStrings = []string{
	"", "ä", "日本語のテキスト", "🦆 quack", "tab\tand\nnewline", "a'quote\"", strings.Repeat("long-", 60),
}

// randString returns an edge string for small edge values, then a mix of
// low-cardinality keys (so that dictionaries stay small), special strings
// and random strings with multi-byte characters.
func randString(r *rand.Rand, edge int) string {
	if edge >= 0 && edge < len(specialStrings) {
		return specialStrings[edge]
	}
	switch r.IntN(4) {
	case 0:
		return specialStrings[r.IntN(len(specialStrings))]
	case 1:
		return "key-" + strconv.Itoa(r.IntN(40))
	}
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 -_.éüß€中文ёж"
	runes := []rune(alphabet)
	var sb strings.Builder
	for range r.IntN(25) {
		sb.WriteRune(runes[r.IntN(len(runes))])
	}
	return sb.String()
}
