package sopsql

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/sovm/sop-pme/duckdb/internal/ducktest"
	"github.com/sovm/sop-pme/internal/testkit/testtables"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
	"github.com/sovm/sop-pme/writer"
)

// fakeTables is a Tables over a map, as the catalog would give them.
type fakeTables map[string]*Table

func (f fakeTables) Names(context.Context) ([]string, error) {
	names := make([]string, 0, len(f))
	for n := range f {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, nil
}

func (f fakeTables) Table(_ context.Context, name string) (*Table, error) {
	t, ok := f[name]
	if !ok {
		return nil, fmt.Errorf("fake catalog: table %q: %w", name, ErrNoTable)
	}
	return t, nil
}

// tableFiles writes each record as one object into st and as one plaintext
// Parquet file (pqarrow, field IDs kept) into dir, and returns the table's
// objects and the files.
func tableFiles(t testing.TB, st *ducktest.Store, dir string, recs []arrow.RecordBatch, opts func(i int) []writer.Option) ([]TableObject, []string) {
	t.Helper()
	objs := make([]TableObject, len(recs))
	files := make([]string, len(recs))
	for i, rec := range recs {
		var o []writer.Option
		if opts != nil {
			o = opts(i)
		}
		objs[i] = TableObject{ID: st.Write(t, rec.Schema(), []arrow.RecordBatch{rec}, o...).StorageID, Rows: rec.NumRows()}
		files[i] = filepath.Join(dir, fmt.Sprintf("part-%03d.parquet", i))
		f, err := os.Create(files[i])
		if err != nil {
			t.Fatal(err)
		}
		fw, err := pqarrow.NewFileWriter(rec.Schema(), f, parquet.NewWriterProperties(parquet.WithStoreDecimalAsInteger(true)), pqarrow.DefaultWriterProps())
		if err != nil {
			t.Fatal(err)
		}
		if err := fw.Write(rec); err != nil {
			t.Fatal(err)
		}
		if err := fw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return objs, files
}

// readParquet is DuckDB's read_parquet of the plaintext files.
func readParquet(files []string, opts ...string) string {
	quoted := make([]string, len(files))
	for i, f := range files {
		quoted[i] = ducktest.SQLString(f)
	}
	return fmt.Sprintf("read_parquet([%s]%s)", strings.Join(quoted, ", "), strings.Join(append([]string{""}, opts...), ", "))
}

// lineitemSchema is a lineitem-shaped table: int64, DECIMAL(15,2), DATE
// and string columns (low-cardinality ones dictionary-encoded by the
// writer, where it encodes dictionaries), field IDs 1..10.
func lineitemSchema() *arrow.Schema {
	dec := &arrow.Decimal128Type{Precision: 15, Scale: 2}
	g := testtables.FieldIDs{}
	return arrow.NewSchema([]arrow.Field{
		g.Field("l_orderkey", arrow.PrimitiveTypes.Int64),
		g.Field("l_quantity", dec),
		g.Field("l_extendedprice", dec),
		g.Field("l_discount", dec),
		g.Field("l_tax", dec),
		g.Field("l_returnflag", arrow.BinaryTypes.String),
		g.Field("l_linestatus", arrow.BinaryTypes.String),
		g.Field("l_shipdate", arrow.FixedWidthTypes.Date32),
		g.Field("l_shipmode", arrow.BinaryTypes.String),
		g.Field("l_comment", arrow.BinaryTypes.String),
	}, nil)
}

// lineitemRecord is n rows of lineitemSchema from order key start.
func lineitemRecord(schema *arrow.Schema, start, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	modes := []string{"REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"}
	for r := range n {
		i := int64(start + r)
		b.Field(0).(*array.Int64Builder).Append(i)
		b.Field(1).(*array.Decimal128Builder).Append(decimal128.FromI64((i*7%50 + 1) * 100))
		b.Field(2).(*array.Decimal128Builder).Append(decimal128.FromI64(i*7919%10000000 + 90000))
		b.Field(3).(*array.Decimal128Builder).Append(decimal128.FromI64(i * 13 % 11))
		b.Field(4).(*array.Decimal128Builder).Append(decimal128.FromI64(i * 17 % 9))
		b.Field(5).(*array.StringBuilder).Append([]string{"R", "A", "N"}[i%3])
		b.Field(6).(*array.StringBuilder).Append([]string{"O", "F"}[i%2])
		b.Field(7).(*array.Date32Builder).Append(arrow.Date32(8036 + i*31%2526))
		b.Field(8).(*array.StringBuilder).Append(modes[i%7])
		if i%10 == 3 {
			b.Field(9).(*array.StringBuilder).AppendNull()
		} else {
			b.Field(9).(*array.StringBuilder).Append(fmt.Sprintf("comment %d", i*104729%1000003))
		}
	}
	return b.NewRecordBatch()
}

// lineitemTable writes objects of rows rows each (row groups of 1000
// rows; every other object without dictionaries, so that a string column
// is a dictionary in some objects and plain in others) and their
// plaintext twins.
func lineitemTable(t testing.TB, st *ducktest.Store, objects, rows int) (*Table, []string) {
	t.Helper()
	schema := lineitemSchema()
	recs := make([]arrow.RecordBatch, objects)
	for i := range recs {
		recs[i] = lineitemRecord(schema, i*rows, rows)
		defer recs[i].Release()
	}
	objs, files := tableFiles(t, st, t.TempDir(), recs, func(i int) []writer.Option {
		return []writer.Option{writer.WithRowGroupRows(1000), writer.WithDictionary(i%2 == 0)}
	})
	return &Table{Schema: schema, Objects: objs}, files
}

// TestTableEquivalence: a lineitem-shaped table of 10 objects reads, row
// by row, as DuckDB's read_parquet reads the same rows in plaintext files:
// the columns and types (DESCRIBE), every row, TPC-H Q1 and Q6, at
// DuckDB's default threads and at 1 and 2.
func TestTableEquivalence(t *testing.T) {
	t.Parallel()
	st := ducktest.NewStore(t)
	tbl, files := lineitemTable(t, st, 10, 3000)
	tables := fakeTables{"t": tbl}
	native := openNative(t, 0)
	// Some objects hold a string column as a dictionary, others not.
	dicts := 0
	for _, o := range tbl.Objects {
		res, err := newReaderSchema(st, o.ID)
		if err != nil {
			t.Fatal(err)
		}
		if res.Field(5).Type.ID() == arrow.DICTIONARY {
			dicts++
		}
	}
	if dicts == 0 || dicts == len(tbl.Objects) {
		t.Fatalf("%d of %d objects hold l_returnflag as a dictionary; the test wants both kinds", dicts, len(tbl.Objects))
	}
	for _, threads := range []int{0, 1, 2} {
		var opts []Option
		if threads > 0 {
			opts = append(opts, WithThreads(threads))
		}
		db := openDB(t, st, st, append(opts, WithTables(tables))...).SQL()
		from, nat := "sop_scan('t')", readParquet(files)
		t.Run(fmt.Sprintf("threads=%d/DESCRIBE", threads), func(t *testing.T) {
			q := "SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM %s)"
			compareRows(t, "DESCRIBE", ducktest.MustQuery(t, native, fmt.Sprintf(q, nat)), ducktest.MustQuery(t, db, fmt.Sprintf(q, from)))
		})
		t.Run(fmt.Sprintf("threads=%d/SELECT *", threads), func(t *testing.T) {
			q := "SELECT * FROM %s ORDER BY all"
			want := ducktest.MustQuery(t, native, fmt.Sprintf(q, nat))
			if len(want) != 30000 {
				t.Fatalf("read_parquet: %d rows", len(want))
			}
			compareRows(t, "SELECT *", want, ducktest.MustQuery(t, db, fmt.Sprintf(q, from)))
		})
		for _, q := range lineitemQueries[:2] {
			t.Run(fmt.Sprintf("threads=%d/%s", threads, q.name), func(t *testing.T) {
				want := ducktest.MustQuery(t, native, fmt.Sprintf(q.sql, nat))
				compareRows(t, q.name, want, ducktest.MustQuery(t, db, fmt.Sprintf(q.sql, from)))
			})
		}
		t.Run(fmt.Sprintf("threads=%d/count", threads), func(t *testing.T) {
			compareRows(t, "count", [][]any{{int64(30000)}}, ducktest.MustQuery(t, db, "SELECT count(*) FROM sop_scan('t')"))
		})
	}
}

// evolutionRecords are the four objects of TestTableEvolution, one per
// schema version (field IDs in parentheses):
//
//	v1: id int32 (1), a (2), b (3), c0 int32 (4), price decimal(9,2) (5), f float32 (6), old int64 (7)
//	v2: v1 and added int64 (8)
//	v3: id int64, c0 renamed c, f float64, old dropped
//	v4: price decimal(18,2), and a and b swapped: "b" is field 2, "a" field 3
//
// The table's current schema is v4's, with a and b named by their IDs:
// id int64, a (2), b (3), c int32, price decimal(18,2), f float64, added.
func evolutionRecords(rows int) (*arrow.Schema, []arrow.RecordBatch, [][]any) {
	id := testtables.FieldID
	f := func(name string, dt arrow.DataType, fid int) arrow.Field {
		return arrow.Field{Name: name, Type: dt, Nullable: true, Metadata: id(fid)}
	}
	i32, i64, str := arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64, arrow.BinaryTypes.String
	dec9, dec18 := &arrow.Decimal128Type{Precision: 9, Scale: 2}, &arrow.Decimal128Type{Precision: 18, Scale: 2}
	f32, f64 := arrow.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Float64
	versions := [][]arrow.Field{
		{f("id", i32, 1), f("a", str, 2), f("b", str, 3), f("c0", i32, 4), f("price", dec9, 5), f("f", f32, 6), f("old", i64, 7)},
		{f("id", i32, 1), f("a", str, 2), f("b", str, 3), f("c0", i32, 4), f("price", dec9, 5), f("f", f32, 6), f("old", i64, 7), f("added", i64, 8)},
		{f("id", i64, 1), f("a", str, 2), f("b", str, 3), f("c", i32, 4), f("price", dec9, 5), f("f", f64, 6), f("added", i64, 8)},
		{f("id", i64, 1), f("b", str, 2), f("a", str, 3), f("c", i32, 4), f("price", dec18, 5), f("f", f64, 6), f("added", i64, 8)},
	}
	current := arrow.NewSchema([]arrow.Field{f("id", i64, 1), f("a", str, 2), f("b", str, 3), f("c", i32, 4), f("price", dec18, 5), f("f", f64, 6), f("added", i64, 8)}, nil)
	var recs []arrow.RecordBatch
	var want [][]any
	for v, fields := range versions {
		schema := arrow.NewSchema(fields, nil)
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		for r := range rows {
			key := int64(v*10000 + r)
			row := []any{key, fmt.Sprintf("a%d", key), fmt.Sprintf("b%d", key), int32(r * 3), fmt.Sprintf("%d.%02d", key*125/100, key*125%100), float64(r) + 0.5, nil}
			if r%5 == 4 {
				row[2], row[5] = nil, nil
			}
			for k, fl := range fields {
				fb := b.Field(k)
				var fid int32
				fmt.Sscan(fl.Metadata.Values()[0], &fid)
				var val any
				switch fid {
				case 1:
					val = key
				case 2:
					val = row[1]
				case 3:
					val = row[2]
				case 4:
					val = row[3]
				case 5:
					val = decimal128.FromI64(key * 125)
				case 6:
					val = row[5]
				case 7:
					val = key * 11
				case 8:
					val = key * 7
					row[6] = key * 7
				}
				if val == nil {
					fb.AppendNull()
					continue
				}
				switch fb := fb.(type) {
				case *array.Int32Builder:
					if fid == 1 {
						fb.Append(int32(key))
					} else {
						fb.Append(val.(int32))
					}
				case *array.Int64Builder:
					fb.Append(val.(int64))
				case *array.StringBuilder:
					fb.Append(val.(string))
				case *array.Decimal128Builder:
					fb.Append(val.(decimal128.Num))
				case *array.Float32Builder:
					fb.Append(float32(val.(float64)))
				case *array.Float64Builder:
					fb.Append(val.(float64))
				}
			}
			want = append(want, row)
		}
		recs = append(recs, b.NewRecordBatch())
		b.Release()
	}
	return current, recs, want
}

// TestTableEvolution: four objects under four schema versions read as the
// table's current schema: NULL for a column an object lacks (added
// later), a renamed column by its field ID, a dropped one gone, promoted
// types (int32 → int64, float32 → float64, decimal(9,2) → decimal(18,2))
// widened; and an object whose columns a and b swapped names (IDs kept)
// reads right, where DuckDB's read_parquet(union_by_name = true) of the
// same plaintext files, which matches by name, swaps them.
func TestTableEvolution(t *testing.T) {
	t.Parallel()
	const rows = 2500
	schema, recs, want := evolutionRecords(rows)
	for _, r := range recs {
		defer r.Release()
	}
	st := ducktest.NewStore(t)
	objs, files := tableFiles(t, st, t.TempDir(), recs, func(int) []writer.Option {
		return []writer.Option{writer.WithRowGroupRows(1000)}
	})
	tables := fakeTables{"t": {Schema: schema, Objects: objs}}
	for _, threads := range []int{1, 2} {
		db := openDB(t, st, st, WithTables(tables), WithThreads(threads)).SQL()
		t.Run(fmt.Sprintf("threads=%d", threads), func(t *testing.T) {
			compareRows(t, "DESCRIBE", [][]any{
				{"id", "BIGINT"}, {"a", "VARCHAR"}, {"b", "VARCHAR"}, {"c", "INTEGER"}, {"price", "DECIMAL(18,2)"}, {"f", "DOUBLE"}, {"added", "BIGINT"},
			}, ducktest.MustQuery(t, db, "SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM sop_scan('t'))"))
			got := ducktest.MustQuery(t, db, "SELECT id, a, b, c, price::VARCHAR, f, added FROM sop_scan('t') ORDER BY id")
			compareRows(t, "rows", want, got)
			// Projections that touch one version's columns only.
			compareRows(t, "added", [][]any{{int64(3 * rows)}}, ducktest.MustQuery(t, db, "SELECT count(added) FROM sop_scan('t')"))
			compareRows(t, "count", [][]any{{int64(4 * rows)}}, ducktest.MustQuery(t, db, "SELECT count(*) FROM sop_scan('t') WHERE added IS NULL OR added >= 0"))
		})
	}
	// The swapped object: sop_scan by ID, read_parquet by name.
	native := openNative(t, 1)
	key := int64(3*10000 + 1)
	q := fmt.Sprintf("SELECT a, b FROM %%s WHERE id = %d", key)
	db := openDB(t, st, st, WithTables(tables)).SQL()
	right := [][]any{{fmt.Sprintf("a%d", key), fmt.Sprintf("b%d", key)}}
	compareRows(t, "sop_scan of the swapped object", right, ducktest.MustQuery(t, db, fmt.Sprintf(q, "sop_scan('t')")))
	byName := ducktest.MustQuery(t, native, fmt.Sprintf(q, readParquet(files, "union_by_name = true")))
	swapped := [][]any{{fmt.Sprintf("b%d", key), fmt.Sprintf("a%d", key)}}
	compareRows(t, "read_parquet(union_by_name = true) of the swapped object, by name: wrong", swapped, byName)
}

// TestTableIncompatibleType: an object whose column has a type the
// table's does not widen from fails the query with ErrType, naming the
// column and the object.
func TestTableIncompatibleType(t *testing.T) {
	t.Parallel()
	st := ducktest.NewStore(t)
	g := testtables.FieldIDs{}
	objSchema := arrow.NewSchema([]arrow.Field{g.Field("x", arrow.PrimitiveTypes.Int64)}, nil)
	rec := testtables.Record(objSchema, 100, 1)
	defer rec.Release()
	id := st.Write(t, objSchema, []arrow.RecordBatch{rec}).StorageID
	tblSchema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int32, Metadata: testtables.FieldID(1)}}, nil)
	db := openDB(t, st, st, WithTables(fakeTables{"t": {Schema: tblSchema, Objects: []TableObject{{ID: id, Rows: 100}}}}))
	_, err := db.Query(context.Background(), "SELECT x FROM sop_scan('t')")
	if !errors.Is(err, ErrType) || !strings.Contains(err.Error(), id.String()) || !strings.Contains(err.Error(), `"x"`) {
		t.Errorf("error %v; want ErrType naming column x and object %s", err, id)
	}
}

