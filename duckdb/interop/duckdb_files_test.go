package interop

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/sovm/sop-pme/duckdb/internal/ducktest"
	"github.com/sovm/sop-pme/internal/testkit/testtables"
	"github.com/sovm/sop-pme/keyref"
	"github.com/sovm/sop-pme/padme"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
)

// The tests in this file go the other way from interop_test.go: DuckDB
// 1.5.6 writes encrypted Parquet files, each is imported into the store, and
// our reader opens it by storage_id with the same raw key as its DEK. The
// values it returns must equal what DuckDB itself reads from the same file;
// reader.Check must name exactly the SOP-PME-1 requirements such a file
// misses (key_ref, pad entry, Padmé size, and field IDs when DuckDB was not
// given FIELD_IDS); and damage to the stored file must fail closed.
//
// The rows DuckDB writes come from an object of our writer (the type
// coverage table of gen_test.go, with its edge values and nulls), which
// DuckDB reads into a table first; the multi-page file is generated in SQL.

// duck is a DuckDB database that writes encrypted files, and the store they
// are imported into.
type duck struct {
	db       *sql.DB
	st       *ducktest.Store
	keyNames int // key names given to add_parquet_key so far
}

// newDuckDB opens a fresh DuckDB database able to write encrypted Parquet,
// and a fresh store.
func newDuckDB(t *testing.T) *duck {
	t.Helper()
	return &duck{db: ducktest.OpenWriter(t), st: ducktest.NewStore(t)}
}

// newDuck is newDuckDB with rows of the type coverage table, written by our
// writer and read by DuckDB into its table src, in order.
func newDuck(t *testing.T, rows int, seed uint64) *duck {
	t.Helper()
	d := newDuckDB(t)
	schema := testtables.AllTypes()
	rec := testtables.Record(schema, rows, seed)
	defer rec.Release()
	obj := writeObject(t, d.st, schema, []arrow.RecordBatch{rec})
	d.exec(t, "CREATE TABLE src AS SELECT * EXCLUDE (file_row_number) FROM read_parquet("+ducktest.SQLString(obj.path)+
		", encryption_config = "+ducktest.FooterKeyValue(keyBase64(obj))+", file_row_number = true) ORDER BY file_row_number")
	return d
}

func (d *duck) exec(t *testing.T, q string) {
	t.Helper()
	ducktest.Exec(t, d.db, q)
}

// keyConfig makes key known to DuckDB and returns the encryption_config
// that uses it, for COPY and for read_parquet.
//
// A 32-byte key goes in through PRAGMA add_parquet_key in base64, and the
// config names it. A 16- or 24-byte key cannot: add_parquet_key takes a
// string of exactly 16, 24 or 32 characters as the raw key, and the base64
// of a 16-byte key has 24 characters, that of a 24-byte key 32 (see
// TestDuckDBKeyForms). Those keys go in as footer_key_value, from base64.
func (d *duck) keyConfig(t *testing.T, key []byte) string {
	t.Helper()
	if len(key) != 32 {
		return ducktest.FooterKeyValue(base64Std(key))
	}
	d.keyNames++
	name := "k" + strconv.Itoa(d.keyNames)
	d.exec(t, "PRAGMA add_parquet_key("+ducktest.SQLString(name)+", "+ducktest.SQLString(base64Std(key))+")")
	return "{footer_key: " + ducktest.SQLString(name) + "}"
}

// duckFile is a file DuckDB wrote, as imported into the store.
type duckFile struct {
	id     storageid.ID
	path   string // the store's .data file
	data   []byte // its bytes
	dek    pme.DEK
	config string // the encryption_config DuckDB reads it with
}

// write has DuckDB COPY the result of query to an encrypted Parquet file
// under key with the further COPY options opts, and imports the file into
// the store.
func (d *duck) write(t *testing.T, query string, key []byte, opts string) duckFile {
	t.Helper()
	cfg := d.keyConfig(t, key)
	dek, err := pme.DEKFromBytes(key)
	if err != nil {
		t.Fatalf("pme.DEKFromBytes: %v", err)
	}
	id, data := d.st.ImportFile(t, ducktest.CopyEncrypted(t, d.db, query, cfg, opts), dek)
	return duckFile{id: id, path: d.st.Path(id), data: data, dek: dek, config: cfg}
}

