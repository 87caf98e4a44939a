//go:build ignore

// gen writes the golden Thrift files in this directory: Parquet footers
// (FileMetaData) and page headers (PageHeader) cut out of small plaintext
// Parquet files that arrow-go writes in memory, DuckDB's FileCryptoMetaData,
// and a fuzz seed for each under fuzz/FuzzDecode/.
//
// Run it from the package directory: go generate ./internal/thrift
//
// The output is deterministic. It finds the extent of each page header with
// Apache Thrift's own compact protocol reader, not with the package under
// test.
package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/thrift/lib/go/thrift"
)

func main() {
	log.SetFlags(0)
	out := "testdata"
	for _, old := range glob(filepath.Join(out, "*.bin")) {
		must(os.Remove(old))
	}
	for _, old := range glob(filepath.Join(out, "fuzz", "FuzzDecode", "golden-*")) {
		must(os.Remove(old))
	}
	must(os.MkdirAll(filepath.Join(out, "fuzz", "FuzzDecode"), 0o755))

	files := map[string][]byte{
		"cryptometa-duckdb.bin":         unhex("1c1c000000"),
		"cryptometa-duckdb-keymeta.bin": unhex("1c1c0000181000010203040506070809" + "0a0b0c0d0e0f00"),
	}
	for _, c := range []struct {
		name string
		data []byte
	}{
		{"flat", flatFile()},
		{"nested", nestedFile()},
		{"plain", plainFile()},
	} {
		footer, headers := cut(c.data)
		files["footer-"+c.name+".bin"] = footer
		for k, h := range headers {
			files["pageheader-"+c.name+"-"+k+".bin"] = h
		}
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		b := files[name]
		must(os.WriteFile(filepath.Join(out, name), b, 0o644))
		seed := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
		fuzzName := "golden-" + strings.TrimSuffix(name, ".bin")
		must(os.WriteFile(filepath.Join(out, "fuzz", "FuzzDecode", fuzzName), []byte(seed), 0o644))
		log.Printf("%-40s %6d bytes", name, len(b))
	}
}

// cut returns the footer of a Parquet file and some of its page headers: for
// each page type the first header, plus the largest header, keyed by a name.
func cut(file []byte) (footer []byte, headers map[string][]byte) {
	if len(file) < 12 || string(file[len(file)-4:]) != "PAR1" {
		log.Fatal("not a plaintext Parquet file")
	}
	n := binary.LittleEndian.Uint32(file[len(file)-8:])
	footer = file[len(file)-8-int(n) : len(file)-8]
	md, err := metadata.NewFileMetaData(footer, nil)
	must(err)

	headers = map[string][]byte{}
	var largest []byte
	for rg := range md.NumRowGroups() {
		r := md.RowGroup(rg)
		for col := range r.NumColumns() {
			cc, err := r.ColumnChunk(col)
			must(err)
			pos := cc.DataPageOffset()
			if cc.HasDictionaryPage() && cc.DictionaryPageOffset() < pos {
				pos = cc.DictionaryPageOffset()
			}
			end := pos + cc.TotalCompressedSize()
			for pos < end {
				hlen, typ, size := pageHeader(file[pos:])
				h := file[pos : pos+int64(hlen)]
				name := map[int32]string{0: "data", 2: "dict", 3: "datav2"}[typ]
				if name == "" {
					log.Fatalf("unexpected page type %d", typ)
				}
				if headers[name] == nil {
					headers[name] = h
				}
				if len(h) > len(largest) {
					largest = h
				}
				pos += int64(hlen) + int64(size)
			}
			if pos != end {
				log.Fatalf("pages overrun column chunk: %d != %d", pos, end)
			}
		}
	}
	for _, h := range headers {
		if bytes.Equal(h, largest) {
			return footer, headers
		}
	}
	headers["largest"] = largest
	return footer, headers
}

