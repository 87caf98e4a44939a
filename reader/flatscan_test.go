package reader_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/sovm/sop-pme/internal/testkit/testtables"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/writer"
)

// flatRecord returns n rows of every type the fast path decodes, a
// boolean and a decimal of 30 digits (which the writer stores as a
// FIXED_LEN_BYTE_ARRAY) included, with nulls.
func flatRecord(n int) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "i64", Type: arrow.PrimitiveTypes.Int64},
		{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "f64", Type: arrow.PrimitiveTypes.Float64},
		{Name: "date", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "dec", Type: &arrow.Decimal128Type{Precision: 30, Scale: 2}, Nullable: true}, // FIXED_LEN_BYTE_ARRAY (13 bytes)
		{Name: "flag", Type: &arrow.StringType{}, Nullable: true},
		{Name: "comment", Type: arrow.BinaryTypes.String},
		{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	}, nil)
	fields := schema.Fields()
	for i := range fields {
		fields[i].Metadata = arrow.NewMetadata([]string{writer.FieldIDKey}, []string{fmt.Sprint(i + 1)})
	}
	schema = arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range n {
		null := rng.IntN(9) == 0
		if null {
			for _, j := range []int{0, 2, 4, 5, 6, 7, 9, 10} {
				b.Field(j).AppendNull()
			}
		} else {
			b.Field(0).(*array.Int32Builder).Append(int32(rng.IntN(100)))
			b.Field(2).(*array.Float32Builder).Append(rng.Float32())
			b.Field(4).(*array.Date32Builder).Append(arrow.Date32(9000 + rng.IntN(2000)))
			b.Field(5).(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000_000_000 + rng.Int64N(1e12)))
			b.Field(6).(*array.Decimal128Builder).Append(decimal128.FromI64(rng.Int64N(10_000_000)))
			b.Field(7).(*array.StringBuilder).Append([]string{"A", "N", "R"}[rng.IntN(3)])
			b.Field(9).(*array.BinaryBuilder).Append([]byte(fmt.Sprint(rng.IntN(500))))
			b.Field(10).(*array.BooleanBuilder).Append(rng.IntN(2) == 0)
		}
		b.Field(1).(*array.Int64Builder).Append(rng.Int64())
		b.Field(3).(*array.Float64Builder).Append(float64(rng.IntN(1000)) / 8)
		b.Field(8).(*array.StringBuilder).Append(fmt.Sprintf("comment %d %x", i, rng.Int64()))
	}
	return b.NewRecordBatch()
}