func newKey(t *testing.T, n int) []byte {
	t.Helper()
	key := make([]byte, n)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	return key
}

// checkAgainstDuckDB compares rec, which our reader read from f, with what
// DuckDB reads from the same file: the same columns, by name, in file row
// order, value by value.
func (d *duck) checkAgainstDuckDB(t *testing.T, f duckFile, rec arrow.RecordBatch) {
	t.Helper()
	got, err := readAll(d.db, f.path, f.config, rec.Schema())
	if err != nil {
		t.Fatalf("DuckDB read_parquet: %s", ducktest.ErrorText(err))
	}
	compareRows(t, rec, got)
}

func names(fields []arrow.Field) []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = f.Name
	}
	return out
}

var allColumns = names(testtables.AllTypes().Fields())

// project returns the named columns of rec, in that order.
func project(rec arrow.RecordBatch, names ...string) arrow.RecordBatch {
	fields := make([]arrow.Field, len(names))
	cols := make([]arrow.Array, len(names))
	for i, n := range names {
		idx := rec.Schema().FieldIndices(n)
		if len(idx) != 1 {
			panic("interop: no column " + n)
		}
		fields[i], cols[i] = rec.Schema().Field(idx[0]), rec.Column(idx[0])
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows())
}

// checkDuckDBReport checks reader.Check's report on a DuckDB file: it fails
// exactly key_ref (DuckDB writes no key_metadata), the pad entry (nor a
// sovm:sop-pad-v1 entry), the padded size unless the size happens to be a
// Padmé fixed point (without a pad entry there is no unpadded size to check
// it against, so the check may fail it then too), and field IDs if DuckDB was
// not given FIELD_IDS, and rows if the reader's default read fails; and it
// passes storage_id, magic, algorithm and modules.
func checkDuckDBReport(t *testing.T, st *ducktest.Store, f duckFile, withFieldIDs bool) {
	t.Helper()
	rep, err := reader.Check(context.Background(), st, f.id, ducktest.Keys{f.id: f.dek})
	if err != nil {
		t.Fatalf("reader.Check: %v", err)
	}
	if rep.Conformant() {
		t.Fatalf("reader.Check reports a DuckDB file conformant: %v", rep)
	}
	size := uint64(len(f.data))
	target, err := padme.Target(size)
	if err != nil {
		t.Fatal(err)
	}
	want := []reader.Requirement{reader.ReqKeyRef, reader.ReqPadEntry}
	if target != size {
		want = append(want, reader.ReqPaddedSize)
	}
	if !withFieldIDs {
		want = append(want, reader.ReqFieldIDs)
	}
	// Check and the reader agree: rows fails exactly when a read with the
	// reader's defaults fails (a batch beyond the default memory limit, a
	// column arrow-go does not decode).
	rec, _, readErr := scan(openReader(t, st, f.id, f.dek))
	if readErr != nil {
		want = append(want, reader.ReqRows)
		t.Logf("the reader's default read fails: %v", readErr)
	} else {
		rec.Release()
	}
	allowed := slices.Clone(want)
	if target == size {
		allowed = append(allowed, reader.ReqPaddedSize)
	}
	got := failedRequirements(rep)
	for _, req := range want {
		if !slices.Contains(got, req) {
			t.Errorf("reader.Check does not fail %v:\n%v", req, rep)
		}
	}
	for _, req := range got {
		if !slices.Contains(allowed, req) {
			t.Errorf("reader.Check fails %v, which a DuckDB file meets:\n%v", req, rep)
		}
	}
	if readErr == nil && (!slices.Contains(rep.Checked, reader.ReqRows) || rep.Failed(reader.ReqRows)) {
		t.Errorf("the reader reads the file, and Check does not pass %v:\n%v", reader.ReqRows, rep)
	}
	for _, req := range []reader.Requirement{reader.ReqStorageID, reader.ReqMagic, reader.ReqAlgorithm, reader.ReqModules} {
		if !slices.Contains(rep.Checked, req) || rep.Failed(req) {
			t.Errorf("requirement %v: checked %v, failed %v; want checked and passed:\n%v", req, slices.Contains(rep.Checked, req), rep.Failed(req), rep)
		}
	}
	if withFieldIDs && (!slices.Contains(rep.Checked, reader.ReqFieldIDs) || rep.Failed(reader.ReqFieldIDs)) {
		t.Errorf("a file written with FIELD_IDS does not pass %v:\n%v", reader.ReqFieldIDs, rep)
	}
	if rep.Size != int64(size) || rep.UnpaddedSize != -1 || rep.KeyRef != (keyref.Ref{}) {
		t.Errorf("report: size %d, unpadded size %d, key_ref %x; want %d, -1, none", rep.Size, rep.UnpaddedSize, rep.KeyRef, size)
	}
	t.Logf("%d bytes (Padmé target %d): %v", size, target, rep)
}

