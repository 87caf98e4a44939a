package sopsql

import (
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/sovm/sop-pme/internal/testkit/benchdata"
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

// extraTypesSchema has a column of each type sop_scan maps beyond those of
// the interop suite's table (allTypesSchema).
func extraTypesSchema() *arrow.Schema {
	g := fieldIDs{Last: 100}
	f := g.Field
	return arrow.NewSchema([]arrow.Field{
		f("f16", arrow.FixedWidthTypes.Float16),
		f("t32s", arrow.FixedWidthTypes.Time32s),
		f("t32ms", arrow.FixedWidthTypes.Time32ms),
		f("t64us", arrow.FixedWidthTypes.Time64us),
		f("fsb", &arrow.FixedSizeBinaryType{ByteWidth: 5}),
		f("ls", arrow.BinaryTypes.LargeString),
		f("nul", arrow.Null),
		f("ts_s", &arrow.TimestampType{Unit: arrow.Second}),
		f("tstz_s", &arrow.TimestampType{Unit: arrow.Second, TimeZone: "UTC"}),
		f("tstz_ny", &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "America/New_York"}),
		f("d64", arrow.FixedWidthTypes.Date64),
		f("dec1", &arrow.Decimal128Type{Precision: 1, Scale: 0}),
		f("dec4", &arrow.Decimal128Type{Precision: 4, Scale: 1}),
		f("dec19", &arrow.Decimal128Type{Precision: 19, Scale: 19}),
		f("l_l", arrow.ListOfField(f("element", arrow.ListOfField(f("element", arrow.PrimitiveTypes.Int32))))),
		f("l_st", arrow.ListOfField(f("element", arrow.StructOf(f("x", arrow.FixedWidthTypes.Date32), f("y", arrow.PrimitiveTypes.Float64))))),
		f("st_l", arrow.StructOf(f("l", arrow.ListOfField(f("element", arrow.BinaryTypes.String))), f("ts", &arrow.TimestampType{Unit: arrow.Nanosecond}))),
		f("m_i", arrow.MapOfWithMetadata(arrow.PrimitiveTypes.Int32, g.Next(), arrow.ListOfField(f("element", arrow.PrimitiveTypes.Int16)), g.Next())),
	}, nil)
}