// perObject counts the bytes a Source hands out, per object.
type perObject struct {
	src   verify.Source
	mu    sync.Mutex
	bytes map[storageid.ID]*atomic.Int64
	count map[storageid.ID]*atomic.Int64
}

func (p *perObject) Slice(ctx context.Context, id storageid.ID, off, n uint64) (io.ReadCloser, error) {
	rc, err := p.src.Slice(ctx, id, off, n)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	if p.bytes[id] == nil {
		p.bytes[id], p.count[id] = &atomic.Int64{}, &atomic.Int64{}
	}
	b, c := p.bytes[id], p.count[id]
	p.mu.Unlock()
	c.Add(1)
	return countingRC{rc, b}, nil
}

func (p *perObject) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.bytes, p.count = map[storageid.ID]*atomic.Int64{}, map[storageid.ID]*atomic.Int64{}
}

func (p *perObject) of(id storageid.ID) (bytes, slices int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bytes[id] == nil {
		return 0, 0
	}
	return p.bytes[id].Load(), p.count[id].Load()
}

// TestTablePushdown counts what the store hands out per object for a
// one-column query over a table of four objects of 20 int64 columns, one
// of which lacks the column (added later): each object that holds it
// fetches its footer and that column's chunks (within the overhead of each
// verified range), the one that lacks it its footer and the one column it
// reads to count its rows. Binding the table (DESCRIBE) opens no object.
func TestTablePushdown(t *testing.T) {
	t.Parallel()
	const rows = 20_000
	rec := wideTable(rows)
	defer rec.Release()
	st := ducktest.NewStore(t)
	var objs []TableObject
	for range 3 {
		objs = append(objs, TableObject{ID: st.Write(t, rec.Schema(), []arrow.RecordBatch{rec}, writer.WithRowGroupRows(rows/4), writer.WithCodec(writer.Uncompressed)).StorageID, Rows: rows})
	}
	// An older object without c3 (field ID 3).
	old := rec.Schema().Fields()
	old = append(slices.Clone(old[:2]), old[3:]...)
	cols := append(slices.Clone(rec.Columns()[:2]), rec.Columns()[3:]...)
	oldRec := array.NewRecordBatch(arrow.NewSchema(old, nil), cols, rows)
	defer oldRec.Release()
	lacking := st.Write(t, oldRec.Schema(), []arrow.RecordBatch{oldRec}, writer.WithRowGroupRows(rows/4), writer.WithCodec(writer.Uncompressed)).StorageID
	objs = append([]TableObject{{ID: lacking, Rows: rows}}, objs...)

	src := &perObject{src: st}
	src.reset()
	db := openDB(t, st, src, WithTables(fakeTables{"t": {Schema: rec.Schema(), Objects: objs}})).SQL()
	ducktest.MustQuery(t, db, "DESCRIBE SELECT * FROM sop_scan('t')")
	for _, o := range objs {
		if b, _ := src.of(o.ID); b != 0 {
			t.Errorf("binding the table fetched %d bytes of object %s", b, o.ID)
		}
	}
	var want int64
	for r := range int64(rows) {
		want += (r * 3) ^ (r * r)
	}
	src.reset()
	compareRows(t, "sum(c3)", [][]any{{3 * want}}, ducktest.MustQuery(t, db, "SELECT sum(c3)::BIGINT FROM sop_scan('t')"))
	for i, o := range objs {
		l := layoutOf(t, st, o.ID)
		fetched, slices := src.of(o.ID)
		need := l.need(2) // c3
		if o.ID == lacking {
			need = l.need(0) // c1, to count the rows
		}
		bound := need + slices*sliceOverhead(l.size)
		t.Logf("object %d: fetched %d bytes in %d slices; footer + chunks %d; bound %d; object %d", i, fetched, slices, need, bound, l.size)
		if fetched > bound || fetched < need {
			t.Errorf("object %d (%s): fetched %d bytes; want from %d (footer and chunks) to %d", i, o.ID, fetched, need, bound)
		}
	}
}

