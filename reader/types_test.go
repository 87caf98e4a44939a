package reader_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/sovm/sop-pme/padme"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/writer"
)

// allTypes returns a schema with every Arrow type the writer takes, each
// column nullable with nulls in it, and a record of n deterministic rows
// (row 3 is null in every column).
func allTypes(t testing.TB, n int) (*arrow.Schema, arrow.RecordBatch) {
	id := 0
	f := func(name string, typ arrow.DataType) arrow.Field {
		id++
		return arrow.Field{Name: name, Type: typ, Nullable: true, Metadata: fid(id)}
	}
	tz := func(u arrow.TimeUnit, zone string) arrow.DataType {
		return &arrow.TimestampType{Unit: u, TimeZone: zone}
	}
	fields := []arrow.Field{
		f("i8", arrow.PrimitiveTypes.Int8), f("i16", arrow.PrimitiveTypes.Int16),
		f("i32", arrow.PrimitiveTypes.Int32), f("i64", arrow.PrimitiveTypes.Int64),
		f("u8", arrow.PrimitiveTypes.Uint8), f("u16", arrow.PrimitiveTypes.Uint16),
		f("u32", arrow.PrimitiveTypes.Uint32), f("u64", arrow.PrimitiveTypes.Uint64),
		f("f32", arrow.PrimitiveTypes.Float32), f("f64", arrow.PrimitiveTypes.Float64),
		f("dec18", &arrow.Decimal128Type{Precision: 18, Scale: 3}), f("dec38", &arrow.Decimal128Type{Precision: 38, Scale: 10}),
		f("b", arrow.FixedWidthTypes.Boolean), f("s", arrow.BinaryTypes.String), f("bin", arrow.BinaryTypes.Binary),
		f("d", arrow.FixedWidthTypes.Date32),
		f("ts_ms", tz(arrow.Millisecond, "")), f("ts_us", tz(arrow.Microsecond, "")), f("ts_ns", tz(arrow.Nanosecond, "")),
		f("tstz_ms", tz(arrow.Millisecond, "UTC")), f("tstz_us", tz(arrow.Microsecond, "UTC")), f("tstz_ns", tz(arrow.Nanosecond, "UTC")),
	}
	elem := f("element", arrow.PrimitiveTypes.Int64)
	fields = append(fields, f("l_i64", arrow.ListOfField(elem)))
	selem := f("element", arrow.BinaryTypes.String)
	fields = append(fields, f("l_s", arrow.ListOfField(selem)))
	a, b := f("a", arrow.PrimitiveTypes.Int64), f("b", arrow.BinaryTypes.String)
	fields = append(fields, f("st", arrow.StructOf(a, b)))
	key := f("key", arrow.BinaryTypes.String)
	key.Nullable = false
	val := f("value", arrow.PrimitiveTypes.Int64)
	fields = append(fields, f("m", arrow.MapOfFields(key, val)))
	schema := arrow.NewSchema(fields, nil)

	bld := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer bld.Release()
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range n {
		if i == 3 || rng.IntN(10) == 0 {
			for j := range bld.Fields() {
				if i == 3 || rng.IntN(3) == 0 {
					bld.Field(j).AppendNull()
					continue
				}
				appendValue(bld.Field(j), rng, i)
			}
			continue
		}
		for j := range bld.Fields() {
			appendValue(bld.Field(j), rng, i)
		}
	}
	return schema, bld.NewRecordBatch()
}

