package flatdec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/sovm/sop-pme/internal/testkit/testtables"
)

// testTable returns a table of every type the package decodes, n rows,
// with nulls in the nullable columns and few distinct strings (so that
// dictionaries stay small) next to many (so that a dictionary may fill
// and fall back to plain pages).
func testTable(t testing.TB, n int) arrow.Table {
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "i64", Type: arrow.PrimitiveTypes.Int64},
		{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "f64", Type: arrow.PrimitiveTypes.Float64},
		{Name: "date", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "many", Type: arrow.BinaryTypes.String},
		{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "allnull", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "flag", Type: arrow.FixedWidthTypes.Boolean},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	rng := rand.New(rand.NewPCG(1, 2))
	rngB := rand.New(rand.NewPCG(3, 4)) // the booleans' own, so the other columns stay as they were
	for i := range n {
		null := rng.IntN(7) == 0
		if null {
			b.Field(0).(*array.Int32Builder).AppendNull()
			b.Field(2).(*array.Float32Builder).AppendNull()
			b.Field(4).(*array.Date32Builder).AppendNull()
			b.Field(5).(*array.StringBuilder).AppendNull()
			b.Field(7).(*array.BinaryBuilder).AppendNull()
			b.Field(9).(*array.BooleanBuilder).AppendNull()
		} else {
			b.Field(0).(*array.Int32Builder).Append(int32(rng.IntN(50)) - 25)
			b.Field(2).(*array.Float32Builder).Append(rng.Float32())
			b.Field(4).(*array.Date32Builder).Append(arrow.Date32(8000 + rng.IntN(3000)))
			b.Field(5).(*array.StringBuilder).Append(fmt.Sprintf("v%d", rng.IntN(20)))
			b.Field(7).(*array.BinaryBuilder).Append([]byte(fmt.Sprintf("%x", rng.IntN(1000))))
			b.Field(9).(*array.BooleanBuilder).Append(rngB.IntN(3) == 0)
		}
		// Runs of one value, then random bits: RLE and bit-packed runs.
		b.Field(10).(*array.BooleanBuilder).Append(i%1000 < 400 || rngB.IntN(2) == 0)
		b.Field(1).(*array.Int64Builder).Append(rng.Int64())
		b.Field(3).(*array.Float64Builder).Append(float64(rng.IntN(100)) / 4)
		b.Field(6).(*array.StringBuilder).Append(fmt.Sprintf("row %d %s", i, bytes.Repeat([]byte("x"), rng.IntN(30))))
		b.Field(8).(*array.Int64Builder).AppendNull()
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return array.NewTableFromRecords(schema, []arrow.RecordBatch{rec})
}

// variant is one way arrow-go's writer may write the table.
type variant struct {
	name  string
	props []parquet.WriterProperty
}

func variants() []variant {
	var out []variant
	for _, codec := range []compress.Compression{compress.Codecs.Uncompressed, compress.Codecs.Snappy, compress.Codecs.Zstd, compress.Codecs.Gzip} {
		for _, v2 := range []bool{false, true} {
			for _, dict := range []bool{true, false} {
				ver := parquet.DataPageV1
				if v2 {
					ver = parquet.DataPageV2
				}
				props := []parquet.WriterProperty{
					parquet.WithCompression(codec), parquet.WithDataPageVersion(ver), parquet.WithDictionaryDefault(dict),
					parquet.WithDataPageSize(4 << 10), parquet.WithDictionaryPageSizeLimit(16 << 10),
					parquet.WithMaxRowGroupLength(3000), parquet.WithBatchSize(500),
				}
				if v2 {
					// Booleans RLE-encoded (as parquet-rs writes them in
					// V2 pages; arrow-go writes them PLAIN unless told).
					props = append(props, parquet.WithEncodingFor("ok", parquet.Encodings.RLE), parquet.WithEncodingFor("flag", parquet.Encodings.RLE))
				}
				out = append(out, variant{name: fmt.Sprintf("%s/v2=%t/dict=%t", codec, v2, dict), props: props})
			}
		}
	}
	return out
}

