package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/klauspost/compress/zstd"
	"github.com/sovm/sop-pme/cmd/sop-pme/internal/formats"
	"github.com/sovm/sop-pme/internal/testkit/plainedit"
	"github.com/sovm/sop-pme/internal/testkit/testtables"
	"github.com/sovm/sop-pme/internal/thrift"
)

// plainParquet writes rec as plaintext Parquet with arrow-go and props.
func plainParquet(t *testing.T, rec arrow.RecordBatch, props ...parquet.WriterProperty) []byte {
	t.Helper()
	var buf bytes.Buffer
	fw, err := pqarrow.NewFileWriter(rec.Schema(), &buf, parquet.NewWriterProperties(props...), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// footerOf decodes the footer of a plaintext Parquet file and returns it
// with the offset where it starts.
func footerOf(t *testing.T, b []byte) (*thrift.Struct, int) {
	t.Helper()
	flen := int(binary.LittleEndian.Uint32(b[len(b)-8:]))
	start := len(b) - 8 - flen
	md, err := thrift.DecodeExact(b[start:len(b)-8], thrift.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return md, start
}

// TestImportPaths: a Parquet file import can seal is sealed byte for byte
// (its row groups kept), and says so in the summary line and --json;
// --reencode, and --codec or --row-group-rows, which ask for another
// layout, re-encode it and say why; other formats are encoded. Every object
// exports the input's rows and passes check.
func TestImportPaths(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := t.TempDir()
	rec := testtables.Record(testtables.AllTypes(), 900, 9)
	defer rec.Release()
	in := filepath.Join(dir, "in.parquet")
	os.WriteFile(in, plainParquet(t, rec, parquet.WithMaxRowGroupLength(300), parquet.WithCompression(compress.Codecs.Zstd)), 0o600)
	_, wantRows := readTable(t, in, formats.Parquet)
	csv := filepath.Join(dir, "in.csv")
	os.WriteFile(csv, []byte("a,b\n1,x\n2,y\n"), 0o600)

	for _, c := range []struct {
		name     string
		path     string
		flags    []string
		want     string // the path
		why      string // in the reason
		rowGroup int    // row groups of the object
	}{
		{"sealed", in, nil, pathSealed, "", 3},
		{"--reencode", in, []string{"--reencode"}, pathReencoded, "--reencode", 1},
		{"--codec", in, []string{"--codec", "snappy"}, pathReencoded, "--codec", 1},
		{"--row-group-rows", in, []string{"--row-group-rows", "450"}, pathReencoded, "--row-group-rows", 2},
		{"--parallel", in, []string{"--parallel", "2"}, pathSealed, "", 3},
		{"csv", csv, []string{"--assign-field-ids"}, pathReencoded, "csv input", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := e.importJSON(c.path, c.flags...)
			if res.Path != c.want || !strings.Contains(res.ReencodeReason, c.why) || (c.why == "") != (res.ReencodeReason == "") || res.RowGroups != c.rowGroup {
				t.Fatalf("import %v: path %q, reason %q, %d row groups; want %q, %q, %d", c.flags, res.Path, res.ReencodeReason, res.RowGroups, c.want, c.why, c.rowGroup)
			}
			r := e.ok(append([]string{"import", c.path}, c.flags...)...)
			summary := map[string]string{pathSealed: "byte for byte", pathReencoded: "re-encoded: " + c.why}[c.want]
			if !strings.Contains(r.stderr, summary) || !strings.Contains(r.stdout, "path           ") {
				t.Errorf("the summary does not say %q:\n%s", summary, r)
			}
			if c.path != in {
				return
			}
			if res.Rows != 900 {
				t.Errorf("%d rows, want 900", res.Rows)
			}
			e.checkExports(res.StorageID, wantRows)
		})
	}
}

// checkExports runs check on the object id and exports it as NDJSON,
// which must be wantRows.
func (e *env) checkExports(id, wantRows string) {
	e.t.Helper()
	e.ok("check", id)
	out := filepath.Join(e.t.TempDir(), "out.ndjson")
	e.ok("export", id, "-o", out)
	if b, _ := os.ReadFile(out); string(b) != wantRows {
		e.t.Errorf("exported rows differ:\n got %.300s\nwant %.300s", b, wantRows)
	}
}

// TestImportRewritesV2: a file of compressed DATA_PAGE_V2 pages (which
// DuckDB cannot read in an encrypted file) is sealed, its V2 pages
// rewritten as V1 ones, and the summary and --json say how many; the object
// passes check and exports the input's rows.
func TestImportRewritesV2(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rec := testtables.Record(testtables.AllTypes(), 600, 10)
	defer rec.Release()
	in := filepath.Join(t.TempDir(), "v2.parquet")
	os.WriteFile(in, plainParquet(t, rec, parquet.WithCompression(compress.Codecs.Zstd), parquet.WithDataPageVersion(parquet.DataPageV2)), 0o600)
	_, wantRows := readTable(t, in, formats.Parquet)
	res := e.importJSON(in)
	if res.Path != pathSealed || res.RewrittenPages == 0 || res.Rows != 600 {
		t.Fatalf("import: %+v; want sealed, with V2 pages rewritten", res)
	}
	e.checkExports(res.StorageID, wantRows)
	r := e.ok("import", in)
	if !strings.Contains(r.stderr, fmt.Sprintf("but for %d pages rewritten as DuckDB reads them (compressed V2 as V1, LZ4 as LZ4_RAW)", res.RewrittenPages)) {
		t.Errorf("the summary line does not count the pages rewritten:\n%s", r.stderr)
	}
}

// TestImportFallsBack: a file whose second row group has zstd pages a
// streaming compressor wrote with a block every 256 bytes (frames without
// a content size, each block of which could decode to 128 KiB: readers
// refuse such pages) is refused by the sealer midway, after the first row
// group was sealed; the import discards it and re-encodes the rows, says
// so, and leaves one object, which exports the input's rows and passes
// check.
func TestImportFallsBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rec := testtables.Record(testtables.AllTypes(), 1200, 10)
	defer rec.Release()
	plain := plainParquet(t, rec, parquet.WithCompression(compress.Codecs.Uncompressed), parquet.WithMaxRowGroupLength(600))
	flushy, err := plainedit.Recompress(plain, int32(compress.Codecs.Zstd), func(page []byte) []byte {
		var out bytes.Buffer
		w, _ := zstd.NewWriter(&out)
		for len(page) > 0 {
			k := min(len(page), 256)
			w.Write(page[:k])
			w.Flush()
			page = page[k:]
		}
		w.Close()
		return out.Bytes()
	}, 1)
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(t.TempDir(), "mixed.parquet")
	os.WriteFile(in, flushy, 0o600)
	_, wantRows := readTable(t, in, formats.Parquet)
	if strings.Count(wantRows, "\n") != 1200 {
		t.Fatalf("the file reads as %d rows, want 1200", strings.Count(wantRows, "\n"))
	}

	res := e.importJSON(in)
	if res.Path != pathReencoded || !strings.Contains(res.ReencodeReason, "row group 1, column ") || !strings.Contains(res.ReencodeReason, "do not bound") || res.Rows != 1200 {
		t.Fatalf("import: %+v; want re-encoded because of row group 1's zstd pages", res)
	}
	var data []string
	for _, f := range tree(t, e.store) {
		if strings.Contains(f, ".data ") || strings.Contains(f, ".tmp") {
			data = append(data, f)
		}
	}
	if len(data) != 1 || !strings.Contains(data[0], res.StorageID) {
		t.Fatalf("the store holds %v; want only the re-encoded object", data)
	}
	e.checkExports(res.StorageID, wantRows)
	r := e.ok("import", in)
	if !strings.Contains(r.stderr, "re-encoded: row group 1, column ") {
		t.Errorf("the summary line does not say why it re-encoded:\n%s", r.stderr)
	}
}