// TestReaderReadsDuckDBFiles has DuckDB write files of every covered type,
// flat and nested, in one and several row groups, with every codec DuckDB
// offers, with 16-, 24- and 32-byte keys, and with and without field IDs;
// our reader opens each from the store by storage_id and must return what
// DuckDB reads, and reader.Check must name what each file lacks.
func TestReaderReadsDuckDBFiles(t *testing.T) {
	t.Parallel()
	const rows = 6000
	d := newDuck(t, rows, 11)
	type tc struct {
		name     string
		cols     []string
		native   bool // add dec4, a DECIMAL(4,1) made by DuckDB (field ID 1000)
		keyLen   int
		opts     string
		fieldIDs bool // FIELD_IDS with the table's IDs
		check    func(t *testing.T, lay layout)
	}
	cases := []tc{
		{name: "flat", cols: ducktest.FlatColumns(), native: true, keyLen: 32, fieldIDs: true},
		{name: "nested", cols: ducktest.NestedColumns(), keyLen: 32, fieldIDs: true},
		{name: "row-groups", cols: allColumns, keyLen: 32, opts: "ROW_GROUP_SIZE 2048", fieldIDs: true,
			check: func(t *testing.T, lay layout) {
				if lay.rowGroups < 2 {
					t.Errorf("%d row groups, want several", lay.rowGroups)
				}
			}},
		{name: "field-ids-auto", cols: allColumns, keyLen: 32, opts: "FIELD_IDS 'auto'"},
		{name: "key=16", cols: allColumns, keyLen: 16},
		{name: "key=24", cols: allColumns, keyLen: 24},
		{name: "key=32", cols: allColumns, keyLen: 32},
	}
	codecs := map[string]int32{"snappy": codecSnappy, "zstd": codecZstd, "gzip": codecGzip, "brotli": codecBrotli, "lz4": codecLZ4Raw, "uncompressed": codecUncompressed}
	for _, c := range []string{"snappy", "zstd", "gzip", "brotli", "lz4", "uncompressed"} {
		cases = append(cases, tc{name: "codec=" + c, cols: allColumns, keyLen: 32, opts: "COMPRESSION " + c,
			check: func(t *testing.T, lay layout) {
				for _, ch := range lay.chunks {
					if ch.codec != codecs[c] {
						t.Errorf("column %s: codec %d, want %d (%s)", ch.path, ch.codec, codecs[c], c)
					}
				}
			}})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fields := ducktest.Columns(c.cols...)
			sel := strings.Join(c.cols, ", ")
			opts := c.opts
			if c.fieldIDs {
				ids := ducktest.FieldIDs(fields)
				if c.native {
					ids = strings.TrimSuffix(ids, "}") + ", dec4: 1000}"
				}
				opts = strings.TrimPrefix(opts+", "+ids, ", ")
			}
			if c.native {
				sel += ", ((i16 % 1000)::DECIMAL(4,0) * 0.1)::DECIMAL(4,1) AS dec4"
			}
			key := newKey(t, c.keyLen)
			f := d.write(t, "SELECT "+sel+" FROM src", key, opts)
			lay := walkLayout(t, f.data, f.dek)
			if c.check != nil {
				c.check(t, lay)
			}
			t.Logf("%d bytes, %d row groups, %d column chunks", len(f.data), lay.rowGroups, len(lay.chunks))

			r := openReader(t, d.st, f.id, f.dek)
			if r.Size() != int64(len(f.data)) || r.NumRowGroups() != lay.rowGroups {
				t.Errorf("reader: size %d, %d row groups; the file has %d bytes, %d row groups", r.Size(), r.NumRowGroups(), len(f.data), lay.rowGroups)
			}
			if c.fieldIDs {
				want := fieldIDsOf(t, arrow.NewSchema(fields, nil))
				if c.native {
					want["dec4"] = 1000
				}
				if got := fieldIDsOf(t, r.Schema()); !maps.Equal(got, want) {
					t.Errorf("field IDs in the reader's schema:\n%v\nwant (FIELD_IDS):\n%v", got, want)
				}
			}
			rec := mustScan(t, r)
			defer rec.Release()
			if rec.NumRows() != rows {
				t.Fatalf("read %d rows, want %d", rec.NumRows(), rows)
			}
			d.checkAgainstDuckDB(t, f, rec)

			// Each row group alone: consecutive rows of the whole. Then all
			// of them, last first: the same row groups, in that order.
			if lay.rowGroups > 1 {
				var parts []arrow.RecordBatch
				var off int64
				for i := range lay.rowGroups {
					part := mustScan(t, r, reader.WithRowGroups(i))
					defer part.Release()
					if part.NumRows() == 0 {
						t.Errorf("row group %d: no rows", i)
					}
					want := rec.NewSlice(off, off+part.NumRows())
					compareRecords(t, want, part)
					want.Release()
					off += part.NumRows()
					parts = append(parts, part)
				}
				if off != rec.NumRows() {
					t.Errorf("the row groups hold %d rows, a scan of all %d", off, rec.NumRows())
				}
				var order []int
				for i := lay.rowGroups - 1; i >= 0; i-- {
					order = append(order, i)
				}
				rev := mustScan(t, r, reader.WithRowGroups(order...))
				defer rev.Release()
				off = 0
				for _, i := range order {
					got := rev.NewSlice(off, off+parts[i].NumRows())
					compareRecords(t, parts[i], got)
					got.Release()
					off += parts[i].NumRows()
				}
			}
			if r.Verified() {
				t.Errorf("Verified after scans; only Verify verifies (Section 11.10)")
			}
			if err := r.Verify(context.Background()); err != nil || !r.Verified() {
				t.Errorf("Verify: %v, Verified %v", err, r.Verified())
			}
			// FIELD_IDS 'auto' gives every column an ID too, but numbers
			// them from 0, which Check fails (SOP-PME-1 field IDs are
			// positive): only the table's own IDs pass.
			checkDuckDBReport(t, d.st, f, c.fieldIDs)
		})
	}
}

