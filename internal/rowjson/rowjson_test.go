package rowjson_test

import (
	"math"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/sovm/sop-pme/internal/rowjson"
)

// TestForms pins the text of each kind of value: exact integers (also
// inside lists, where a float64 detour would lose digits), floats with
// their specials, decimals with their scale, timestamps with the unit's
// digits and a Z only for instants, maps in stored order.
func TestForms(t *testing.T) {
	t.Parallel()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "u", Type: arrow.PrimitiveTypes.Uint64},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64},
		{Name: "g", Type: arrow.PrimitiveTypes.Float32},
		{Name: "dec", Type: &arrow.Decimal128Type{Precision: 9, Scale: 4}},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}},
		{Name: "tz", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32},
		{Name: "bin", Type: arrow.BinaryTypes.Binary},
		{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)},
		{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64)},
		{Name: "s", Type: arrow.StructOf(arrow.Field{Name: "q\"", Type: arrow.BinaryTypes.String, Nullable: true})},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for row, f := range []float64{math.NaN(), math.Copysign(0, -1)} {
		if row == 0 {
			b.Field(0).(*array.Int64Builder).Append(math.MinInt64)
		} else {
			b.Field(0).AppendNull()
		}
		b.Field(1).(*array.Uint64Builder).Append(math.MaxUint64)
		b.Field(2).(*array.Float64Builder).Append(f)
		b.Field(3).(*array.Float32Builder).Append(float32(math.Inf(row*2 - 1)))
		b.Field(4).(*array.Decimal128Builder).Append(decimal128.FromI64(-1))
		b.Field(5).(*array.TimestampBuilder).Append(-1)
		b.Field(6).(*array.TimestampBuilder).Append(1)
		b.Field(7).(*array.Date32Builder).Append(-1)
		b.Field(8).(*array.BinaryBuilder).Append([]byte{0xff, 0})
		lb := b.Field(9).(*array.ListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.Int64Builder).Append(4454785892018296281)
		mb := b.Field(10).(*array.MapBuilder)
		mb.Append(true)
		mb.KeyBuilder().(*array.StringBuilder).Append("z")
		mb.ItemBuilder().(*array.Int64Builder).AppendNull()
		mb.KeyBuilder().(*array.StringBuilder).Append("a")
		mb.ItemBuilder().(*array.Int64Builder).Append(1)
		sb := b.Field(11).(*array.StructBuilder)
		sb.Append(true)
		sb.FieldBuilder(0).(*array.StringBuilder).Append("tab\t")
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	got, err := rowjson.AppendRows(nil, rec)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		`{"i":-9223372036854775808,"u":18446744073709551615,"f":"NaN","g":"-Inf","dec":"-0.0001","ts":"1969-12-31T23:59:59.999999","tz":"1970-01-01T00:00:00.000000001Z","d":"1969-12-31","bin":"/wA=","l":[4454785892018296281],"m":[{"key":"z","value":null},{"key":"a","value":1}],"s":{"q\"":"tab\t"}}`,
		`{"i":null,"u":18446744073709551615,"f":"-0","g":"+Inf","dec":"-0.0001","ts":"1969-12-31T23:59:59.999999","tz":"1970-01-01T00:00:00.000000001Z","d":"1969-12-31","bin":"/wA=","l":[4454785892018296281],"m":[{"key":"z","value":null},{"key":"a","value":1}],"s":{"q\"":"tab\t"}}`,
		"",
	}, "\n")
	if string(got) != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}