// write writes tbl as Parquet with props.
func write(t testing.TB, tbl arrow.Table, props []parquet.WriterProperty) []byte {
	var buf bytes.Buffer
	if err := pqarrow.WriteTable(tbl, &buf, 3000, parquet.NewWriterProperties(props...), pqarrow.DefaultWriterProps()); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// chunkOf returns the bytes of column col's chunk in row group rg of the
// plain Parquet file raw, and its description with type typ.
func chunkOf(t testing.TB, raw []byte, rg, col int, typ arrow.DataType) ([]byte, Column) {
	pf, err := file.NewParquetReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	cc, err := pf.MetaData().RowGroup(rg).ColumnChunk(col)
	if err != nil {
		t.Fatal(err)
	}
	start := cc.DataPageOffset()
	if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 {
		start = cc.DictionaryPageOffset()
	}
	sc := pf.MetaData().Schema.Column(col)
	return raw[start : start+cc.TotalCompressedSize()], Column{
		Physical: sc.PhysicalType(), MaxDef: sc.MaxDefinitionLevel(), MaxRep: sc.MaxRepetitionLevel(),
		Codec: cc.Compression(), Values: cc.NumValues(), Type: typ, TypeLength: sc.TypeLength(),
	}
}

// decodeAll decodes a chunk in batches of batch values.
func decodeAll(t testing.TB, chunk []byte, c Column, batch int, mem memory.Allocator) []arrow.Array {
	if err := Check(c, chunk); err != nil {
		t.Fatalf("Check: %v", err)
	}
	d, err := New(c, chunk, mem, 1<<26)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Release()
	var out []arrow.Array
	for d.Left() > 0 {
		data, err := d.Read(int(min(int64(batch), d.Left())))
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		out = append(out, array.MakeFromData(data))
		data.Release()
	}
	return out
}

// plainOf returns a dictionary array's values as a plain array, or a as
// it is, retained (testtables.Plain).
func plainOf(t testing.TB, a arrow.Array) arrow.Array {
	t.Helper()
	p, err := testtables.Plain(a)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDifferential: every chunk arrow-go's writer writes of the test table,
// in every codec, page version and with or without dictionaries, decodes
// to the values arrow-go's reader reads, in batches of several sizes, and
// as dictionary arrays where the chunk is dictionary-encoded throughout.
func TestDifferential(t *testing.T) {
	t.Parallel()
	tbl := testTable(t, 7000)
	t.Cleanup(tbl.Release)
	for _, v := range variants() {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			raw := write(t, tbl, v.props)
			got, err := pqarrow.ReadTable(context.Background(), bytes.NewReader(raw), nil, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
			if err != nil {
				t.Fatal(err)
			}
			defer got.Release()
			pf, err := file.NewParquetReader(bytes.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			nrg := pf.NumRowGroups()
			pf.Close()
			if nrg < 2 {
				t.Fatalf("%d row groups", nrg)
			}
			checked := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer checked.AssertSize(t, 0)
			mem := dirty{checked}
			var row int64
			dicts := 0
			defer func() {
				if dict := v.props != nil && dictVariant(v.name); dict && dicts == 0 {
					t.Error("no chunk decoded as a dictionary")
				}
			}()
			for rg := range nrg {
				var rows int64
				for col := range int(got.NumCols()) {
					typ := got.Column(col).DataType()
					chunk, c := chunkOf(t, raw, rg, col, typ)
					rows = c.Values
					want := array.NewChunkedSlice(got.Column(col).Data(), row, row+rows)
					wantArr, err := array.Concatenate(want.Chunks(), memory.DefaultAllocator)
					want.Release()
					if err != nil {
						t.Fatal(err)
					}
					types := []arrow.DataType{typ}
					if typ.ID() == arrow.STRING || typ.ID() == arrow.BINARY {
						dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: typ}
						if Check(Column{Physical: c.Physical, MaxDef: c.MaxDef, Codec: c.Codec, Values: c.Values, Type: dt}, chunk) == nil {
							types = append(types, dt)
							dicts++
						}
					}
					for _, typ := range types {
						c.Type = typ
						for _, batch := range []int{1, 333, 1024, 5000} {
							arrs := decodeAll(t, chunk, c, batch, mem)
							var plain []arrow.Array
							for _, a := range arrs {
								plain = append(plain, plainOf(t, a))
								a.Release()
							}
							all, err := array.Concatenate(plain, memory.DefaultAllocator)
							if err != nil {
								t.Fatal(err)
							}
							for _, a := range plain {
								a.Release()
							}
							if !array.Equal(all, wantArr) {
								t.Errorf("row group %d column %s as %s in batches of %d: values differ", rg, got.Schema().Field(col).Name, typ, batch)
							}
							all.Release()
						}
					}
					wantArr.Release()
				}
				row += rows
			}
		})
	}
}

// TestDecimal128: INT32 and INT64 decimals, which arrow-go reads as
// decimal128 unless told otherwise, decode to arrow-go's values as
// decimal128, negative ones and nulls included, in every codec, page
// version and with or without dictionaries.
func TestDecimal128(t *testing.T) {
	t.Parallel()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "d9", Type: &arrow.Decimal128Type{Precision: 9, Scale: 2}, Nullable: true},
		{Name: "d15", Type: &arrow.Decimal128Type{Precision: 15, Scale: 2}, Nullable: true},
		{Name: "d18", Type: &arrow.Decimal128Type{Precision: 18, Scale: 0}},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 6000 {
		if i%9 == 4 {
			b.Field(0).AppendNull()
			b.Field(1).AppendNull()
		} else {
			b.Field(0).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(rng.IntN(2_000_000)) - 1_000_000))
			b.Field(1).(*array.Decimal128Builder).Append(decimal128.FromI64(rng.Int64N(2e14) - 1e14))
		}
		b.Field(2).(*array.Decimal128Builder).Append(decimal128.FromI64([]int64{-999_999_999_999_999_999, -1, 0, 999_999_999_999_999_999}[i%4] / int64(1+i%3)))
	}
	decodesAsArrowGo(t, b, []parquet.WriterProperty{parquet.WithStoreDecimalAsInteger(true)}, []int{1, 1000, 3000}, func(t *testing.T, col int, c Column) {
		if want := []parquet.Type{parquet.Types.Int32, parquet.Types.Int64, parquet.Types.Int64}[col]; c.Physical != want {
			t.Fatalf("column %d stored as %s, want %s", col, c.Physical, want)
		}
	})
}