// TestReaderReadsDuckDBMultiPage reads a file in which DuckDB wrote column
// chunks of at least 3 data pages, a flat one and a list's. DuckDB 1.5.6
// has no page size option (DATA_PAGE_SIZE_LIMIT is refused): it closes a
// page once its values take 100 MiB (PrimitiveColumnWriter::
// MAX_UNCOMPRESSED_PAGE_SIZE), so a chunk needs over 200 MiB of values; and
// a repeated column closes pages only where a vector of 2048 rows begins, so
// the list needs a third vector too (more than 4096 rows). Unique 64 KiB
// strings keep DuckDB off dictionary encoding, and zstd keeps the file
// small.
func TestReaderReadsDuckDBMultiPage(t *testing.T) {
	t.Parallel()
	const rows = 4200 // 4200 × 64 KiB = 262.5 MiB per column
	q := `SELECT i::BIGINT AS id,
		repeat(chr(97 + (i % 26)::INTEGER), 65536 - 16) || printf('%016d', i) AS big,
		CASE WHEN i % 7 = 3 THEN NULL ELSE [repeat(chr(65 + (i % 26)::INTEGER), 65536 - 16) || printf('%016d', i), '', NULL] END AS lbig
		FROM range(` + strconv.Itoa(rows) + `) t(i)`
	d := newDuckDB(t)
	f := d.write(t, q, newKey(t, 32), "COMPRESSION zstd, ROW_GROUP_SIZE 1000000, FIELD_IDS {id: 1, big: 2, lbig: {__duckdb_field_id: 3, element: 4}}")
	lay := walkLayout(t, f.data, f.dek)
	if lay.rowGroups != 1 {
		t.Errorf("%d row groups, want 1", lay.rowGroups)
	}
	pages := map[string]int{}
	for _, c := range lay.chunks {
		pages[c.path] = c.dataPages()
		if c.hasDictionaryPage() {
			t.Errorf("column %s has a dictionary page", c.path)
		}
	}
	t.Logf("%d bytes; data pages per chunk: %v", len(f.data), pages)
	for _, p := range []string{"big", "lbig.list.element"} {
		if pages[p] < 3 {
			t.Errorf("column %s: %d data pages, want at least 3", p, pages[p])
		}
	}
	r := openReader(t, d.st, f.id, f.dek)
	// zstd packs the 525 MiB of one batch into 131 KB: far beyond what the
	// reader's default memory limit lets a batch decode to (40 MiB plus 16
	// bytes per byte read, against hostile objects), so the scans set one.
	limit := reader.WithMemoryLimit(1 << 30)
	rec := mustScan(t, r, limit)
	defer rec.Release()
	if rec.NumRows() != rows {
		t.Fatalf("read %d rows, want %d", rec.NumRows(), rows)
	}
	d.checkAgainstDuckDB(t, f, rec)
	// The list column alone, by its field ID.
	lbig := mustScan(t, r, reader.WithFields(3), limit)
	defer lbig.Release()
	if lbig.NumCols() != 1 || lbig.Schema().Field(0).Name != "lbig" {
		t.Fatalf("projection to field 3: %v", lbig.Schema())
	}
	want := project(rec, "lbig")
	defer want.Release()
	compareRecords(t, want, lbig)
	checkDuckDBReport(t, d.st, f, true)
}