// pageHeader reads a PageHeader with Apache Thrift and returns its length,
// type (field 1) and compressed_page_size (field 3).
func pageHeader(b []byte) (n int, typ, size int32) {
	ctx := context.Background()
	buf := &thrift.TMemoryBuffer{Buffer: bytes.NewBuffer(b)}
	p := thrift.NewTCompactProtocolConf(buf, nil)
	_, err := p.ReadStructBegin(ctx)
	must(err)
	for {
		_, t, id, err := p.ReadFieldBegin(ctx)
		must(err)
		if t == thrift.STOP {
			break
		}
		switch {
		case id == 1 && t == thrift.I32:
			typ, err = p.ReadI32(ctx)
		case id == 3 && t == thrift.I32:
			size, err = p.ReadI32(ctx)
		default:
			err = p.Skip(ctx, t)
		}
		must(err)
		must(p.ReadFieldEnd(ctx))
	}
	must(p.ReadStructEnd(ctx))
	return len(b) - buf.Len(), typ, size
}

func withID(f arrow.Field, id int) arrow.Field {
	f.Metadata = arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{strconv.Itoa(id)})
	return f
}

// flatFile has more than 15 flat columns (so the schema list needs the long
// list header), statistics, dictionary pages, data page v1, snappy, three
// row groups, small pages, and key-value metadata including the stored Arrow
// schema.
func flatFile() []byte {
	fields := []arrow.Field{
		{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
		{Name: "i16", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "i64", Type: arrow.PrimitiveTypes.Int64},
		{Name: "u32", Type: arrow.PrimitiveTypes.Uint32, Nullable: true},
		{Name: "u64", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
		{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "long", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "ts_us", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
		{Name: "ts_ns_utc", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "date", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "fsb", Type: &arrow.FixedSizeBinaryType{ByteWidth: 16}, Nullable: true},
		{Name: "dec", Type: &arrow.Decimal128Type{Precision: 20, Scale: 4}, Nullable: true},
	}
	for i := range fields {
		fields[i] = withID(fields[i], 100+i)
	}
	schema := arrow.NewSchema(fields, nil)
	var rows []map[string]any
	for i := range 1000 {
		r := map[string]any{
			"i8":        int8(i%256 - 128),
			"i16":       i*37 - 20000,
			"i32":       -i * 1000003,
			"i64":       int64(i)*int64(i)*1_000_000_007 - 1<<40,
			"u32":       uint32(i) * 4000000,
			"u64":       uint64(math.MaxUint64) - uint64(i),
			"f32":       float32(i) / 3,
			"f64":       -float64(i) * math.Pi,
			"s":         fmt.Sprintf("v%03d", i%50),
			"long":      strings.Repeat(string(rune('a'+i%26)), 150+i%100),
			"b":         i%3 == 0,
			"ts_us":     fmt.Sprintf("2024-01-%02dT%02d:%02d:00.123456", 1+i%28, i%24, i%60),
			"ts_ns_utc": 1706745600123456789 + int64(i)*3_600_000_000_123,
			"date":      fmt.Sprintf("2024-03-%02d", 1+i%31),
			"bin":       base64.StdEncoding.EncodeToString([]byte{byte(i), byte(i >> 8), 0xff}),
			"fsb":       base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{byte(i)}, 16)),
			"dec":       fmt.Sprintf("%d.%04d", i*1000-500000, i),
		}
		if i%7 == 0 {
			for _, k := range []string{"i8", "s", "long", "f64", "ts_us", "dec"} {
				r[k] = nil
			}
		}
		rows = append(rows, r)
	}
	props := parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithStats(true),
		parquet.WithDataPageVersion(parquet.DataPageV1),
		parquet.WithDataPageSize(2048),
		parquet.WithMaxRowGroupLength(400),
		parquet.WithDictionaryDefault(true),
		parquet.WithCreatedBy("sop-pme thrift testdata"),
	)
	return write(schema, rows, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()),
		[][2]string{{"sovm:test", "flat"}, {"empty", ""}})
}

