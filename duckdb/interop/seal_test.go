package interop

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/sovm/sop-pme/duckdb/internal/ducktest"
	"github.com/sovm/sop-pme/internal/lz4hadoop"
	"github.com/sovm/sop-pme/internal/seal"
	"github.com/sovm/sop-pme/internal/testkit/plainedit"
	"github.com/sovm/sop-pme/internal/testkit/testtables"
	"github.com/sovm/sop-pme/internal/thrift"
	"github.com/sovm/sop-pme/writer"
)

// The tests in this file seal existing plaintext Parquet files byte for
// byte (writer.SealFile; issue 10, item 4): files DuckDB writes with a plain
// COPY, files arrow-go writes, and files pyarrow wrote (testdata/pyarrow,
// with the script that made them). For each, DuckDB given the object's DEK
// and our reader given its storage_id must return exactly what DuckDB reads
// from the plaintext file; reader.Check must report the object conformant;
// its footer must reference no page index and no bloom filter, though the
// file may have had them; and its field IDs must be those the file has, or
// those writer.AssignFieldIDs gives the Arrow schema pqarrow reads from it.

// plainMeta returns the footer of a plaintext Parquet file, as arrow-go
// reads it.
func plainMeta(t *testing.T, path string) *metadata.FileMetaData {
	t.Helper()
	return openPlain(t, path).MetaData()
}

// openPlain opens a plaintext Parquet file with arrow-go, with
// readableMeta's options, until t ends.
func openPlain(t *testing.T, path string) *file.Reader {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	pf, err := file.NewParquetReader(f, readableMeta(t, f)...)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return pf
}