// columnsOf reads rr whole and returns each column's values, dictionary
// arrays as plain ones.
func columnsOf(t *testing.T, rr array.RecordReader) []arrow.Array {
	t.Helper()
	defer rr.Release()
	var parts [][]arrow.Array
	for rr.Next() {
		rec := rr.RecordBatch()
		if parts == nil {
			parts = make([][]arrow.Array, rec.NumCols())
		}
		for i, c := range rec.Columns() {
			parts[i] = append(parts[i], plainArray(t, c))
		}
	}
	if err := rr.Err(); err != nil {
		t.Fatal(err)
	}
	out := make([]arrow.Array, len(parts))
	for i, p := range parts {
		a, err := array.Concatenate(p, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range p {
			x.Release()
		}
		out[i] = a
	}
	return out
}

// plainArray returns a dictionary array's values as a plain array, or a
// as it is, retained (testtables.Plain).
func plainArray(t *testing.T, a arrow.Array) arrow.Array {
	t.Helper()
	p, err := testtables.Plain(a)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFlatScan: a scan by the fast path (package flatdec) returns the
// values and types arrow-go's decoder does, for objects written with
// every codec and page version, with and without dictionaries, for every
// projection and the scan options that change the types (WithDictionaries,
// WithNarrowDecimals), sequential and parallel; and it is the fast path
// that decodes the row groups (the decimal the writer stores as a
// FIXED_LEN_BYTE_ARRAY included).
func TestFlatScan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rec := flatRecord(5000)
	t.Cleanup(rec.Release)
	for _, codec := range []writer.Codec{writer.Zstd, writer.Snappy, writer.Uncompressed} {
		for _, v := range []writer.DataPageVersion{writer.DataPageV1, writer.DataPageV2} {
			for _, dict := range []bool{true, false} {
				if v == writer.DataPageV2 && codec != writer.Uncompressed {
					continue // the writer writes V2 pages uncompressed only
				}
				t.Run(fmt.Sprintf("%s/v%d/dict=%t", codec, v, dict), func(t *testing.T) {
					t.Parallel()
					st := newMemStore()
					obj := writeObject(t, st, rec.Schema(), rec, writer.WithCodec(codec), writer.WithDataPageVersion(v),
						writer.WithDictionary(dict), writer.WithRowGroupRows(1200), writer.WithDataPageSize(2<<10))
					k := keys{obj.StorageID: obj.DEK}
					r, err := reader.Open(ctx, st, obj.StorageID, k)
					if err != nil {
						t.Fatal(err)
					}
					noBool, noDec := []int32{}, []int32{}
					for _, f := range r.Schema().Fields() {
						if f.Name != "ok" && f.Name != "dec" { // BOOLEAN and FIXED_LEN_BYTE_ARRAY
							noBool = append(noBool, fieldID(t, f))
						}
						if f.Name != "dec" {
							noDec = append(noDec, fieldID(t, f))
						}
					}
					for _, c := range []struct {
						name string
						opts []reader.ScanOption
						flat int // 1: row groups by the fast path, 0: none, -1: either
					}{
						{"all", nil, 1},
						// Plain pages in a chunk read as a dictionary send its
						// row group to arrow-go (flatdec.ErrUnsupported).
						{"anydict", []reader.ScanOption{reader.WithFields(noBool...), reader.WithAnyDictionaries(), reader.WithParallelism(1)}, -1},
						{"decimal", []reader.ScanOption{reader.WithFields(append(noBool, fieldID(t, r.Schema().Field(6)))...), reader.WithNarrowDecimals()}, 1},
						{"flat", []reader.ScanOption{reader.WithFields(noBool...)}, 1},
						{"bools", []reader.ScanOption{reader.WithFields(noDec...)}, 1},
						{"bool", []reader.ScanOption{reader.WithFields(fieldID(t, r.Schema().Field(0)), fieldID(t, r.Schema().Field(r.Schema().FieldIndices("ok")[0])))}, 1},
						{"one", []reader.ScanOption{reader.WithFields(noBool[3])}, 1},
						{"dict", []reader.ScanOption{reader.WithFields(noBool...), reader.WithDictionaries()}, 1},
						{"narrow", []reader.ScanOption{reader.WithFields(noBool...), reader.WithNarrowDecimals(), reader.WithDictionaries()}, 1},
						{"parallel", []reader.ScanOption{reader.WithFields(noBool...), reader.WithNarrowDecimals(), reader.WithParallelism(3), reader.WithBatchSize(700)}, 1},
						{"sequential", []reader.ScanOption{reader.WithFields(noBool...), reader.WithParallelism(1), reader.WithBatchSize(333)}, 1},
						{"rowgroups", []reader.ScanOption{reader.WithFields(noBool...), reader.WithRowGroups(3, 1), reader.WithParallelism(1)}, 1},
					} {
						flat, _ := scanBothWays(t, r, c.name, c.opts)
						if (c.flat == 1 && flat == 0) || (c.flat == 0 && flat != 0) {
							t.Errorf("%s: %d row groups by the fast path", c.name, flat)
						}
					}
				})
			}
		}
	}
}

// TestFlatScanMixed: in a scan whose row groups differ, each is decoded
// by the fast path or, if one of its chunks has a page of a kind flatdec
// does not decode, by arrow-go, before any of it is decoded; the values are
// arrow-go's either way. Here a string column read as a dictionary
// (WithAnyDictionaries) whose chunks in the last two row groups outgrow
// the dictionary page limit (16 KiB here) halfway and go on in plain
// pages: a Parquet file arrow-go writes so, sealed byte for byte.
func TestFlatScanMixed(t *testing.T) {
	t.Parallel()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	long := make([]byte, 200)
	for i := range 4000 {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		switch {
		case i%13 == 0:
			b.Field(1).AppendNull()
		case i < 2000 || i%1000 < 500:
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprint("v", i%7))
		default:
			copy(long, fmt.Sprintf("%08d", i))
			b.Field(1).(*array.StringBuilder).Append(string(long))
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	r := sealArrowFile(t, rec, parquet.WithCompression(compress.Codecs.Snappy), parquet.WithDictionaryPageSizeLimit(16<<10),
		parquet.WithBatchSize(100), parquet.WithMaxRowGroupLength(1000), parquet.WithDataPageSize(1<<10))
	for _, par := range []int{1, 2} {
		opts := []reader.ScanOption{reader.WithAnyDictionaries(), reader.WithParallelism(par), reader.WithBatchSize(300)}
		flat, _ := scanBothWays(t, r, fmt.Sprint("parallelism ", par), opts)
		if flat != 2 {
			t.Errorf("parallelism %d: %d of 4 row groups by the fast path, want the first 2", par, flat)
		}
	}
}

// TestFlatScanIntDecimals: decimals stored as INT32 and INT64 (as
// parquet-rs, DuckDB and TPC-H's generator write them) go by the fast path
// whether the scan reads them as decimal128 (the default) or narrow
// (WithNarrowDecimals), with the values and types arrow-go's decoder gives.
func TestFlatScanIntDecimals(t *testing.T) {
	t.Parallel()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "d9", Type: &arrow.Decimal128Type{Precision: 9, Scale: 2}, Nullable: true},
		{Name: "d15", Type: &arrow.Decimal128Type{Precision: 15, Scale: 2}},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range 3000 {
		if i%11 == 3 {
			b.Field(0).AppendNull()
		} else {
			b.Field(0).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(i*37%20001) - 10000))
		}
		b.Field(1).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(i)*-123_456_789 + 7))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	r := sealArrowFile(t, rec, parquet.WithCompression(compress.Codecs.Snappy), parquet.WithStoreDecimalAsInteger(true),
		parquet.WithMaxRowGroupLength(1000), parquet.WithDataPageSize(1<<10))
	for name, opts := range map[string][]reader.ScanOption{
		"default":  {reader.WithParallelism(1), reader.WithBatchSize(300)},
		"parallel": {reader.WithParallelism(2)},
		"narrow":   {reader.WithNarrowDecimals()},
	} {
		flat, sc := scanBothWays(t, r, name, opts)
		if name != "narrow" && sc.Field(1).Type.ID() != arrow.DECIMAL128 {
			t.Errorf("%s: read as %s", name, sc.Field(1).Type)
		}
		if flat != 3 {
			t.Errorf("%s: %d of 3 row groups by the fast path", name, flat)
		}
	}
}