// TestDuckDBProjectionByFieldID projects a DuckDB file written with
// FIELD_IDS by field ID: each top-level field alone, several at once, a
// nested field (which brings its struct, pruned to it), together with a
// row-group selection; and an unknown ID fails with reader.ErrField.
func TestDuckDBProjectionByFieldID(t *testing.T) {
	t.Parallel()
	d := newDuck(t, 5000, 12)
	schema := testtables.AllTypes()
	f := d.write(t, "SELECT * FROM src", newKey(t, 32), "ROW_GROUP_SIZE 2048, "+ducktest.FieldIDs(schema.Fields()))
	r := openReader(t, d.st, f.id, f.dek)
	if r.NumRowGroups() < 2 {
		t.Fatalf("%d row groups, want several", r.NumRowGroups())
	}
	all := mustScan(t, r)
	defer all.Release()
	d.checkAgainstDuckDB(t, f, all)

	for _, fld := range schema.Fields() {
		t.Run(fld.Name, func(t *testing.T) {
			got := mustScan(t, r, reader.WithFields(fieldID(t, schema, fld.Name)))
			defer got.Release()
			want := project(all, fld.Name)
			defer want.Release()
			compareRecords(t, want, got)
		})
	}

	t.Run("several", func(t *testing.T) {
		// Asked for in another order, returned in schema order.
		got := mustScan(t, r, reader.WithFields(fieldID(t, schema, "m"), fieldID(t, schema, "i16"), fieldID(t, schema, "l_s"), fieldID(t, schema, "bin")))
		defer got.Release()
		want := project(all, "i16", "bin", "l_s", "m")
		defer want.Release()
		compareRecords(t, want, got)
		d.checkAgainstDuckDB(t, f, got)
	})

	t.Run("nested-field", func(t *testing.T) {
		got := mustScan(t, r, reader.WithFields(fieldID(t, schema, "st.b")))
		defer got.Release()
		if got.NumCols() != 1 || got.Schema().Field(0).Name != "st" {
			t.Fatalf("projection to st.b: %v", got.Schema())
		}
		st, ok := got.Schema().Field(0).Type.(*arrow.StructType)
		if !ok || st.NumFields() != 1 || st.Field(0).Name != "b" {
			t.Fatalf("projection to st.b: st is %v, want struct<b>", got.Schema().Field(0).Type)
		}
		rows := ducktest.MustQuery(t, d.db, "SELECT CASE WHEN st IS NULL THEN NULL ELSE {'b': st.b} END FROM read_parquet("+ducktest.SQLString(f.path)+
			", encryption_config = "+f.config+", file_row_number = true) ORDER BY file_row_number")
		compareRows(t, got, rows)
	})

	t.Run("row-groups", func(t *testing.T) {
		last := r.NumRowGroups() - 1
		got := mustScan(t, r, reader.WithFields(fieldID(t, schema, "s")), reader.WithRowGroups(last))
		defer got.Release()
		// The last row group holds the last rows.
		s := project(all, "s")
		defer s.Release()
		want := s.NewSlice(s.NumRows()-got.NumRows(), s.NumRows())
		defer want.Release()
		if got.NumRows() == 0 || got.NumRows() >= all.NumRows() {
			t.Fatalf("row group %d: %d rows of %d", last, got.NumRows(), all.NumRows())
		}
		compareRecords(t, want, got)
	})

	t.Run("unknown-id", func(t *testing.T) {
		if _, err := r.Scan(context.Background(), reader.WithFields(99999)); !errors.Is(err, reader.ErrField) {
			t.Fatalf("Scan(WithFields(99999)) = %v, want reader.ErrField", err)
		}
	})
	if r.Verified() {
		t.Errorf("Verified after projections (Section 11.10)")
	}
}

