package sopsql

import (
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/sovm/sop-pme/duckdb/internal/ducktest"
	"github.com/sovm/sop-pme/internal/testkit/benchdata"
	"github.com/sovm/sop-pme/internal/testkit/testtables"
	"github.com/sovm/sop-pme/internal/testkit/vectors"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/writer"
)

// The equivalence suite: for every object of the set, SELECT * FROM
// sop_scan(id) returns what DuckDB's own read_parquet returns for the same
// stored file given the DEK: the same columns with the same DuckDB types
// (DESCRIBE), and the same rows, in the same order, value by value.
//
// The set includes every intact, readable object of the SOP-PME-1 test
// vectors (testdata/vectors). To add more objects, import them into the
// store with their DEK (store.importBytes) and append an equivObject.

// equivObject is an object of the equivalence set.
type equivObject struct {
	name string
	id   storageid.ID
}

// equivalenceObjects writes the objects of the set into st.
func equivalenceObjects(t *testing.T, st *ducktest.Store) []equivObject {
	t.Helper()
	const rows = 3000
	var objs []equivObject
	add := func(name string, id storageid.ID) { objs = append(objs, equivObject{name, id}) }
	rec := testtables.Record(testtables.AllTypes(), rows, 1)
	defer rec.Release()

	// The interop suite's table with the writer's defaults, then under
	// several codecs, dictionary settings and page versions, in several row
	// groups of several pages.
	add("all-types", st.Write(t, rec.Schema(), []arrow.RecordBatch{rec}).StorageID)
	for _, l := range []struct {
		codec   writer.Codec
		dict    bool
		version writer.DataPageVersion
	}{
		{writer.Zstd, true, writer.DataPageV1},
		{writer.Snappy, false, writer.DataPageV1},
		{writer.Uncompressed, true, writer.DataPageV2},
		{writer.Uncompressed, false, writer.DataPageV2},
	} {
		obj := st.Write(t, rec.Schema(), []arrow.RecordBatch{rec}, writer.WithCodec(l.codec), writer.WithDictionary(l.dict),
			writer.WithDataPageVersion(l.version), writer.WithRowGroupRows(1100), writer.WithDataPageSize(64))
		add(fmt.Sprintf("all-types/codec=%v/dictionary=%v/page=v%d/row-groups=3", l.codec, l.dict, l.version), obj.StorageID)
	}
	extra := testtables.Record(testtables.ExtraTypes(), rows, 2)
	defer extra.Release()
	add("extra-types", st.Write(t, extra.Schema(), []arrow.RecordBatch{extra}, writer.WithRowGroupRows(1000)).StorageID)
	bench := benchdata.Record(rows, 3)
	defer bench.Release()
	add("benchdata", st.Write(t, bench.Schema(), []arrow.RecordBatch{bench}, writer.WithRowGroupRows(700)).StorageID)

	// Files DuckDB wrote (encrypted, empty AAD), with and without field IDs:
	// the reader reads them, and so must sop_scan.
	d := openDuckWriter(t)
	d.loadTable(t, st, "src", rec)
	flat := ducktest.FlatColumns()
	add("duckdb/flat", d.write(t, st, "SELECT "+strings.Join(flat, ", ")+", CAST(i16 % 1000 AS DECIMAL(4,1)) AS dec4 FROM src",
		32, ducktest.FieldIDs(ducktest.Columns(flat...), "dec4: 1000")))
	nestedCols := ducktest.NestedColumns()
	add("duckdb/nested", d.write(t, st, "SELECT "+strings.Join(nestedCols, ", ")+" FROM src", 16, ducktest.FieldIDs(ducktest.Columns(nestedCols...))))
	add("duckdb/no-field-ids/row-groups", d.write(t, st, "SELECT * FROM src", 24, "ROW_GROUP_SIZE 1024"))

	// The SOP-PME-1 test vectors (testdata/vectors) whose objects are
	// intact and readable: ours, and DuckDB's.
	vs, err := vectors.Load(os.DirFS("../../testdata"), "vectors")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, v := range vs {
		if v.Read.Err != nil || v.Verify.Err != nil {
			continue
		}
		dek, err := pme.DEKFromBytes(v.DEK)
		if err != nil {
			t.Fatal(err)
		}
		if id := st.Import(t, v.Object, dek); id != v.ID {
			t.Fatalf("vector %s: imported as %v, its storage_id is %v", v.Name, id, v.ID)
		}
		add("vector/"+v.Name, v.ID)
		n++
	}
	if n < 10 {
		t.Fatalf("only %d readable test vectors", n)
	}
	return objs
}