// readableMeta returns the options that make arrow-go read the footer of
// the plaintext Parquet file f as Parquet readers must: without a
// logicalType no reader knows (seal.Footer.DropUnknownLogicalTypes).
func readableMeta(t *testing.T, f *os.File) []file.ReadOption {
	t.Helper()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	footer, err := seal.ReadPlainFooter(f, fi.Size())
	if err != nil || footer.DropUnknownLogicalTypes() == 0 {
		return nil
	}
	md, err := metadata.NewFileMetaData(footer.Append(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	return []file.ReadOption{file.WithMetadata(md)}
}

// plainArrowSchema returns the Arrow schema pqarrow reads from a plaintext
// Parquet file (field IDs as "PARQUET:field_id", -1 where there is none).
func plainArrowSchema(t *testing.T, path string) *arrow.Schema {
	t.Helper()
	fr, err := pqarrow.NewFileReader(openPlain(t, path), pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	s, err := fr.Schema()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sealPath seals the plaintext file at path into st and checks what every
// object must satisfy (writeObject's checks: the stored bytes, their
// storage_id, the Padmé size, reader.Check conformant).
func sealPath(t *testing.T, st *ducktest.Store, path string, opts ...writer.Option) (object, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	obj, err := writer.SealFile(context.Background(), st, f, fi.Size(), opts...)
	if err != nil {
		return object{}, err
	}
	return checkStored(t, st, obj), nil
}

// checkStored reads a published object back from the store and checks
// that it holds obj.Size bytes and that reader.Check reports it conformant.
func checkStored(t *testing.T, st *ducktest.Store, obj writer.Object) object {
	t.Helper()
	path := st.Path(obj.StorageID)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the stored object: %v", err)
	}
	if uint64(len(data)) != obj.Size {
		t.Fatalf("stored %d bytes, obj.Size %d", len(data), obj.Size)
	}
	checkConformant(t, st, obj)
	return object{Object: obj, path: path, data: data}
}

// duckRead reads every column of the Parquet file at path with DuckDB, in
// file row order, with the given encryption_config ("" for none). It
// returns the column names and the rows.
func duckRead(t *testing.T, db *sql.DB, path, encryptionConfig string) ([]string, [][]any) {
	t.Helper()
	enc := ""
	if encryptionConfig != "" {
		enc = ", encryption_config = " + encryptionConfig
	}
	q := "SELECT * EXCLUDE (file_row_number) FROM read_parquet(" + ducktest.SQLString(path) + enc + ", file_row_number = true, hive_partitioning = false) ORDER BY file_row_number"
	cols, rows, err := ducktest.Query(db, q)
	if err != nil {
		t.Fatalf("%s\n%s", q, ducktest.ErrorText(err))
	}
	return cols, rows
}

// checkSealed checks a sealed object against its plaintext file: DuckDB
// with the DEK and our reader return what DuckDB reads from the file; the
// footer references no page index or bloom filter; the field IDs are those
// of AssignFieldIDs on the file's Arrow schema (the file's own where it has
// them).
func checkSealed(t *testing.T, st *ducktest.Store, in string, obj object) {
	t.Helper()
	checkObjectAgainst(t, st, in, obj, true)
}

// checkObjectAgainst is checkSealed; the object keeps the file's row
// groups only if sealed is set (else it was re-encoded).
func checkObjectAgainst(t *testing.T, st *ducktest.Store, in string, obj object, sealed bool) {
	t.Helper()
	db := ducktest.OpenDuckDB(t)
	cols, want := duckRead(t, db, in, "")
	if len(want) == 0 {
		t.Fatal("DuckDB reads no rows from the file: the test proves nothing")
	}
	gotCols, got := duckRead(t, db, obj.path, ducktest.FooterKeyValue(keyBase64(obj)))
	if !slices.Equal(cols, gotCols) {
		t.Fatalf("DuckDB reads columns %v from the object, %v from the file", gotCols, cols)
	}
	ducktest.CompareRows(t, "DuckDB reading the object", cols, want, got, ducktest.SameValue)

	r := openReader(t, st, obj.StorageID, obj.DEK)
	rec := mustScan(t, r)
	defer rec.Release()
	if int(rec.NumCols()) != len(cols) {
		t.Fatalf("our reader reads %d columns, DuckDB %d", rec.NumCols(), len(cols))
	}
	ours := make([][]any, rec.NumRows())
	for i := range ours {
		ours[i] = make([]any, rec.NumCols())
		for c := range int(rec.NumCols()) {
			if name := rec.Schema().Field(c).Name; name != cols[c] {
				t.Fatalf("our reader's column %d is %s, DuckDB's %s", c, name, cols[c])
			}
			ours[i][c] = duckValue(rec.Column(c), i)
		}
	}
	ducktest.CompareRows(t, "our reader reading the object", cols, want, ours, ducktest.SameValue)

	// No page index, no bloom filter, no offset of either.
	lay := walkLayoutKeyRef(t, obj.data, obj.DEK, obj.KeyRef[:])
	footer := objectFooter(t, obj)
	footer.DropUnknownLogicalTypes() // as a reader must (only for arrow-go: the object keeps them)
	md, err := metadata.NewFileMetaData(footer.Append(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	eachChunk(md, func(cc *metadata.ColumnChunkMetaData) {
		if cc.GetColumnIndexLocation() != nil || cc.GetOffsetIndexLocation() != nil || cc.BloomFilterOffset() != 0 || cc.BloomFilterLength() != 0 {
			t.Errorf("column %s: the object's footer references a page index or a bloom filter", cc.PathInSchema())
		}
	})
	inMeta := plainMeta(t, in)
	if sealed && (md.NumRowGroups() != inMeta.NumRowGroups() || lay.rowGroups != inMeta.NumRowGroups()) {
		t.Errorf("%d row groups, the file has %d", md.NumRowGroups(), inMeta.NumRowGroups())
	}

	// Field IDs: AssignFieldIDs of the Arrow schema pqarrow reads.
	wantIDs, err := writer.AssignFieldIDs(plainArrowSchema(t, in))
	if err != nil {
		t.Fatal(err)
	}
	if w, g := fieldIDsOf(t, wantIDs), fieldIDsOf(t, r.Schema()); !maps.Equal(w, g) || len(w) == 0 {
		t.Errorf("field IDs of the object:\n%v\nAssignFieldIDs of the file's schema:\n%v", g, w)
	}
}

// objectFooter decrypts an object's footer, as an editable tree.
func objectFooter(t *testing.T, obj object) *seal.Footer {
	t.Helper()
	f, err := seal.DecodeFooter(ducktest.OpenFooter(t, obj.data, obj.DEK).Footer.Append(nil))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func eachChunk(md *metadata.FileMetaData, fn func(*metadata.ColumnChunkMetaData)) {
	for i := range md.NumRowGroups() {
		rg := md.RowGroup(i)
		for j := range rg.NumColumns() {
			if cc, err := rg.ColumnChunk(j); err == nil {
				fn(cc)
			}
		}
	}
}

// counts returns how many column chunks of a file have a bloom filter, a
// column index and an offset index.
func counts(md *metadata.FileMetaData) (blooms, columnIndexes, offsetIndexes int) {
	eachChunk(md, func(cc *metadata.ColumnChunkMetaData) {
		if cc.BloomFilterOffset() > 0 {
			blooms++
		}
		if cc.GetColumnIndexLocation() != nil {
			columnIndexes++
		}
		if cc.GetOffsetIndexLocation() != nil {
			offsetIndexes++
		}
	})
	return
}

// storeObjects counts the objects in a store's directory.
func storeObjects(t *testing.T, st *ducktest.Store) int {
	t.Helper()
	ents, err := os.ReadDir(st.Root)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".data") {
			n++
		}
	}
	return n
}

// TestSealDuckDBFiles has DuckDB write plaintext Parquet files (a plain
// COPY, no encryption) of every covered type, flat and nested, in one and
// several row groups, with every codec DuckDB offers, with and without
// FIELD_IDS, and with the bloom filters DuckDB writes by default; each is
// sealed and checked (checkSealed).
func TestSealDuckDBFiles(t *testing.T) {
	t.Parallel()
	d := newDuck(t, 6000, 21)
	type tc struct {
		name     string
		cols     []string
		opts     string
		fieldIDs bool
	}
	cases := []tc{
		{name: "flat", cols: ducktest.FlatColumns(), fieldIDs: true},
		{name: "nested", cols: ducktest.NestedColumns(), fieldIDs: true},
		{name: "row-groups", cols: allColumns, opts: "ROW_GROUP_SIZE 2048"},
		{name: "no-field-ids", cols: allColumns},
	}
	for _, c := range []string{"snappy", "zstd", "gzip", "brotli", "lz4", "uncompressed"} {
		cases = append(cases, tc{name: "codec=" + c, cols: allColumns, opts: "COMPRESSION " + c + ", ROW_GROUP_SIZE 4096"})
	}
	sawBlooms := 0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			opts := c.opts
			if c.fieldIDs {
				opts = strings.TrimPrefix(opts+", "+ducktest.FieldIDs(ducktest.Columns(c.cols...)), ", ")
			}
			in := filepath.Join(t.TempDir(), "duckdb.parquet")
			copyOpts := "FORMAT parquet"
			if opts != "" {
				copyOpts += ", " + opts
			}
			d.exec(t, "COPY (SELECT "+strings.Join(c.cols, ", ")+" FROM src) TO "+ducktest.SQLString(in)+" ("+copyOpts+")")
			blooms, ci, oi := counts(plainMeta(t, in))
			sawBlooms += blooms
			t.Logf("the file has %d bloom filters, %d column indexes, %d offset indexes", blooms, ci, oi)

			var sealOpts []writer.Option
			if !c.fieldIDs {
				// Refused without WithAssignFieldIDs, naming the fields;
				// nothing is staged.
				before := storeObjects(t, d.st)
				if _, err := sealPath(t, d.st, in); !errors.Is(err, writer.ErrFieldID) || !strings.Contains(err.Error(), "i64") {
					t.Fatalf("sealing a file without field IDs: %v, want ErrFieldID naming the fields", err)
				}
				if storeObjects(t, d.st) != before {
					t.Fatal("a refused file left an object")
				}
				sealOpts = append(sealOpts, writer.WithAssignFieldIDs())
			}
			obj, err := sealPath(t, d.st, in, sealOpts...)
			if err != nil {
				t.Fatal(err)
			}
			checkSealed(t, d.st, in, obj)
			if c.fieldIDs {
				r := openReader(t, d.st, obj.StorageID, obj.DEK)
				if w, g := fieldIDsOf(t, arrow.NewSchema(ducktest.Columns(c.cols...), nil)), fieldIDsOf(t, r.Schema()); !maps.Equal(w, g) {
					t.Errorf("field IDs: %v, FIELD_IDS gave %v", g, w)
				}
			}
		})
	}
	if sawBlooms == 0 {
		t.Error("DuckDB wrote no bloom filter in any file: the bloom filters are not tested")
	}
}

// TestSealArrowGoFiles seals files arrow-go writes: every covered type,
// several row groups and pages, dictionaries, page indexes and bloom
// filters, with every codec arrow-go writes and DuckDB reads, and with V2
// pages, uncompressed (sealed as they are) and compressed (rewritten as V1
// ones).
func TestSealArrowGoFiles(t *testing.T) {
	t.Parallel()
	st := ducktest.NewStore(t)
	schema := testtables.AllTypes()
	rec := testtables.Record(schema, 5000, 22)
	defer rec.Release()
	for name, props := range map[string][]parquet.WriterProperty{
		"zstd":            {parquet.WithCompression(compress.Codecs.Zstd)},
		"snappy":          {parquet.WithCompression(compress.Codecs.Snappy), parquet.WithDictionaryDefault(false)},
		"gzip":            {parquet.WithCompression(compress.Codecs.Gzip)},
		"brotli":          {parquet.WithCompression(compress.Codecs.Brotli)},
		"lz4raw":          {parquet.WithCompression(compress.Codecs.Lz4Raw)},
		"uncompressed-v2": {parquet.WithCompression(compress.Codecs.Uncompressed), parquet.WithDataPageVersion(parquet.DataPageV2)},
		// Compressed V2 pages, rewritten as V1 ones.
		"zstd-v2":   {parquet.WithCompression(compress.Codecs.Zstd), parquet.WithDataPageVersion(parquet.DataPageV2)},
		"brotli-v2": {parquet.WithCompression(compress.Codecs.Brotli), parquet.WithDataPageVersion(parquet.DataPageV2), parquet.WithDictionaryDefault(false)},
	} {
		t.Run(name, func(t *testing.T) {
			props = append(props, parquet.WithMaxRowGroupLength(1800), parquet.WithDataPageSize(2048),
				parquet.WithPageIndexEnabled(true), parquet.WithBloomFilterEnabled(true), parquet.WithStats(true))
			in := filepath.Join(t.TempDir(), "arrow-go.parquet")
			f, err := os.Create(in)
			if err != nil {
				t.Fatal(err)
			}
			fw, err := pqarrow.NewFileWriter(schema, f, parquet.NewWriterProperties(props...), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
			if err != nil {
				t.Fatal(err)
			}
			if err := fw.WriteBuffered(rec); err != nil {
				t.Fatal(err)
			}
			if err := fw.Close(); err != nil {
				t.Fatal(err)
			}
			blooms, ci, oi := counts(plainMeta(t, in))
			if blooms == 0 || ci == 0 || oi == 0 {
				t.Fatalf("the file has %d bloom filters, %d column indexes, %d offset indexes: the test proves nothing", blooms, ci, oi)
			}
			obj, err := sealPath(t, st, in)
			if err != nil {
				t.Fatal(err)
			}
			checkSealed(t, st, in, obj)
		})
	}
}

// TestSealPyarrowFiles seals the files of testdata/pyarrow (pyarrow 26.0.1;
// gen.py): flat and nested types, V1 and uncompressed V2 pages, snappy,
// zstd, gzip, brotli and LZ4_RAW, page indexes, byte-stream-split and delta
// encodings, with no field IDs or some. The file with compressed V2 pages is
// sealed too, its V2 pages rewritten as V1 ones, which DuckDB reads in an
// encrypted file.
func TestSealPyarrowFiles(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/pyarrow/*.parquet")
	if err != nil || len(files) < 8 {
		t.Fatalf("%d files in testdata/pyarrow (%v), want 8", len(files), err)
	}
	// An encoding arrow-go cannot read (TestSealerEncodingsDuckDBReads).
	refused := map[string]error{"flba-delta-byte-array.parquet": writer.ErrEncoding}
	st := ducktest.NewStore(t)
	pageIndexes := 0
	for _, in := range files {
		t.Run(filepath.Base(in), func(t *testing.T) {
			_, ci, oi := counts(plainMeta(t, in))
			pageIndexes += ci + oi
			obj, err := sealPath(t, st, in, writer.WithAssignFieldIDs())
			if want := refused[filepath.Base(in)]; want != nil {
				if !errors.Is(err, want) || !errors.Is(err, writer.ErrNotSealable) {
					t.Fatalf("got %v, want ErrNotSealable and %v", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkSealed(t, st, in, obj)
		})
	}
	if pageIndexes == 0 {
		t.Error("no pyarrow file has a page index: dropping them is not tested")
	}
}

// TestSealLZ4Hadoop: pages of the deprecated LZ4 codec (CompressionCodec
// 5), which DuckDB 1.5.6 refuses even in a plaintext file and arrow-go
// cannot read, are rewritten as LZ4_RAW pages, which both read: DuckDB
// with the DEK and our reader read the object as DuckDB reads the file
// the LZ4 one was made from. arrow-go cannot write the codec, so the files
// here are its LZ4_RAW files with the footer saying LZ4 (bare blocks, as
// older parquet-cpp wrote) and its uncompressed files with each page in
// Hadoop's framing (parquet-mr). Before, the sealer refused them
// (writer.ErrCodec) and import failed ("compression for LZ4 unimplemented";
// parquet-testing's three LZ4 files).
func TestSealLZ4Hadoop(t *testing.T) {
	t.Parallel()
	schema := testtables.AllTypes()
	rec := testtables.Record(schema, 500, 23)
	defer rec.Release()
	if err := writeLZ4(schema, rec); err == nil {
		t.Error("arrow-go wrote a file with the LZ4 codec")
	} else {
		t.Logf("arrow-go does not write the LZ4 codec: %v", err)
	}
	write := func(codec compress.Compression) []byte {
		var buf bytes.Buffer
		fw, err := pqarrow.NewFileWriter(schema, &buf, parquet.NewWriterProperties(parquet.WithCompression(codec), parquet.WithMaxRowGroupLength(200)), pqarrow.NewArrowWriterProperties())
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
	dir := t.TempDir()
	raw, plain := filepath.Join(dir, "lz4raw.parquet"), filepath.Join(dir, "plain.parquet")
	if err := os.WriteFile(raw, write(compress.Codecs.Lz4Raw), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plain, write(compress.Codecs.Uncompressed), 0o600); err != nil {
		t.Fatal(err)
	}
	rawBytes, _ := os.ReadFile(raw)
	hadoop, err := plainedit.Recompress(must(t, "reading", func() ([]byte, error) { return os.ReadFile(plain) }), int32(compress.Codecs.Lz4),
		func(p []byte) []byte { return lz4hadoop.Encode(nil, p) })
	if err != nil {
		t.Fatal(err)
	}
	st := ducktest.NewStore(t)
	for name, c := range map[string]struct {
		file []byte
		like string // the file of the same rows and row groups DuckDB reads
	}{
		"bare blocks": {relabelCodec(t, rawBytes, 5), raw},
		"hadoop":      {hadoop, plain},
	} {
		t.Run(name, func(t *testing.T) {
			in := filepath.Join(t.TempDir(), "lz4.parquet")
			if err := os.WriteFile(in, c.file, 0o600); err != nil {
				t.Fatal(err)
			}
			// DuckDB 1.5.6 refuses the codec outright, even in a plaintext
			// file.
			if _, err := ducktest.OpenDuckDB(t).Query("SELECT * FROM read_parquet(" + ducktest.SQLString(in) + ")"); err == nil {
				t.Error("DuckDB reads a file whose codec is LZ4: rewriting it needs a second look")
			} else {
				t.Logf("DuckDB: %s", firstLine(err))
			}
			obj, err := sealPath(t, st, in, writer.WithAssignFieldIDs())
			if err != nil {
				t.Fatal(err)
			}
			checkObjectAgainst(t, st, c.like, obj, true)
			eachChunk(md(t, objectFooter(t, obj)), func(cc *metadata.ColumnChunkMetaData) {
				if cc.Compression() != compress.Codecs.Lz4Raw {
					t.Errorf("column %s: codec %v, want LZ4_RAW", cc.PathInSchema(), cc.Compression())
				}
			})
		})
	}
}

// md decodes a footer as arrow-go does.
func md(t *testing.T, f *seal.Footer) *metadata.FileMetaData {
	t.Helper()
	m, err := metadata.NewFileMetaData(f.Append(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// writeLZ4 has arrow-go write rec with the LZ4 codec.
func writeLZ4(schema *arrow.Schema, rec arrow.RecordBatch) error {
	fw, err := pqarrow.NewFileWriter(schema, &bytes.Buffer{}, parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Lz4)), pqarrow.NewArrowWriterProperties())
	if err != nil {
		return err
	}
	if err := fw.Write(rec); err != nil {
		fw.Close()
		return err
	}
	return fw.Close()
}

// relabelCodec sets the codec of every column chunk of a plaintext Parquet
// file's footer.
func relabelCodec(t *testing.T, plain []byte, codec int32) []byte {
	t.Helper()
	flen := int(binary.LittleEndian.Uint32(plain[len(plain)-8:]))
	start := len(plain) - 8 - flen
	md, err := thrift.DecodeExact(plain[start:len(plain)-8], thrift.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	rgs, err := md.List(4)
	if err != nil {
		t.Fatal(err)
	}
	for _, rg := range rgs.Items {
		cols, _ := rg.Struct.List(1)
		for _, cc := range cols.Items {
			cmd, _ := cc.Struct.Struct(3)
			cmd.Set(4, thrift.I32(codec))
		}
	}
	out := md.Append(bytes.Clone(plain[:start]))
	out = binary.LittleEndian.AppendUint32(out, uint32(len(out)-start))
	return append(out, "PAR1"...)
}