// decodesAsArrowGo writes the record b builds in every variant (with
// extra properties), and checks, in each, that each chunk of its first
// two row groups decodes, in batches of each size, to the values arrow-go's
// reader reads, in arrow-go's type, and that Skip takes it; check is
// called on each chunk's description first. It releases b.
func decodesAsArrowGo(t *testing.T, b *array.RecordBuilder, extra []parquet.WriterProperty, batches []int, check func(t *testing.T, col int, c Column)) {
	t.Helper()
	rec := b.NewRecordBatch()
	b.Release()
	tbl := array.NewTableFromRecords(rec.Schema(), []arrow.RecordBatch{rec})
	rec.Release()
	t.Cleanup(tbl.Release)
	for _, v := range variants() {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			decodesAsArrowGoIn(t, tbl, append(v.props[:len(v.props):len(v.props)], extra...), batches, check)
		})
	}
}

// decodesAsArrowGoIn is decodesAsArrowGo's check of tbl written with props.
func decodesAsArrowGoIn(t *testing.T, tbl arrow.Table, props []parquet.WriterProperty, batches []int, check func(t *testing.T, col int, c Column)) {
	raw := write(t, tbl, props)
	got, err := pqarrow.ReadTable(context.Background(), bytes.NewReader(raw), nil, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Release()
	checked := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer checked.AssertSize(t, 0)
	for col := range int(got.NumCols()) {
		typ := got.Column(col).DataType()
		var row int64
		for rg := range 2 {
			chunk, c := chunkOf(t, raw, rg, col, typ)
			check(t, col, c)
			want := array.NewChunkedSlice(got.Column(col).Data(), row, row+c.Values)
			wantArr, err := array.Concatenate(want.Chunks(), memory.DefaultAllocator)
			want.Release()
			if err != nil {
				t.Fatal(err)
			}
			for _, batch := range batches {
				arrs := decodeAll(t, chunk, c, batch, dirty{checked})
				all, err := array.Concatenate(arrs, memory.DefaultAllocator)
				if err != nil {
					t.Fatal(err)
				}
				for _, a := range arrs {
					a.Release()
				}
				if !array.Equal(all, wantArr) {
					t.Errorf("row group %d column %s (%s, %d bytes) in batches of %d: values differ", rg, got.Schema().Field(col).Name, c.Physical, c.TypeLength, batch)
				}
				all.Release()
			}
			if _, err := skipAll(c, chunk, 1000, 1<<26); err != nil {
				t.Errorf("Skip: %v", err)
			}
			wantArr.Release()
			row += c.Values
		}
	}
}

// TestDictionaryFallback: a chunk whose dictionary filled up midway
// (plain pages after dictionary ones) decodes as a plain array, and is
// not supported as a dictionary array.
func TestDictionaryFallback(t *testing.T) {
	t.Parallel()
	tbl := testTable(t, 3000)
	defer tbl.Release()
	raw := write(t, tbl, variants()[0].props)
	chunk, c := chunkOf(t, raw, 0, 6, arrow.BinaryTypes.String) // "many"
	if err := Check(c, chunk); err != nil {
		t.Fatal(err)
	}
	c.Type = &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	if err := Check(c, chunk); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("as a dictionary: %v, want ErrUnsupported", err)
	}
}