func appendValue(b array.Builder, rng *rand.Rand, i int) {
	switch b := b.(type) {
	case *array.Int8Builder:
		b.Append(int8(rng.Uint32()))
	case *array.Int16Builder:
		b.Append(int16(rng.Uint32()))
	case *array.Int32Builder:
		b.Append(int32(rng.Uint32()))
	case *array.Int64Builder:
		b.Append(int64(rng.Uint64()))
	case *array.Uint8Builder:
		b.Append(uint8(rng.Uint32()))
	case *array.Uint16Builder:
		b.Append(uint16(rng.Uint32()))
	case *array.Uint32Builder:
		b.Append(rng.Uint32())
	case *array.Uint64Builder:
		b.Append(rng.Uint64() | 1<<63)
	case *array.Float32Builder:
		b.Append([]float32{float32(rng.NormFloat64()), float32(math.Inf(-1)), 0, -0.5}[i%4])
	case *array.Float64Builder:
		b.Append([]float64{rng.NormFloat64(), math.Inf(1), math.MaxFloat64, -1e-300}[i%4])
	case *array.Decimal128Builder:
		p := b.Type().(*arrow.Decimal128Type).Precision
		v := decimal128.FromI64(int64(rng.Uint64() % 1e15))
		if p == 38 {
			v = decimal128.New(int64(rng.Uint64()%(1<<60)), rng.Uint64())
			if i%2 == 0 {
				v = v.Negate()
			}
		}
		b.Append(v)
	case *array.BooleanBuilder:
		b.Append(rng.IntN(2) == 0)
	case *array.StringBuilder:
		b.Append([]string{"", "ascii", "ünïcødé ✓", fmt.Sprintf("row %d", i)}[i%4])
	case *array.BinaryBuilder:
		b.Append([][]byte{{}, {0, 1, 2, 255}, []byte(fmt.Sprint(i))}[i%3])
	case *array.Date32Builder:
		b.Append(arrow.Date32(rng.IntN(40000) - 10000))
	case *array.TimestampBuilder:
		b.Append(arrow.Timestamp(int64(rng.Uint64()%(1<<52)) - 1<<50))
	case *array.ListBuilder:
		if i%5 == 0 {
			b.Append(true) // an empty list
			return
		}
		b.Append(true)
		for k := range i % 4 {
			if k == 2 {
				b.ValueBuilder().AppendNull()
				continue
			}
			appendValue(b.ValueBuilder(), rng, i+k)
		}
	case *array.StructBuilder:
		b.Append(true)
		for k := range b.NumField() {
			if (i+k)%7 == 0 {
				b.FieldBuilder(k).AppendNull()
			} else {
				appendValue(b.FieldBuilder(k), rng, i)
			}
		}
	case *array.MapBuilder:
		b.Append(true)
		for k := range i % 3 {
			b.KeyBuilder().(*array.StringBuilder).Append(fmt.Sprintf("k%d", k))
			appendValue(b.ItemBuilder(), rng, i)
		}
	default:
		panic(fmt.Sprintf("no generator for %T", b))
	}
}

// readAll scans an object and returns its columns, each concatenated.
func readAll(t testing.TB, r *reader.Reader, opts ...reader.ScanOption) []arrow.Array {
	t.Helper()
	rr, err := r.Scan(context.Background(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Release()
	var chunks [][]arrow.Array
	for rr.Next() {
		rec := rr.RecordBatch()
		if chunks == nil {
			chunks = make([][]arrow.Array, rec.NumCols())
		}
		for j := range chunks {
			rec.Column(j).Retain()
			chunks[j] = append(chunks[j], rec.Column(j))
		}
	}
	if err := rr.Err(); err != nil {
		t.Fatal(err)
	}
	out := make([]arrow.Array, len(chunks))
	for j := range chunks {
		var err error
		if out[j], err = array.Concatenate(chunks[j], memory.DefaultAllocator); err != nil {
			t.Fatal(err)
		}
		for _, c := range chunks[j] {
			c.Release()
		}
	}
	return out
}

// TestRoundTripTypes writes every listed type under several layouts and
// reads it back through the verified reader: every value must be equal.
func TestRoundTripTypes(t *testing.T) {
	t.Parallel()
	const n = 3000
	schema, rec := allTypes(t, n)
	defer rec.Release()
	for _, tc := range []struct {
		name string
		opts []writer.Option
	}{
		{"zstd", nil},
		{"snappy small pages", []writer.Option{writer.WithCodec(writer.Snappy), writer.WithDataPageSize(2 << 10)}},
		{"v2 small pages", []writer.Option{writer.WithCodec(writer.Uncompressed), writer.WithDataPageVersion(writer.DataPageV2), writer.WithDataPageSize(2 << 10)}},
		{"uncompressed plain row groups", []writer.Option{writer.WithCodec(writer.Uncompressed), writer.WithDictionary(false), writer.WithRowGroupRows(700)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			st := newMemStore()
			obj := writeObject(t, st, schema, rec, tc.opts...)
			r, err := reader.Open(ctx, st, obj.StorageID, keys{obj.StorageID: obj.DEK})
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range r.Schema().Metadata().Keys() {
				if strings.HasPrefix(k, padme.PadKey) {
					t.Fatalf("the schema shows the reserved key %q", k)
				}
			}
			if !r.Schema().Equal(schema) {
				t.Fatalf("schema:\n%v\nwant\n%v", r.Schema(), schema)
			}
			cols := readAll(t, r)
			for j, c := range cols {
				if !array.Equal(c, rec.Column(j)) {
					t.Errorf("column %s differs", schema.Field(j).Name)
				}
				c.Release()
			}
			// Projection by nested field ID: the struct's child b only.
			bID := int32(0)
			for _, fd := range schema.Field(schema.FieldIndices("st")[0]).Type.(*arrow.StructType).Fields() {
				if fd.Name == "b" {
					v, _ := fd.Metadata.GetValue(writer.FieldIDKey)
					fmt.Sscan(v, &bID)
				}
			}
			proj := readAll(t, r, reader.WithFields(bID))
			if len(proj) != 1 || proj[0].Len() != n {
				t.Fatalf("projection to st.b: %d columns", len(proj))
			}
			proj[0].Release()
		})
	}
}