// TestDuckDBFileDamaged flips one byte in a column chunk of a DuckDB file
// in the store's .data file, after its import: a scan that reads that chunk
// fails with verify.ErrVerify before it returns any row, while a projection
// to a column whose chunk lies in other 16 KiB groups still reads exactly
// what DuckDB read from the intact file, without making the object count as
// verified; Verify and reader.Check find the damage.
func TestDuckDBFileDamaged(t *testing.T) {
	t.Parallel()
	d := newDuckDB(t)
	// Three uncompressed 8-byte columns of 30 000 distinct values: chunks of
	// about 240 KB each, in one row group.
	f := d.write(t, `SELECT i::BIGINT AS a, (i * 7919 % 100003)::BIGINT AS b, i::DOUBLE / 3 AS c FROM range(30000) t(i)`,
		newKey(t, 32), "COMPRESSION uncompressed, FIELD_IDS {a: 1, b: 2, c: 3}")
	lay := walkLayout(t, f.data, f.dek)
	if lay.rowGroups != 1 || len(lay.chunks) != 3 {
		t.Fatalf("%d row groups, %d chunks; want 1 and 3", lay.rowGroups, len(lay.chunks))
	}
	if len(f.data) <= 64<<10 {
		t.Fatalf("file of %d bytes, want more than 64 KiB", len(f.data))
	}
	spans := map[string]pme.Span{}
	for _, c := range lay.chunks {
		spans[c.path] = c.span
	}
	group := func(off int64) int64 { return off / verify.GroupSize }
	b := spans["b"]
	off := b.Off + b.Len/2
	g := group(off)
	for _, other := range []string{"a", "c"} {
		s := spans[other]
		if group(s.Off) <= g && g <= group(s.End()-1) {
			t.Fatalf("byte %d (group %d) is in a group of column %s [%d, %d)", off, g, other, s.Off, s.End())
		}
	}
	var dataEnd int64
	for _, s := range spans {
		dataEnd = max(dataEnd, s.End())
	}
	if group(dataEnd) <= g {
		t.Fatalf("byte %d (group %d) is in a group of the footer region", off, g)
	}

	// DuckDB's values, read while the file is intact.
	r := openReader(t, d.st, f.id, f.dek)
	intact := mustScan(t, r)
	defer intact.Release()
	d.checkAgainstDuckDB(t, f, intact)

	fh, err := os.OpenFile(f.path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	one := []byte{f.data[off] ^ 0x01}
	if _, err := fh.WriteAt(one, off); err != nil {
		t.Fatal(err)
	}
	if err := fh.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("flipped byte %d (group %d) of %d, in column b [%d, %d)", off, g, len(f.data), b.Off, b.End())

	ctx := context.Background()
	r = openReader(t, d.st, f.id, f.dek) // the footer is intact: Open succeeds
	for _, c := range []struct {
		name string
		opts []reader.ScanOption
	}{
		{"all", nil},
		{"b", []reader.ScanOption{reader.WithFields(2)}},
		{"a-and-b", []reader.ScanOption{reader.WithFields(1, 2)}},
	} {
		t.Run("touching/"+c.name, func(t *testing.T) {
			rec, n, err := scan(r, c.opts...)
			if !errors.Is(err, verify.ErrVerify) {
				t.Fatalf("scan: %v, want verify.ErrVerify", err)
			}
			if n != 0 || rec != nil {
				t.Fatalf("scan returned %d records before failing", n)
			}
			t.Logf("%v", err)
		})
	}
	for _, c := range []struct {
		name string
		ids  []int32
	}{{"a", []int32{1}}, {"c", []int32{3}}, {"a-and-c", []int32{1, 3}}} {
		t.Run("not-touching/"+c.name, func(t *testing.T) {
			got := mustScan(t, r, reader.WithFields(c.ids...))
			defer got.Release()
			var cols []string
			for _, f := range got.Schema().Fields() {
				cols = append(cols, f.Name)
			}
			want := project(intact, cols...)
			defer want.Release()
			if !slices.Equal(cols, map[string][]string{"a": {"a"}, "c": {"c"}, "a-and-c": {"a", "c"}}[c.name]) {
				t.Fatalf("projection to %v gives columns %v", c.ids, cols)
			}
			compareRecords(t, want, got)
		})
	}
	if r.Verified() {
		t.Errorf("Verified after projections")
	}
	if err := r.Verify(ctx); !errors.Is(err, verify.ErrVerify) || r.Verified() {
		t.Errorf("Verify = %v (Verified %v), want verify.ErrVerify", err, r.Verified())
	}
	rep, err := reader.Check(ctx, d.st, f.id, ducktest.Keys{f.id: f.dek})
	if err != nil {
		t.Fatalf("reader.Check: %v", err)
	}
	if !rep.Failed(reader.ReqStorageID) || rep.Conformant() {
		t.Errorf("reader.Check of the damaged file: %v, want storage_id failed", rep)
	}
}

// TestDuckDBKeyForms pins down how DuckDB takes a key, which decides how the
// tests hand it one. PRAGMA add_parquet_key takes a string of exactly 16, 24
// or 32 characters as the raw key and base64-decodes anything else. The
// base64 of a 32-byte key (44 characters) is decoded; that of a 16-byte key
// has 24 characters and becomes an AES-192 key made of those characters, so
// a file written with it does not open under the 16-byte DEK but under the
// base64 text. footer_key_value with from_base64 gives DuckDB the raw bytes
// for every key size.
func TestDuckDBKeyForms(t *testing.T) {
	t.Parallel()
	d := newDuckDB(t)
	const q = "SELECT i::BIGINT AS a, i::VARCHAR AS s FROM range(100) t(i)"
	ctx := context.Background()
	opens := func(f duckFile, dek pme.DEK) error {
		_, err := reader.Open(ctx, d.st, f.id, ducktest.Keys{f.id: dek})
		return err
	}
	for _, n := range []int{16, 24, 32} {
		t.Run(fmt.Sprintf("add_parquet_key/base64/%d", n), func(t *testing.T) {
			key := newKey(t, n)
			b64 := base64Std(key)
			d.exec(t, "PRAGMA add_parquet_key('b"+strconv.Itoa(n)+"', "+ducktest.SQLString(b64)+")")
			tmp := filepath.Join(t.TempDir(), "f.parquet")
			d.exec(t, "COPY ("+q+") TO "+ducktest.SQLString(tmp)+" (ENCRYPTION_CONFIG {footer_key: 'b"+strconv.Itoa(n)+"'})")
			dek, _ := pme.DEKFromBytes(key)
			id, data := d.st.ImportFile(t, tmp, dek)
			f := duckFile{id: id, data: data}
			raw := opens(f, dek)
			if n == 32 {
				if raw != nil {
					t.Fatalf("a file written with the base64 of a 32-byte key does not open under that key: %v", raw)
				}
				return
			}
			if !errors.Is(raw, pme.ErrAuth) {
				t.Fatalf("under the %d-byte key: %v, want pme.ErrAuth", n, raw)
			}
			text, err := pme.DEKFromBytes([]byte(b64))
			if err != nil {
				t.Fatal(err)
			}
			if err := opens(f, text); err != nil {
				t.Fatalf("under the %d characters of the base64 text as the key: %v", len(b64), err)
			}
		})
		t.Run(fmt.Sprintf("footer_key_value/%d", n), func(t *testing.T) {
			key := newKey(t, n)
			tmp := filepath.Join(t.TempDir(), "f.parquet")
			d.exec(t, "COPY ("+q+") TO "+ducktest.SQLString(tmp)+" (ENCRYPTION_CONFIG "+ducktest.FooterKeyValue(base64Std(key))+")")
			dek, _ := pme.DEKFromBytes(key)
			id, data := d.st.ImportFile(t, tmp, dek)
			f := duckFile{id: id, data: data}
			if err := opens(f, dek); err != nil {
				t.Fatalf("under the %d-byte key: %v", n, err)
			}
			wrong := newKey(t, n)
			wdek, _ := pme.DEKFromBytes(wrong)
			if err := opens(f, wdek); !errors.Is(err, pme.ErrAuth) {
				t.Fatalf("under a wrong key: %v, want pme.ErrAuth", err)
			}
		})
	}
}

// TestDuckDBParquetV2 reads a file DuckDB writes with PARQUET_VERSION V2,
// which keeps V1 page headers but encodes values with DELTA_BINARY_PACKED,
// DELTA_LENGTH_BYTE_ARRAY and BYTE_STREAM_SPLIT, column by column. Every
// column must read as DuckDB reads it, or fail with an error: never other
// values.
//
// Known failure: DuckDB 1.5.6 computes the deltas of INT32 columns (i32,
// u32) without 32-bit wrap-around, so a jump such as MinInt32 → MaxInt32
// gives a min delta outside the int32 range; DuckDB reads that back, but
// arrow-go v18.8.0, which decodes pages for our reader, refuses it
// ("minimum delta … exceeds INT32 range"). The test accepts that failure for
// those two columns only, and that it is a decoding error, not a
// verification or authentication one.
func TestDuckDBParquetV2(t *testing.T) {
	t.Parallel()
	d := newDuck(t, 3000, 13)
	schema := testtables.AllTypes()
	for _, codec := range []string{"uncompressed", "zstd"} {
		t.Run(codec, func(t *testing.T) {
			f := d.write(t, "SELECT * FROM src", newKey(t, 32), "PARQUET_VERSION V2, COMPRESSION "+codec+", "+ducktest.FieldIDs(schema.Fields()))
			lay := walkLayout(t, f.data, f.dek)
			encodings := map[int32]bool{}
			for _, c := range lay.chunks {
				for _, p := range c.pages {
					if p.typ != pageDictionary {
						encodings[p.encoding] = true
					}
				}
			}
			// 5 DELTA_BINARY_PACKED, 6 DELTA_LENGTH_BYTE_ARRAY, 9 BYTE_STREAM_SPLIT.
			for _, e := range []int32{5, 6, 9} {
				if !encodings[e] {
					t.Errorf("no data page with encoding %d; encodings %v", e, encodings)
				}
			}
			r := openReader(t, d.st, f.id, f.dek)
			var failed []string
			for _, fld := range schema.Fields() {
				rec, _, err := scan(r, reader.WithFields(fieldID(t, schema, fld.Name)))
				if err != nil {
					if errors.Is(err, verify.ErrVerify) || errors.Is(err, pme.ErrAuth) {
						t.Errorf("column %s: %v", fld.Name, err)
					}
					failed = append(failed, fld.Name)
					t.Logf("column %s: %v", fld.Name, err)
					continue
				}
				t.Run(fld.Name, func(t *testing.T) { d.checkAgainstDuckDB(t, f, rec) })
				rec.Release()
			}
			if slices.ContainsFunc(failed, func(c string) bool { return c != "i32" && c != "u32" }) {
				t.Errorf("columns that fail: %v; only i32 and u32 are known to", failed)
			}
			checkDuckDBReport(t, d.st, f, true)
		})
	}
}