// TestEquivalence checks every object of the set, at DuckDB's default
// thread count and with one thread.
func TestEquivalence(t *testing.T) {
	t.Parallel()
	st := ducktest.NewStore(t)
	objs := equivalenceObjects(t, st)
	for _, threads := range []int{0, 1} {
		var opts []Option
		if threads > 0 {
			opts = append(opts, WithThreads(threads))
		}
		db, native := openDB(t, st, st, opts...), openNative(t, threads)
		for _, o := range objs {
			t.Run(fmt.Sprintf("threads=%d/%s", threads, o.name), func(t *testing.T) {
				checkEquivalent(t, db.SQL(), native, st, o.id)
			})
		}
	}
}

// checkEquivalent compares sop_scan of id on db with read_parquet of its
// file on native.
func checkEquivalent(t *testing.T, db, native *sql.DB, st *ducktest.Store, id storageid.ID) {
	t.Helper()
	describe := func(db *sql.DB, from string) [][]any {
		rows := ducktest.MustQuery(t, db, "SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM "+from+")")
		if len(rows) == 0 {
			t.Fatalf("DESCRIBE %s: no columns", from)
		}
		return rows
	}
	compareRows(t, "DESCRIBE", describe(native, nativeScan(st, id)), describe(db, sopScan(id)))
	want := ducktest.MustQuery(t, native, "SELECT * FROM "+nativeScan(st, id))
	got := ducktest.MustQuery(t, db, "SELECT * FROM "+sopScan(id))
	compareRows(t, "SELECT *", want, got)
}

// duckWriter is a DuckDB database that writes encrypted Parquet files.
type duckWriter struct{ db *sql.DB }

func openDuckWriter(t *testing.T) *duckWriter {
	t.Helper()
	return &duckWriter{db: ducktest.OpenWriter(t)}
}

// loadTable has DuckDB read rec, written as an object into st, into table
// name, in order.
func (d *duckWriter) loadTable(t *testing.T, st *ducktest.Store, name string, rec arrow.RecordBatch) storageid.ID {
	t.Helper()
	id := st.Write(t, rec.Schema(), []arrow.RecordBatch{rec}).StorageID
	ducktest.Exec(t, d.db, "CREATE TABLE "+name+" AS SELECT * FROM "+nativeScan(st, id))
	return id
}

// write has DuckDB COPY the rows of query to an encrypted Parquet file
// under a fresh key of keyLen bytes, with the further COPY options opts, and
// imports the file into st.
func (d *duckWriter) write(t *testing.T, st *ducktest.Store, query string, keyLen int, opts string) storageid.ID {
	t.Helper()
	key := make([]byte, keyLen)
	rand.Read(key)
	dek, err := pme.DEKFromBytes(key)
	if err != nil {
		t.Fatal(err)
	}
	path := ducktest.CopyEncrypted(t, d.db, query, ducktest.FooterKeyValue(base64.StdEncoding.EncodeToString(key)), opts)
	id, _ := st.ImportFile(t, path, dek)
	return id
}

// TestDecimal256 covers decimal256 columns (precision above 38), which
// read_parquet reads as DOUBLE: sop_scan gives the same type, and the
// double nearest each decimal written. DuckDB 1.5.6's own values for such a
// column (an FLBA of 17 bytes, as arrow-go writes it) are not the values
// written, so this column is compared with the written record, not with
// read_parquet.
func TestDecimal256(t *testing.T) {
	t.Parallel()
	g := testtables.FieldIDs{}
	schema := arrow.NewSchema([]arrow.Field{g.Field("dec40", &arrow.Decimal256Type{Precision: 40, Scale: 3})}, nil)
	rec := testtables.Record(schema, 500, 7)
	defer rec.Release()
	st := ducktest.NewStore(t)
	id := st.Write(t, schema, []arrow.RecordBatch{rec}).StorageID
	db, nativeDB := openDB(t, st, st).SQL(), openNative(t, 0)
	describe := func(db *sql.DB, from string) [][]any {
		return ducktest.MustQuery(t, db, "SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM "+from+")")
	}
	compareRows(t, "DESCRIBE", describe(nativeDB, nativeScan(st, id)), describe(db, sopScan(id)))
	got := ducktest.MustQuery(t, db, "SELECT * FROM "+sopScan(id))
	col := rec.Column(0).(*array.Decimal256)
	want := make([][]any, col.Len())
	for i := range want {
		want[i] = []any{nil}
		if col.IsValid(i) {
			f, err := strconv.ParseFloat(col.Value(i).ToString(3), 64) // correctly rounded
			if err != nil {
				t.Fatal(err)
			}
			want[i][0] = f
		}
	}
	compareRows(t, "sop_scan", want, got)
	native := ducktest.MustQuery(t, nativeDB, "SELECT * FROM "+nativeScan(st, id)+" LIMIT 3")
	t.Logf("written %v, sop_scan %v, read_parquet %v", want[:3], got[:3], native)
}