// TestSupported: what the package does not decode is ErrUnsupported.
func TestSupported(t *testing.T) {
	t.Parallel()
	for _, ok := range []Column{
		{Physical: parquet.Types.Int64, MaxDef: 1, Codec: compress.Codecs.Snappy, Type: arrow.PrimitiveTypes.Int64},
		{Physical: parquet.Types.Boolean, MaxDef: 1, Codec: compress.Codecs.Zstd, Type: arrow.FixedWidthTypes.Boolean},
	} {
		if err := Supported(ok); err != nil {
			t.Fatal(err)
		}
	}
	for name, c := range map[string]Column{
		"repeated":        {Physical: parquet.Types.Int64, MaxDef: 1, MaxRep: 1, Type: arrow.PrimitiveTypes.Int64},
		"nested":          {Physical: parquet.Types.Int64, MaxDef: 2, Type: arrow.PrimitiveTypes.Int64},
		"widening":        {Physical: parquet.Types.Int32, Type: arrow.PrimitiveTypes.Int64},
		"decimal256":      {Physical: parquet.Types.Int64, Type: &arrow.Decimal256Type{Precision: 15, Scale: 2}},
		"boolean as int8": {Physical: parquet.Types.Boolean, Type: arrow.PrimitiveTypes.Int8},
		"int96":           {Physical: parquet.Types.Int96, Type: arrow.FixedWidthTypes.Timestamp_ns},
		"fixed":           {Physical: parquet.Types.FixedLenByteArray, Type: &arrow.FixedSizeBinaryType{ByteWidth: 16}},
		"large":           {Physical: parquet.Types.ByteArray, Type: arrow.BinaryTypes.LargeString},
		"brotli":          {Physical: parquet.Types.Int64, Codec: compress.Codecs.Brotli, Type: arrow.PrimitiveTypes.Int64},
		"int8":            {Physical: parquet.Types.Int32, Type: arrow.PrimitiveTypes.Int8},
	} {
		if err := Supported(c); !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: %v, want ErrUnsupported", name, err)
		}
	}
}

// TestHostile: chunks cut short, or with a byte changed, fail with a
// typed error, never a panic.
func TestHostile(t *testing.T) {
	t.Parallel()
	tbl := testTable(t, 2000)
	defer tbl.Release()
	for _, v := range variants() {
		raw := write(t, tbl, v.props)
		for col := range int(tbl.NumCols()) {
			chunk, c := chunkOf(t, raw, 0, col, tbl.Column(col).DataType())
			for _, cut := range []int{1, len(chunk) / 3, len(chunk) / 2, len(chunk) - 1} {
				decodeTyped(t, c, chunk[:cut])
			}
			rng := rand.New(rand.NewPCG(uint64(col), 9))
			for range 20 {
				bad := bytes.Clone(chunk)
				bad[rng.IntN(len(bad))] ^= byte(1 + rng.IntN(255))
				decodeTyped(t, c, bad)
			}
		}
	}
}

// decodeTyped decodes chunk whole, in batches of 1000, and fails the test
// on an error that is not typed (a panic fails it too).
func decodeTyped(t testing.TB, c Column, chunk []byte) {
	if c.Type.ID() == arrow.STRING {
		c.Type = arrow.BinaryTypes.Binary // hostile bytes need not be UTF-8, and nothing checks that they are
	}
	err := decodeErr(c, chunk, 1000, 1<<24)
	if err != nil && !errors.Is(err, ErrFormat) && !errors.Is(err, ErrUnsupported) && !errors.Is(err, ErrMemoryLimit) {
		t.Fatalf("untyped error %v", err)
	}
	sameSkip(t, c, chunk, 1000, 1<<24, err)
}