// nestedFile has list, struct, map and list<struct> columns with field IDs
// on every field, zstd, data page v2 and two row groups.
func nestedFile() []byte {
	elem := withID(arrow.Field{Name: "element", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, 11)
	pt := arrow.StructOf(
		withID(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Float64}, 41),
		withID(arrow.Field{Name: "y", Type: arrow.FixedWidthTypes.Boolean, Nullable: true}, 42),
	)
	mt := arrow.MapOfWithMetadata(
		arrow.BinaryTypes.String, arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{"31"}),
		arrow.PrimitiveTypes.Int32, arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{"32"}))
	fields := []arrow.Field{
		withID(arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64}, 1),
		withID(arrow.Field{Name: "tags", Type: arrow.ListOfField(elem), Nullable: true}, 10),
		withID(arrow.Field{Name: "rec", Type: arrow.StructOf(
			withID(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true}, 21),
			withID(arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true}, 22),
		), Nullable: true}, 20),
		withID(arrow.Field{Name: "attrs", Type: mt, Nullable: true}, 30),
		withID(arrow.Field{Name: "points", Type: arrow.ListOfField(
			withID(arrow.Field{Name: "element", Type: pt, Nullable: true}, 43)), Nullable: true}, 40),
	}
	schema := arrow.NewSchema(fields, nil)
	var rows []map[string]any
	for i := range 600 {
		var tags []any
		for j := range i % 5 {
			tags = append(tags, int64(i*j)-1000)
		}
		var attrs []any
		for j := range i % 3 {
			attrs = append(attrs, map[string]any{"key": fmt.Sprintf("k%d", j), "value": i - j})
		}
		var pts []any
		for j := range i % 4 {
			pts = append(pts, map[string]any{"x": float64(i) + float64(j)/8, "y": j%2 == 0})
		}
		r := map[string]any{
			"id":     i,
			"tags":   tags,
			"rec":    map[string]any{"a": i * 3, "b": fmt.Sprintf("name-%d", i%17)},
			"attrs":  attrs,
			"points": pts,
		}
		if i%11 == 0 {
			r["rec"], r["tags"] = nil, nil
		}
		rows = append(rows, r)
	}
	props := parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithStats(true),
		parquet.WithDataPageVersion(parquet.DataPageV2),
		parquet.WithDataPageSize(1024),
		parquet.WithMaxRowGroupLength(300),
	)
	return write(schema, rows, props, pqarrow.DefaultWriterProps(), [][2]string{{"sovm:test", "nested"}})
}

// plainFile is uncompressed, without statistics or dictionaries: the
// smallest footer shape.
func plainFile() []byte {
	schema := arrow.NewSchema([]arrow.Field{
		withID(arrow.Field{Name: "n", Type: arrow.PrimitiveTypes.Int32}, 1),
		withID(arrow.Field{Name: "d", Type: arrow.PrimitiveTypes.Float64, Nullable: true}, 2),
	}, nil)
	var rows []map[string]any
	for i := range 20 {
		rows = append(rows, map[string]any{"n": i, "d": float64(i) / 2})
	}
	props := parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Uncompressed),
		parquet.WithStats(false),
		parquet.WithDictionaryDefault(false),
		parquet.WithVersion(parquet.V1_0),
	)
	return write(schema, rows, props, pqarrow.DefaultWriterProps(), nil)
}

func write(schema *arrow.Schema, rows []map[string]any, props *parquet.WriterProperties, aprops pqarrow.ArrowWriterProperties, kv [][2]string) []byte {
	js, err := json.Marshal(rows)
	must(err)
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema, bytes.NewReader(js))
	must(err)
	defer rec.Release()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(schema, &buf, props, aprops)
	must(err)
	must(w.Write(rec))
	for _, e := range kv {
		must(w.AppendKeyValueMetadata(e[0], e[1]))
	}
	must(w.Close())
	return buf.Bytes()
}

func glob(pattern string) []string {
	m, err := filepath.Glob(pattern)
	must(err)
	return m
}

func unhex(s string) []byte {
	b, err := hex.DecodeString(s)
	must(err)
	return b
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