// TestTableDamage: one object of four has a flipped byte in a column
// chunk: a query over that column fails with verify.ErrVerify, naming the
// object, through DB.Query; and one with a flipped byte in its footer
// region fails every query that reaches it.
func TestTableDamage(t *testing.T) {
	t.Parallel()
	const rows = 8000
	rec := wideTable(rows)
	defer rec.Release()
	st := ducktest.NewStore(t)
	var objs []TableObject
	for range 4 {
		objs = append(objs, TableObject{ID: st.Write(t, rec.Schema(), []arrow.RecordBatch{rec}, writer.WithRowGroupRows(rows/4)).StorageID, Rows: rows})
		// Distinct objects: another DEK each, so other bytes.
	}
	bad := objs[2].ID
	l := layoutOf(t, st, bad)
	data := st.Bytes(t, bad)
	span := l.chunks[1][4] // c5, row group 1
	data[span.Off+span.Len/2] ^= 0x40
	if err := os.WriteFile(st.Path(bad), data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, threads := range []int{1, 2} {
		db := openDB(t, st, st, WithThreads(threads), WithTables(fakeTables{"t": {Schema: rec.Schema(), Objects: objs}}))
		res, err := db.Query(context.Background(), "SELECT sum(c5) FROM sop_scan('t')")
		if !errors.Is(err, verify.ErrVerify) || res != nil || !strings.Contains(err.Error(), bad.String()) {
			t.Errorf("threads=%d: result %v, error %v; want verify.ErrVerify naming %s", threads, res, err, bad)
		}
		// The columns the damage is not in read.
		if _, err := db.Query(context.Background(), "SELECT sum(c1) FROM sop_scan('t')"); err != nil {
			t.Errorf("threads=%d: sum(c1): %v", threads, err)
		}
	}
	// A damaged footer region: the object fails to open, and so does every
	// query that reaches it.
	badFooter := objs[1].ID
	data = st.Bytes(t, badFooter)
	data[len(data)-100] ^= 0x01
	if err := os.WriteFile(st.Path(badFooter), data, 0o644); err != nil {
		t.Fatal(err)
	}
	db := openDB(t, st, st, WithThreads(2), WithTables(fakeTables{"t": {Schema: rec.Schema(), Objects: objs[:2]}}))
	res, err := db.Query(context.Background(), "SELECT count(*) FROM sop_scan('t')")
	if !errors.Is(err, verify.ErrVerify) || res != nil || !strings.Contains(err.Error(), badFooter.String()) {
		t.Errorf("damaged footer: result %v, error %v; want verify.ErrVerify naming %s", res, err, badFooter)
	}
}

// TestTableNames covers the names: a storage_id still names an object; a
// name no table has fails with ErrNoTable naming it; row_groups is
// refused for a table; batch_size works; WithTableViews creates a view of
// each table, quoted (a name with quotes and spaces).
func TestTableNames(t *testing.T) {
	t.Parallel()
	st := ducktest.NewStore(t)
	schema := lineitemSchema()
	rec := lineitemRecord(schema, 0, 2000)
	defer rec.Release()
	id := st.Write(t, schema, []arrow.RecordBatch{rec}, writer.WithRowGroupRows(500)).StorageID
	odd := `it's a "table" ; x`
	tables := fakeTables{
		"t":   {Schema: schema, Objects: []TableObject{{ID: id, Rows: 2000}, {ID: id, Rows: 2000}}},
		odd:   {Schema: schema, Objects: []TableObject{{ID: id, Rows: 2000}}},
		"nil": {Schema: schema},
	}
	db := openDB(t, st, st, WithTables(tables), WithTableViews())
	ctx := context.Background()
	count := func(from string) any {
		res, err := db.Query(ctx, "SELECT count(*) FROM "+from)
		if err != nil {
			t.Errorf("%s: %v", from, err)
			return nil
		}
		return res.Rows[0][0]
	}
	for from, want := range map[string]int64{
		"sop_scan('t')":                         4000,
		"sop_scan('t', batch_size := 100)":      4000,
		"t":                                     4000,
		quoteIdent(odd):                         2000,
		"sop_scan(" + quoteString(odd) + ")":    2000,
		"sop_scan('nil')":                       0,
		"nil":                                   0,
		sopScan(id):                             2000,
		sopScan(id, "row_groups := [0, 1]"):     1000,
		"(SELECT * FROM sop_scan('t') LIMIT 5)": 5,
	} {
		if got := count(from); got != want {
			t.Errorf("count(*) FROM %s = %v, want %d", from, got, want)
		}
	}
	_, err := db.Query(ctx, "SELECT * FROM sop_scan('nope')")
	if !errors.Is(err, ErrNoTable) || !strings.Contains(err.Error(), "nope") {
		t.Errorf("sop_scan('nope'): %v; want ErrNoTable naming it", err)
	}
	_, err = db.Query(ctx, "SELECT * FROM sop_scan('t', row_groups := [0])")
	if !errors.Is(err, ErrArgument) {
		t.Errorf("row_groups on a table: %v; want ErrArgument", err)
	}
	// Without WithTables, a name is a bad storage_id, as before.
	plain := openDB(t, st, st)
	if _, err := plain.Query(ctx, "SELECT * FROM sop_scan('t')"); !errors.Is(err, ErrArgument) {
		t.Errorf("without WithTables: %v; want ErrArgument", err)
	}
	// A table schema without field IDs, or with one twice, fails the bind.
	noID := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	twice := arrow.NewSchema([]arrow.Field{
		{Name: "x", Type: arrow.PrimitiveTypes.Int64, Metadata: testtables.FieldID(1)},
		{Name: "y", Type: arrow.PrimitiveTypes.Int64, Metadata: testtables.FieldID(1)},
	}, nil)
	bad := openDB(t, st, st, WithTables(fakeTables{"noid": {Schema: noID}, "twice": {Schema: twice}}))
	for _, name := range []string{"noid", "twice"} {
		if _, err := bad.Query(ctx, "SELECT * FROM sop_scan('"+name+"')"); !errors.Is(err, ErrType) {
			t.Errorf("table %s: %v; want ErrType", name, err)
		}
	}
	if _, err := Open(ctx, st, st.Keys, WithTableViews()); !errors.Is(err, ErrOption) {
		t.Errorf("WithTableViews without WithTables: %v; want ErrOption", err)
	}
}

// newReaderSchema returns the schema sop_scan reads object id in.
func newReaderSchema(st *ducktest.Store, id storageid.ID) (*arrow.Schema, error) {
	r, err := reader.Open(context.Background(), st, id, st.Keys)
	if err != nil {
		return nil, err
	}
	return r.DictionarySchema(r.NarrowDecimalSchema().Fields()), nil
}

// TestTableLazyOpen: the first rows of a table of 40 objects come from
// the first object, at one thread, and only it and the objects the scan
// opens ahead are fetched from (a table of many objects does not pay a
// footer verification per object before its first row).
func TestTableLazyOpen(t *testing.T) {
	t.Parallel()
	rec := wideTable(3000)
	defer rec.Release()
	st := ducktest.NewStore(t)
	var objs []TableObject
	for range 40 {
		objs = append(objs, TableObject{ID: st.Write(t, rec.Schema(), []arrow.RecordBatch{rec}).StorageID, Rows: 3000})
	}
	src := &perObject{src: st}
	src.reset()
	db := openDB(t, st, src, WithThreads(1), WithTables(fakeTables{"t": {Schema: rec.Schema(), Objects: objs}})).SQL()
	// Rows 0 and 1 of c1 are r XOR r·r (wideTable): 0 and 0.
	compareRows(t, "LIMIT", [][]any{{int64(0)}, {int64(0)}}, ducktest.MustQuery(t, db, "SELECT c1 FROM sop_scan('t') LIMIT 2"))
	touched := 0
	for _, o := range objs {
		if b, _ := src.of(o.ID); b > 0 {
			touched++
		}
	}
	if touched == 0 || touched > 1+tableLookahead {
		t.Errorf("the first rows fetched from %d objects of %d; want 1 to %d", touched, len(objs), 1+tableLookahead)
	}
	src.reset()
	compareRows(t, "count", [][]any{{int64(40 * 3000)}}, ducktest.MustQuery(t, db, "SELECT count(*) FROM sop_scan('t')"))
}

// countingKeys counts the DEK resolutions per object: one per reader.Open.
type countingKeys struct {
	keys ducktest.Keys
	mu   sync.Mutex
	n    map[storageid.ID]int
}

func (k *countingKeys) ResolveDEK(ctx context.Context, id storageid.ID) (pme.DEK, error) {
	k.mu.Lock()
	k.n[id]++
	k.mu.Unlock()
	return k.keys.ResolveDEK(ctx, id)
}

// TestTableOpensOnce: at two threads, which share the (object, row group)
// cursor, each object of a table is opened once per query, and every row
// is read once.
func TestTableOpensOnce(t *testing.T) {
	t.Parallel()
	const rows = 8000
	rec := wideTable(rows)
	defer rec.Release()
	st := ducktest.NewStore(t)
	var objs []TableObject
	for range 8 {
		objs = append(objs, TableObject{ID: st.Write(t, rec.Schema(), []arrow.RecordBatch{rec}, writer.WithRowGroupRows(rows/4)).StorageID, Rows: rows})
	}
	keys := &countingKeys{keys: st.Keys, n: map[storageid.ID]int{}}
	d, err := Open(context.Background(), st, keys, withPoison(), WithThreads(2), WithTables(fakeTables{"t": {Schema: rec.Schema(), Objects: objs}}))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var want int64
	for r := range int64(rows) {
		want += (r * 2) ^ (r * r)
	}
	for q := range 3 {
		compareRows(t, "sum", [][]any{{8 * want, int64(8 * rows)}}, ducktest.MustQuery(t, d.SQL(), "SELECT sum(c2)::BIGINT, count(*) FROM sop_scan('t')"))
		keys.mu.Lock()
		for i, o := range objs {
			if n := keys.n[o.ID]; n != q+1 {
				t.Errorf("after %d queries, object %d was opened %d times", q+1, i, n)
			}
		}
		keys.mu.Unlock()
	}
}

// TestTableAllTypes: a table of two objects of every type the interop
// suite has (nested included), in the writer's schema, reads as the two
// objects read one after the other, at one thread, row by row.
func TestTableAllTypes(t *testing.T) {
	t.Parallel()
	st := ducktest.NewStore(t)
	for _, schema := range []*arrow.Schema{testtables.AllTypes(), testtables.ExtraTypes()} {
		var objs []TableObject
		for seed := range 2 {
			rec := testtables.Record(schema, 1500, uint64(seed+1))
			defer rec.Release()
			objs = append(objs, TableObject{ID: st.Write(t, schema, []arrow.RecordBatch{rec}, writer.WithRowGroupRows(500)).StorageID, Rows: 1500})
		}
		db := openDB(t, st, st, WithThreads(1), WithTables(fakeTables{"t": {Schema: schema, Objects: objs}})).SQL()
		q := "SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM %s)"
		compareRows(t, "DESCRIBE", ducktest.MustQuery(t, db, fmt.Sprintf(q, sopScan(objs[0].ID))), ducktest.MustQuery(t, db, fmt.Sprintf(q, "sop_scan('t')")))
		want := ducktest.MustQuery(t, db, "SELECT * FROM "+sopScan(objs[0].ID)+" UNION ALL SELECT * FROM "+sopScan(objs[1].ID))
		compareRows(t, "SELECT *", want, ducktest.MustQuery(t, db, "SELECT * FROM sop_scan('t')"))
	}
}

// TestTablePromotions: every promotion the table takes, over the interop
// suite's random values (edge values and nulls included), reads as
// DuckDB's own CAST of the object's column to the table's type.
func TestTablePromotions(t *testing.T) {
	t.Parallel()
	f := func(name string, dt arrow.DataType, id int) arrow.Field {
		return arrow.Field{Name: name, Type: dt, Nullable: true, Metadata: testtables.FieldID(id)}
	}
	p := arrow.PrimitiveTypes
	type promo struct {
		from, to arrow.DataType
		cast     string
	}
	promos := []promo{
		{p.Int8, p.Int16, "SMALLINT"},
		{p.Int8, p.Int64, "BIGINT"},
		{p.Int16, p.Int32, "INTEGER"},
		{p.Int32, p.Int64, "BIGINT"},
		{p.Uint8, p.Uint32, "UINTEGER"},
		{p.Uint16, p.Int32, "INTEGER"},
		{p.Uint32, p.Uint64, "UBIGINT"},
		{p.Uint32, p.Int64, "BIGINT"},
		{p.Float32, p.Float64, "DOUBLE"},
		{&arrow.Decimal128Type{Precision: 4, Scale: 1}, &arrow.Decimal128Type{Precision: 9, Scale: 1}, "DECIMAL(9,1)"},
		{&arrow.Decimal128Type{Precision: 9, Scale: 2}, &arrow.Decimal128Type{Precision: 18, Scale: 2}, "DECIMAL(18,2)"},
		{&arrow.Decimal128Type{Precision: 9, Scale: 2}, &arrow.Decimal128Type{Precision: 30, Scale: 2}, "DECIMAL(30,2)"},
		{&arrow.Decimal128Type{Precision: 15, Scale: 3}, &arrow.Decimal128Type{Precision: 38, Scale: 3}, "DECIMAL(38,3)"},
		{&arrow.Decimal128Type{Precision: 20, Scale: 0}, &arrow.Decimal128Type{Precision: 25, Scale: 0}, "DECIMAL(25,0)"},
	}
	from := []arrow.Field{f("k", p.Int64, 1)}
	to := []arrow.Field{f("k", p.Int64, 1)}
	sel, cast := []string{"k"}, []string{"k"}
	for i, pr := range promos {
		name := fmt.Sprintf("c%d", i)
		from = append(from, f(name, pr.from, i+2))
		to = append(to, f(name, pr.to, i+2))
		sel = append(sel, name+"::VARCHAR")
		cast = append(cast, fmt.Sprintf("%s::%s::VARCHAR", name, pr.cast))
	}
	rec := testtables.Record(arrow.NewSchema(from, nil), 3000, 5)
	defer rec.Release()
	st := ducktest.NewStore(t)
	id := st.Write(t, rec.Schema(), []arrow.RecordBatch{rec}, writer.WithRowGroupRows(1000)).StorageID
	db := openDB(t, st, st, WithTables(fakeTables{"t": {Schema: arrow.NewSchema(to, nil), Objects: []TableObject{{ID: id, Rows: 3000}}}})).SQL()
	want := ducktest.MustQuery(t, db, "SELECT "+strings.Join(cast, ", ")+" FROM "+sopScan(id)+" ORDER BY ALL")
	got := ducktest.MustQuery(t, db, "SELECT "+strings.Join(sel, ", ")+" FROM sop_scan('t') ORDER BY ALL")
	compareRows(t, "promoted", want, got)
	types := ducktest.MustQuery(t, db, "SELECT column_type FROM (DESCRIBE SELECT * FROM sop_scan('t')) OFFSET 1")
	for i, pr := range promos {
		if types[i][0] != pr.cast {
			t.Errorf("column %d: %v, want %s", i, types[i][0], pr.cast)
		}
	}
}

// TestTableViewFollowsCatalog: a view of WithTableViews resolves its table
// at each query, so an object appended to the table after Open is read.
func TestTableViewFollowsCatalog(t *testing.T) {
	t.Parallel()
	rec := wideTable(1000)
	defer rec.Release()
	st := ducktest.NewStore(t)
	id := st.Write(t, rec.Schema(), []arrow.RecordBatch{rec}).StorageID
	tbl := &Table{Schema: rec.Schema(), Objects: []TableObject{{ID: id, Rows: 1000}}}
	var mu sync.Mutex
	tables := lockedTables{mu: &mu, m: fakeTables{"events": tbl}}
	db := openDB(t, st, st, WithTables(tables), WithTableViews()).SQL()
	compareRows(t, "before", [][]any{{int64(1000)}}, ducktest.MustQuery(t, db, "SELECT count(*) FROM events"))
	id2 := st.Write(t, rec.Schema(), []arrow.RecordBatch{rec}).StorageID
	mu.Lock()
	tables.m["events"] = &Table{Schema: rec.Schema(), Objects: append(slices.Clone(tbl.Objects), TableObject{ID: id2, Rows: 1000})}
	mu.Unlock()
	compareRows(t, "after", [][]any{{int64(2000)}}, ducktest.MustQuery(t, db, "SELECT count(*) FROM events"))
}

// lockedTables is fakeTables under a mutex, for a test that changes them.
type lockedTables struct {
	mu *sync.Mutex
	m  fakeTables
}

func (l lockedTables) Names(ctx context.Context) ([]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m.Names(ctx)
}

func (l lockedTables) Table(ctx context.Context, name string) (*Table, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m.Table(ctx, name)
}

// TestTableNestedEvolution: a struct whose children were promoted, renamed,
// added and dropped, and a list whose element was promoted, read through
// sop_scan('t') as table.Scan reads them: children matched by field ID, a
// promoted one widened, an added one NULL. The expected rows are DuckDB's
// own casts of the object's columns.
func TestTableNestedEvolution(t *testing.T) {
	t.Parallel()
	f := func(name string, dt arrow.DataType, id int) arrow.Field {
		return arrow.Field{Name: name, Type: dt, Nullable: true, Metadata: testtables.FieldID(id)}
	}
	p := arrow.PrimitiveTypes
	from := arrow.NewSchema([]arrow.Field{
		f("k", p.Int64, 1),
		f("s", arrow.StructOf(f("a", p.Int32, 4), f("b", p.Float32, 5), f("gone", p.Int16, 6)), 2),
		f("l", arrow.ListOfField(f("element", p.Int16, 7)), 3),
	}, nil)
	to := arrow.NewSchema([]arrow.Field{
		f("k", p.Int64, 1),
		f("s", arrow.StructOf(f("a", p.Int64, 4), f("bee", p.Float64, 5), f("new", p.Int32, 8)), 2),
		f("l", arrow.ListOfField(f("element", p.Int64, 7)), 3),
	}, nil)
	// k is random (duplicates and NULLs): the rows are compared in the
	// order of all their columns, as rendered.
	rec := testtables.Record(from, 2000, 9)
	defer rec.Release()
	st := ducktest.NewStore(t)
	id := st.Write(t, rec.Schema(), []arrow.RecordBatch{rec}, writer.WithRowGroupRows(700)).StorageID
	db := openDB(t, st, st, WithTables(fakeTables{"t": {Schema: to, Objects: []TableObject{{ID: id, Rows: 2000}}}})).SQL()
	want := ducktest.MustQuery(t, db, "SELECT k, CASE WHEN s IS NULL THEN NULL ELSE {'a': s.a::BIGINT, 'bee': s.b::DOUBLE, 'new': NULL::INTEGER} END::VARCHAR, l::BIGINT[]::VARCHAR FROM "+sopScan(id)+" ORDER BY ALL")
	got := ducktest.MustQuery(t, db, "SELECT k, s::VARCHAR, l::VARCHAR FROM sop_scan('t') ORDER BY ALL")
	compareRows(t, "nested evolution", want, got)
	types := ducktest.MustQuery(t, db, "SELECT column_type FROM (DESCRIBE SELECT * FROM sop_scan('t'))")
	if fmt.Sprint(types) != "[[BIGINT] [STRUCT(a BIGINT, bee DOUBLE, \"new\" INTEGER)] [BIGINT[]]]" {
		t.Errorf("types: %v", types)
	}
}
