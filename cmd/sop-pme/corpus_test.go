package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/sovm/sop-pme/cmd/sop-pme/internal/formats"
	"github.com/sovm/sop-pme/internal/lz4hadoop"
	"github.com/sovm/sop-pme/internal/testkit/plainedit"
	"github.com/sovm/sop-pme/internal/testkit/testtables"
	"github.com/sovm/sop-pme/internal/thrift"
)

// The tests in this file run import, check and export over files made the
// way Apache parquet-testing's problem files are.

// TestImportLZ4: a file of the deprecated LZ4 codec (Hadoop framing),
// which neither DuckDB nor arrow-go reads, is sealed with its pages
// rewritten as LZ4_RAW, and exports its rows; --reencode reads it too.
// Before: "…/hadoop_lz4_compressed.not a readable table: …compression for
// LZ4 unimplemented" (the file name cut, and no import).
func TestImportLZ4(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rec := testtables.Record(testtables.AllTypes(), 500, 14)
	defer rec.Release()
	plain := plainParquet(t, rec, parquet.WithCompression(compress.Codecs.Uncompressed), parquet.WithMaxRowGroupLength(250))
	_, wantRows := readTable(t, writeFile(t, "plain.parquet", plain), formats.Parquet)
	lz4, err := plainedit.Recompress(plain, int32(compress.Codecs.Lz4), func(p []byte) []byte { return lz4hadoop.Encode(nil, p) })
	if err != nil {
		t.Fatal(err)
	}
	in := writeFile(t, "hadoop_lz4_compressed.parquet", lz4)
	res := e.importJSON(in)
	if res.Path != pathSealed || res.RewrittenPages == 0 || res.Rows != 500 {
		t.Fatalf("import: %+v; want sealed, its LZ4 pages rewritten", res)
	}
	e.checkExports(res.StorageID, wantRows)
	res = e.importJSON(in, "--reencode")
	if res.Path != pathReencoded {
		t.Fatalf("import --reencode: %+v", res)
	}
	e.checkExports(res.StorageID, wantRows)
}

// TestImportByteStreamSplitInts: a file of BYTE_STREAM_SPLIT INT32 pages,
// which DuckDB 1.5.6 cannot read, is re-encoded, and says why; before, it
// was sealed into an object DuckDB cannot read with its DEK.
func TestImportByteStreamSplitInts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	schema := arrow.NewSchema([]arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range 300 {
		b.Field(0).(*array.Int32Builder).Append(int32(i * 7))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	in := writeFile(t, "bss.parquet", plainParquet(t, rec, parquet.WithDictionaryDefault(false), parquet.WithEncoding(parquet.Encodings.ByteStreamSplit)))
	_, wantRows := readTable(t, in, formats.Parquet)
	res := e.importJSON(in, "--assign-field-ids")
	if res.Path != pathReencoded || !strings.Contains(res.ReencodeReason, "an encoding DuckDB cannot read") {
		t.Fatalf("import: %+v; want re-encoded for its encoding", res)
	}
	e.checkExports(res.StorageID, wantRows)
}

// TestImportRefusesUnreadable: a file whose rows do not decode (a record
// that starts with a repetition level of 1, as parquet-testing's
// bad_data/ARROW-GH-45185 has) is neither sealed nor re-encoded: import
// exits 1 with one line saying why, and leaves no object. Before, it was
// sealed with exit 0, check called it conformant, and export failed.
func TestImportRefusesUnreadable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	schema := arrow.NewSchema([]arrow.Field{{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	lb := b.Field(0).(*array.ListBuilder)
	for i := range 200 {
		lb.Append(true)
		for j := range 1 + i%3 {
			lb.ValueBuilder().(*array.Int32Builder).Append(int32(i + j))
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	bad, err := plainedit.Rewrite(plainParquet(t, rec, parquet.WithCompression(compress.Codecs.Uncompressed), parquet.WithDictionaryDefault(false)),
		func(p *plainedit.Page) error {
			if typ, _ := p.Header.I32(1); typ != 0 || p.Index != 0 {
				return nil
			}
			p.Body = bytes.Clone(p.Body)
			run := p.Body[4:] // the repetition levels' first run
			if run[0]&1 == 1 {
				run[1] |= 1
			} else {
				run[1] = 1
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	in := writeFile(t, "levels.parquet", bad)
	e.fails(exitFailure, []string{"levels.parquet", "repetition level"}, "import", "--assign-field-ids", in)
	for _, f := range tree(t, e.store) {
		if strings.Contains(f, ".data ") {
			t.Errorf("the store holds %s after a failed import", f)
		}
	}
}

// TestImportUnknownLogicalType: a column whose logical type no reader
// knows imports, and exports as its physical type (binary); before,
// "invalid logical type".
func TestImportUnknownLogicalType(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	schema := arrow.NewSchema([]arrow.Field{{Name: "u", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range 20 {
		b.Field(0).(*array.StringBuilder).Append("unknown " + string(rune('a'+i)))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	plain := plainParquet(t, rec)
	md, start := footerOf(t, plain)
	schemaList, _ := md.List(2)
	se := schemaList.Items[1].Struct
	se.Delete(6)
	se.Set(10, thrift.StructValue(thrift.NewStruct(thrift.Field{ID: 99, Value: thrift.StructValue(thrift.NewStruct())})))
	// No ARROW:schema: it would say string.
	md.Delete(5)
	out := md.Append(bytes.Clone(plain[:start]))
	out = appendTrailer(out, start)
	in := writeFile(t, "unknown-logical-type.parquet", out)
	res := e.importJSON(in, "--assign-field-ids")
	if res.Path != pathSealed || res.Rows != 20 {
		t.Fatalf("import: %+v", res)
	}
	e.ok("check", res.StorageID)
	r := e.ok("schema", res.StorageID)
	if !strings.Contains(r.stdout, "binary") {
		t.Errorf("the column is not binary:\n%s", r.stdout)
	}
}

// writeFile writes b into a file of the test's temporary directory.
func writeFile(t *testing.T, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// appendTrailer ends a plaintext Parquet file whose footer starts at start.
func appendTrailer(b []byte, start int) []byte {
	n := len(b) - start
	return append(b, byte(n), byte(n>>8), byte(n>>16), byte(n>>24), 'P', 'A', 'R', '1')
}