// errClass names the class of a Read or Skip error.
func errClass(err error) string {
	for _, e := range []error{ErrFormat, ErrUnsupported, ErrMemoryLimit} {
		if errors.Is(err, e) {
			return e.Error()
		}
	}
	if err == nil {
		return "no error"
	}
	return err.Error()
}

// sameSkip fails t unless Skip, in batches of batch values, fails on
// chunk as Read did (readErr): both, of one class, or neither.
func sameSkip(t testing.TB, c Column, chunk []byte, batch, limit int, readErr error) {
	t.Helper()
	_, err := skipAll(c, chunk, batch, limit)
	if errClass(err) != errClass(readErr) {
		t.Fatalf("Skip: %v; Read: %v", err, readErr)
	}
}

// skipAll skips chunk whole, in batches, and returns the bytes Skip
// counted and its error.
func skipAll(c Column, chunk []byte, batch, limit int) (int64, error) {
	if err := Check(c, chunk); err != nil {
		return 0, err
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	d, err := New(c, chunk, mem, limit)
	if err != nil {
		return 0, err
	}
	defer func() {
		d.Release()
		if n := mem.CurrentAlloc(); n != 0 {
			panic(fmt.Sprintf("%d bytes not freed", n))
		}
	}()
	var bytes int64
	for d.Left() > 0 {
		n, err := d.Skip(int(min(int64(batch), d.Left())))
		if err != nil {
			return bytes, err
		}
		bytes += n
	}
	return bytes, nil
}

// decodeErr decodes chunk whole, in batches, and returns its error.
func decodeErr(c Column, chunk []byte, batch, limit int) error {
	if err := Check(c, chunk); err != nil {
		return err
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	d, err := New(c, chunk, mem, limit)
	if err != nil {
		return err
	}
	defer func() {
		d.Release()
		if n := mem.CurrentAlloc(); n != 0 {
			panic(fmt.Sprintf("%d bytes not freed", n))
		}
	}()
	for d.Left() > 0 {
		data, err := d.Read(int(min(int64(batch), d.Left())))
		if err != nil {
			return err
		}
		arr := array.MakeFromData(data)
		data.Release()
		if err := validate(arr); err != nil {
			arr.Release()
			return fmt.Errorf("invalid array: %w", err)
		}
		arr.Release()
	}
	return nil
}

// validate checks that arr's buffers are consistent: offsets within the
// data, dictionary indices within the dictionary.
func validate(arr arrow.Array) error {
	if d, ok := arr.(*array.Dictionary); ok {
		for i := range d.Len() {
			if d.IsValid(i) && (d.GetValueIndex(i) < 0 || d.GetValueIndex(i) >= d.Dictionary().Len()) {
				return fmt.Errorf("index %d of %d", d.GetValueIndex(i), d.Dictionary().Len())
			}
		}
		arr = d.Dictionary()
	}
	if v, ok := arr.(interface{ ValidateFull() error }); ok {
		return v.ValidateFull()
	}
	return nil
}

func dictVariant(name string) bool { return bytes.HasSuffix([]byte(name), []byte("dict=true")) }

// dirty is an UnclearedAllocator whose uncleared buffers hold garbage: a
// byte the decoder fails to overwrite shows in the values.
type dirty struct{ memory.Allocator }

func (d dirty) AllocateUncleared(n int) []byte {
	b := d.Allocate(n + n%7) // more than asked, sometimes
	for i := range b {
		b[i] = 0xA5
	}
	return b
}

// panicky is an allocator that panics on its nth allocation, as a scan's
// budget does when it is over its limit or told to yield.
type panicky struct {
	memory.Allocator
	n int
}

func (p *panicky) Allocate(size int) []byte {
	if p.n--; p.n == 0 {
		panic("budget")
	}
	return p.Allocator.Allocate(size)
}

// TestReadPanicFrees: an allocator that panics in the middle of a Read
// (the reader recovers it) leaves nothing allocated once the decoder is
// released: a cancelled table scan leaked a batch's offsets and bitmap.
func TestReadPanicFrees(t *testing.T) {
	t.Parallel()
	tbl := testTable(t, 3000)
	t.Cleanup(tbl.Release)
	raw := write(t, tbl, variants()[0].props)
	for _, col := range []int{0, 5, 6, 9} { // nullable int32, nullable string, string, nullable boolean
		typ := tbl.Column(col).DataType()
		chunk, c := chunkOf(t, raw, 0, col, typ)
		panicked := 0
		for k := 1; k <= 6; k++ {
			checked := memory.NewCheckedAllocator(memory.NewGoAllocator())
			mem := &panicky{Allocator: checked, n: k}
			d, err := New(c, chunk, mem, 1<<26)
			if err != nil {
				t.Fatal(err)
			}
			func() {
				defer func() {
					if recover() != nil {
						panicked++
					}
				}()
				for d.Left() > 0 {
					data, err := d.Read(int(min(d.Left(), 700)))
					if err != nil {
						t.Fatal(err)
					}
					data.Release()
				}
			}()
			d.Release()
			checked.AssertSize(t, 0)
		}
		if panicked == 0 {
			t.Fatalf("column %d: no allocation panicked: the test proves nothing", col)
		}
	}
}

// TestZstdChecksumNotComputed: a ZSTD page whose frame's content checksum
// is wrong decodes to the values of the page with the right one (the
// bytes are verified against the storage_id before they are decrypted;
// computing the checksum took about 5 % of a scan), while arrow-go's
// codec refuses it: the frames do carry a checksum.
func TestZstdChecksumNotComputed(t *testing.T) {
	t.Parallel()
	tbl := testTable(t, 3000)
	defer tbl.Release()
	raw := write(t, tbl, []parquet.WriterProperty{parquet.WithCompression(compress.Codecs.Zstd), parquet.WithDictionaryDefault(false), parquet.WithMaxRowGroupLength(3000)})
	chunk, c := chunkOf(t, raw, 0, 1, arrow.PrimitiveTypes.Int64) // i64: random, one value a row
	want := decodeAll(t, chunk, c, 3000, memory.DefaultAllocator)
	defer want[0].Release()
	bad := bytes.Clone(chunk)
	p, _, err := parsePage(bad)
	if err != nil {
		t.Fatal(err)
	}
	if p.body[4]&0x04 == 0 { // Frame_Header_Descriptor: Content_Checksum_flag
		t.Fatal("the page's frame has no checksum")
	}
	p.body[len(p.body)-1] ^= 0xff
	zc, _ := compress.GetCodec(compress.Codecs.Zstd)
	if _, err := compress.Decode(zc, make([]byte, p.usize), p.body); err == nil {
		t.Fatal("arrow-go's codec takes the wrong checksum: the test changed nothing")
	}
	got := decodeAll(t, bad, c, 3000, memory.DefaultAllocator)
	defer got[0].Release()
	if !array.Equal(got[0], want[0]) {
		t.Error("values differ")
	}
}

// TestDecimalFLBA: decimals stored as FIXED_LEN_BYTE_ARRAY (as arrow-go
// writes decimal128, and sop-pme's writer with it), of 4 to 16 bytes,
// decode to arrow-go's values: negative ones, the extremes of each
// precision and nulls included, in every codec, page version and with or
// without dictionaries.
func TestDecimalFLBA(t *testing.T) {
	t.Parallel()
	precisions := []int32{1, 9, 18, 30, 38}
	var fields []arrow.Field
	for _, p := range precisions {
		fields = append(fields, arrow.Field{Name: fmt.Sprintf("d%d", p), Type: &arrow.Decimal128Type{Precision: p, Scale: 0}, Nullable: true})
	}
	schema := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	rng := rand.New(rand.NewPCG(7, 8))
	for c, p := range precisions {
		top := decimal128.GetScaleMultiplier(int(p)).Sub(decimal128.FromI64(1)) // 10^p - 1
		db := b.Field(c).(*array.Decimal128Builder)
		for i := range 5000 {
			switch {
			case i%13 == 5:
				db.AppendNull()
			case i%7 == 0:
				db.Append(top)
			case i%7 == 1:
				db.Append(top.Negate())
			default:
				v := decimal128.FromI64(rng.Int64N(2_000_000) - 1_000_000)
				if p < 7 {
					v = decimal128.FromI64(int64(rng.IntN(19)) - 9)
				}
				if p >= 30 {
					v = v.Mul(decimal128.GetScaleMultiplier(20))
				}
				db.Append(v)
			}
		}
	}
	decodesAsArrowGo(t, b, nil, []int{1, 999, 3000}, func(t *testing.T, col int, c Column) {
		if c.Physical != parquet.Types.FixedLenByteArray || c.TypeLength < 1 || c.TypeLength > 16 {
			t.Fatalf("column %d stored as %s of %d bytes", col, c.Physical, c.TypeLength)
		}
	})
}