// sealArrowFile writes rec as a Parquet file by arrow-go's writer with
// props (row groups of at most 1000 rows unless props say fewer), seals it
// byte for byte into a store in memory, and opens the object.
func sealArrowFile(t *testing.T, rec arrow.RecordBatch, props ...parquet.WriterProperty) *reader.Reader {
	t.Helper()
	ctx := context.Background()
	var plain bytes.Buffer
	tbl := array.NewTableFromRecords(rec.Schema(), []arrow.RecordBatch{rec})
	defer tbl.Release()
	if err := pqarrow.WriteTable(tbl, &plain, 1000, parquet.NewWriterProperties(props...), pqarrow.DefaultWriterProps()); err != nil {
		t.Fatal(err)
	}
	st := newMemStore()
	obj, err := writer.SealFile(ctx, st, bytes.NewReader(plain.Bytes()), int64(plain.Len()), writer.WithAssignFieldIDs())
	if err != nil {
		t.Fatal(err)
	}
	r, err := reader.Open(ctx, st, obj.StorageID, keys{obj.StorageID: obj.DEK})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// scanBothWays scans r with opts, by the fast path where it applies and by
// arrow-go's decoder alone, and fails t unless both give one schema and
// the same values; it returns the row groups the fast path decoded, and
// the schema.
func scanBothWays(t *testing.T, r *reader.Reader, name string, opts []reader.ScanOption) (int64, *arrow.Schema) {
	t.Helper()
	ctx := context.Background()
	before := reader.FlatRowGroups(r)
	rr, err := r.Scan(ctx, opts...)
	if err != nil {
		t.Fatal(err)
	}
	sc := rr.Schema()
	got := columnsOf(t, rr)
	flat := reader.FlatRowGroups(r) - before
	rr, err = r.Scan(ctx, append(opts[:len(opts):len(opts)], reader.WithArrowDecoder())...)
	if err != nil {
		t.Fatal(err)
	}
	if !sc.Equal(rr.Schema()) {
		t.Errorf("%s: schema %s, arrow-go's %s", name, sc, rr.Schema())
	}
	want := columnsOf(t, rr)
	if len(got) != len(want) {
		t.Fatalf("%s: %d columns, arrow-go %d", name, len(got), len(want))
	}
	for i := range got {
		if !array.Equal(got[i], want[i]) {
			t.Errorf("%s: column %s differs from arrow-go's", name, sc.Field(i).Name)
		}
		got[i].Release()
		want[i].Release()
	}
	return flat, sc
}