// equivalenceObjects writes the objects of the set into st.
func equivalenceObjects(t *testing.T, st *store) []equivObject {
	t.Helper()
	const rows = 3000
	var objs []equivObject
	add := func(name string, id storageid.ID) { objs = append(objs, equivObject{name, id}) }
	rec := makeRecord(allTypesSchema(), rows, 1)
	defer rec.Release()

	// The interop suite's table with the writer's defaults, then under
	// several codecs, dictionary settings and page versions, in several row
	// groups of several pages.
	add("all-types", st.write(t, rec.Schema(), []arrow.RecordBatch{rec}).StorageID)
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
		obj := st.write(t, rec.Schema(), []arrow.RecordBatch{rec}, writer.WithCodec(l.codec), writer.WithDictionary(l.dict),
			writer.WithDataPageVersion(l.version), writer.WithRowGroupRows(1100), writer.WithDataPageSize(64))
		add(fmt.Sprintf("all-types/codec=%v/dictionary=%v/page=v%d/row-groups=3", l.codec, l.dict, l.version), obj.StorageID)
	}
	extra := makeRecord(extraTypesSchema(), rows, 2)
	defer extra.Release()
	add("extra-types", st.write(t, extra.Schema(), []arrow.RecordBatch{extra}, writer.WithRowGroupRows(1000)).StorageID)
	bench := benchdata.Record(rows, 3)
	defer bench.Release()
	add("benchdata", st.write(t, bench.Schema(), []arrow.RecordBatch{bench}, writer.WithRowGroupRows(700)).StorageID)

	// Files DuckDB wrote (encrypted, empty AAD), with and without field IDs:
	// the reader reads them, and so must sop_scan.
	d := openDuckWriter(t)
	d.loadTable(t, st, "src", rec)
	flat := []string{"i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64",
		"dec9", "dec18", "dec38", "b", "s", "bin", "d", "ts_ms", "ts_us", "ts_ns", "tstz_ms", "tstz_us", "tstz_ns"}
	add("duckdb/flat", d.write(t, st, "SELECT "+strings.Join(flat, ", ")+", CAST(i16 % 1000 AS DECIMAL(4,1)) AS dec4 FROM src",
		32, duckFieldIDs(rec.Schema(), flat, "dec4: 1000")))
	nestedCols := []string{"i64", "l_i64", "l_s", "st", "m"}
	add("duckdb/nested", d.write(t, st, "SELECT "+strings.Join(nestedCols, ", ")+" FROM src", 16, duckFieldIDs(rec.Schema(), nestedCols)))
	add("duckdb/no-field-ids/row-groups", d.write(t, st, "SELECT * FROM src", 24, "ROW_GROUP_SIZE 1024"))

	// The SOP-PME-1 test vectors (testdata/vectors) whose objects are
	// intact and readable: ours, and DuckDB's.
	vs, err := vectors.Load(os.DirFS("../testdata"), "vectors")
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
		if id := st.importBytes(t, v.Object, dek); id != v.ID {
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
	st := newStore(t)
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
func checkEquivalent(t *testing.T, db, native *sql.DB, st *store, id storageid.ID) {
	t.Helper()
	describe := func(db *sql.DB, from string) [][]any {
		rows := query(t, db, "SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM "+from+")")
		if len(rows) == 0 {
			t.Fatalf("DESCRIBE %s: no columns", from)
		}
		return rows
	}
	compareRows(t, "DESCRIBE", describe(native, nativeScan(st, id)), describe(db, sopScan(id)))
	want := query(t, native, "SELECT * FROM "+nativeScan(st, id))
	got := query(t, db, "SELECT * FROM "+sopScan(id))
	compareRows(t, "SELECT *", want, got)
}

// duckWriter is a DuckDB database that writes encrypted Parquet files.
type duckWriter struct{ db *sql.DB }

func openDuckWriter(t *testing.T) *duckWriter {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	// Writing encrypted Parquet in DuckDB 1.5.x needs this (notes/duckdb-
	// encrypted-parquet.md).
	exec(t, db, "SET force_mbedtls_unsafe = 'true'")
	return &duckWriter{db: db}
}

// loadTable has DuckDB read rec, written as an object into st, into table
// name, in order.
func (d *duckWriter) loadTable(t *testing.T, st *store, name string, rec arrow.RecordBatch) storageid.ID {
	t.Helper()
	id := st.write(t, rec.Schema(), []arrow.RecordBatch{rec}).StorageID
	exec(t, d.db, "CREATE TABLE "+name+" AS SELECT * FROM "+nativeScan(st, id))
	return id
}

// write has DuckDB COPY the rows of query to an encrypted Parquet file
// under a fresh key of keyLen bytes, with the further COPY options opts, and
// imports the file into st.
func (d *duckWriter) write(t *testing.T, st *store, query string, keyLen int, opts string) storageid.ID {
	t.Helper()
	key := make([]byte, keyLen)
	rand.Read(key)
	dek, err := pme.DEKFromBytes(key)
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(t.TempDir(), "duckdb.parquet")
	copyOpts := "ENCRYPTION_CONFIG {footer_key_value: from_base64('" + base64.StdEncoding.EncodeToString(key) + "')}"
	if opts != "" {
		copyOpts += ", " + opts
	}
	exec(t, d.db, "COPY ("+query+") TO "+sqlString(tmp)+" ("+copyOpts+")")
	return st.importBytes(t, readFile(t, tmp), dek)
}

// duckFieldIDs returns the FIELD_IDS option giving DuckDB the field IDs
// the named columns of schema carry, nested ones included, and more.
func duckFieldIDs(schema *arrow.Schema, cols []string, more ...string) string {
	var parts []string
	for _, c := range cols {
		f, _ := schema.FieldsByName(c)
		parts = append(parts, c+": "+duckFieldID(f[0]))
	}
	return "FIELD_IDS {" + strings.Join(append(parts, more...), ", ") + "}"
}

func duckFieldID(f arrow.Field) string {
	id, _ := f.Metadata.GetValue(writer.FieldIDKey)
	switch dt := f.Type.(type) {
	case *arrow.MapType:
		return fmt.Sprintf("{__duckdb_field_id: %s, key: %s, value: %s}", id, duckFieldID(dt.KeyField()), duckFieldID(dt.ItemField()))
	case *arrow.ListType:
		return fmt.Sprintf("{__duckdb_field_id: %s, element: %s}", id, duckFieldID(dt.ElemField()))
	case *arrow.StructType:
		parts := []string{"__duckdb_field_id: " + id}
		for _, c := range dt.Fields() {
			parts = append(parts, c.Name+": "+duckFieldID(c))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return id
}

// TestDecimal256 covers decimal256 columns (precision above 38), which
// read_parquet reads as DOUBLE: sop_scan gives the same type, and the
// double nearest each decimal written. DuckDB 1.5.6's own values for such a
// column (an FLBA of 17 bytes, as arrow-go writes it) are not the values
// written, so this column is compared with the written record, not with
// read_parquet.
func TestDecimal256(t *testing.T) {
	g := fieldIDs{}
	schema := arrow.NewSchema([]arrow.Field{g.Field("dec40", &arrow.Decimal256Type{Precision: 40, Scale: 3})}, nil)
	rec := makeRecord(schema, 500, 7)
	defer rec.Release()
	st := newStore(t)
	id := st.write(t, schema, []arrow.RecordBatch{rec}).StorageID
	db, nativeDB := openDB(t, st, st).SQL(), openNative(t, 0)
	describe := func(db *sql.DB, from string) [][]any {
		return query(t, db, "SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM "+from+")")
	}
	compareRows(t, "DESCRIBE", describe(nativeDB, nativeScan(st, id)), describe(db, sopScan(id)))
	got := query(t, db, "SELECT * FROM "+sopScan(id))
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
	native := query(t, nativeDB, "SELECT * FROM "+nativeScan(st, id)+" LIMIT 3")
	t.Logf("written %v, sop_scan %v, read_parquet %v", want[:3], got[:3], native)
}
