package flatdec

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
)

// fuzzTypes are the column kinds FuzzFlatDecode picks from.
var fuzzTypes = []struct {
	physical parquet.Type
	typ      arrow.DataType
}{
	{parquet.Types.Int32, arrow.PrimitiveTypes.Int32},
	{parquet.Types.Int64, arrow.PrimitiveTypes.Int64},
	{parquet.Types.Float, arrow.PrimitiveTypes.Float32},
	{parquet.Types.Double, arrow.PrimitiveTypes.Float64},
	{parquet.Types.ByteArray, arrow.BinaryTypes.Binary},
	{parquet.Types.ByteArray, &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.Binary}},
	{parquet.Types.Int32, arrow.FixedWidthTypes.Date32},
	{parquet.Types.Boolean, arrow.FixedWidthTypes.Boolean},
	{parquet.Types.Int64, &arrow.Decimal128Type{Precision: 18, Scale: 2}},
	{parquet.Types.FixedLenByteArray, &arrow.Decimal128Type{Precision: 38, Scale: 2}}, // of 1 to 16 bytes, by maxDef's upper bits
}

// fuzzCodecs are the codecs FuzzFlatDecode picks from.
var fuzzCodecs = []compress.Compression{compress.Codecs.Uncompressed, compress.Codecs.Snappy, compress.Codecs.Zstd, compress.Codecs.Gzip}

// FuzzFlatDecode: no chunk, of any column kind the package decodes, makes
// it panic, return an untyped error, return an invalid array or keep
// memory of the allocator; Skip fails where Read does, with an error of
// the same class; every page it decompresses is bounded by the
// limit (1 MiB) and every batch by the values asked. The seeds
// (testdata/fuzz/FuzzFlatDecode) are chunks arrow-go's writer wrote, in
// each codec and page version (FLATDEC_WRITE_SEEDS=1 go test -run TestWriteSeeds writes
// them again).
func FuzzFlatDecode(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/fuzz/FuzzFlatDecode/*")
	if len(seeds) < 8 {
		f.Fatalf("%d seeds in testdata/fuzz/FuzzFlatDecode", len(seeds))
	}
	f.Fuzz(func(t *testing.T, chunk []byte, kind, codec, maxDef uint8, values uint16, batch uint16) {
		k := fuzzTypes[int(kind)%len(fuzzTypes)]
		c := Column{
			Physical: k.physical, Type: k.typ, MaxDef: int16(maxDef % 2),
			Codec: fuzzCodecs[int(codec)%len(fuzzCodecs)], Values: int64(values),
			TypeLength: 1 + int(maxDef/2)%16,
		}
		err := decodeErr(c, chunk, 1+int(batch%2048), 1<<20)
		if err != nil && !errors.Is(err, ErrFormat) && !errors.Is(err, ErrUnsupported) && !errors.Is(err, ErrMemoryLimit) {
			t.Fatalf("untyped error %v", err)
		}
		sameSkip(t, c, chunk, 1+int(batch%2048), 1<<20, err)
	})
}

// TestSeeds checks that FuzzFlatDecode's seeds (testdata/fuzz/FuzzFlatDecode)
// are the chunks arrow-go's writer writes of the test table, one a writer
// variant, and the booleans' in a V1 (PLAIN) and a V2 (RLE) page; with
// FLATDEC_WRITE_SEEDS=1 it writes them again.
func TestSeeds(t *testing.T) {
	tbl := testTable(t, 300)
	defer tbl.Release()
	dir := filepath.Join("testdata", "fuzz", "FuzzFlatDecode")
	seeds := map[string]string{}
	seed := func(name string, chunk []byte, kind, codec int, c Column, batch int) {
		seeds[name] = "go test fuzz v1\n[]byte(" + quote(chunk) + ")\nuint8(" + itoa(kind) + ")\nuint8(" + itoa(codec) + ")\nuint8(" + itoa(int(c.MaxDef)) + ")\nuint16(" + itoa(int(c.Values)) + ")\nuint16(" + itoa(batch) + ")\n"
	}
	codecOf := func(c Column) int {
		for j, cc := range fuzzCodecs {
			if cc == c.Codec {
				return j
			}
		}
		return 0
	}
	kinds := map[string]int{"i32": 0, "i64": 1, "f32": 2, "f64": 3, "bin": 4, "s": 5, "date": 6, "ok": 7, "flag": 7}
	cols := []int{0, 1, 2, 3, 4, 5, 7}
	for i, v := range variants() {
		raw := write(t, tbl, v.props)
		col := cols[i%len(cols)]
		name := tbl.Schema().Field(col).Name
		chunk, c := chunkOf(t, raw, 0, col, tbl.Column(col).DataType())
		kind := kinds[name]
		if name == "s" && !dictVariant(v.name) {
			kind = 4
		}
		seed("seed-"+itoa(i), chunk, kind, codecOf(c), c, 100+i)
		if i == 1 || i == 3 { // the uncompressed V1 and V2 variants: PLAIN and RLE booleans
			for _, col := range []int{9, 10} {
				name := tbl.Schema().Field(col).Name
				chunk, c := chunkOf(t, raw, 0, col, tbl.Column(col).DataType())
				seed("seed-"+name+"-"+itoa(i), chunk, kinds[name], codecOf(c), c, 37)
			}
		}
	}
	if os.Getenv("FLATDEC_WRITE_SEEDS") != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, body := range seeds {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	for name, body := range seeds {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("seed %s: %v (FLATDEC_WRITE_SEEDS=1 writes it)", name, err)
			continue
		}
		if string(got) != body {
			t.Errorf("seed %s differs from the chunk the writer writes now (FLATDEC_WRITE_SEEDS=1 writes it again)", name)
		}
	}
}

func quote(b []byte) string { return strconv.Quote(string(b)) }

func itoa(i int) string { return strconv.Itoa(i) }
