package sopsql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/duckdb/duckdb-go/v2"
	"github.com/sovm/sop-pme/duckdb/internal/ducktest"
	"github.com/sovm/sop-pme/internal/testkit/benchdata"
	"github.com/sovm/sop-pme/internal/testkit/testtables"
	"github.com/sovm/sop-pme/internal/thrift"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
	"github.com/sovm/sop-pme/writer"
)

// The rules of SOP-PME-1 Section 11.10 that bind a query engine, each
// tested through SQL.

// lieFooter returns data with its footer rewritten under dek, as a producer
// holding the DEK could: every column chunk's statistics replaced by stats
// (Statistics: 3 null_count, 5 max_value, 6 min_value) and, if rows >= 0,
// FileMetaData.num_rows, every RowGroup.num_rows and every
// ColumnMetaData.num_values set to rows. The modules are untouched; the
// object is valid ciphertext under a new storage_id.
func lieFooter(t *testing.T, data []byte, dek pme.DEK, rows int64, stats func(col int) *thrift.Struct) []byte {
	t.Helper()
	footer := ducktest.OpenFooter(t, data, dek)
	meta, err := thrift.DecodeExact(footer.Append(nil), thrift.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if rows >= 0 {
		meta.Set(3, thrift.I64(rows))
	}
	rgs, err := meta.List(4)
	if err != nil {
		t.Fatal(err)
	}
	for _, rg := range rgs.Items {
		if rows >= 0 {
			rg.Struct.Set(3, thrift.I64(rows))
		}
		cols, err := rg.Struct.List(1)
		if err != nil {
			t.Fatal(err)
		}
		for c, cc := range cols.Items {
			md, err := cc.Struct.Struct(3)
			if err != nil {
				t.Fatal(err)
			}
			if rows >= 0 {
				md.Set(5, thrift.I64(rows))
			}
			md.Set(12, thrift.StructValue(stats(c)))
		}
	}
	sealed, err := dek.Seal(nil, meta.Append(nil))
	if err != nil {
		t.Fatal(err)
	}
	out := append([]byte(nil), data[:footer.DataEnd+footer.Tail.CryptoLen]...)
	out = append(out, sealed...)
	out, err = pme.AppendTrailer(out, footer.Tail.CryptoLen+len(sealed))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func i64le(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }

// TestFooterIsNotAnAnswer: on objects whose footer lies, count(*), min,
// max, a count of non-null values and a filter all come from the rows
// sop_scan produces, never from the footer (Section 11.10: "A reader MUST
// NOT satisfy a query result, a predicate, or an access decision from
// Parquet footer metadata alone").
//
// Lying statistics (id between -1000 and 3, x between 0 and 1, no nulls)
// must not change an answer. Lying row counts as well (7 rows in every row
// group and chunk) may instead make the read fail with reader.ErrFormat,
// where the reader checks the pages against the footer; they must never
// produce the footer's numbers.
func TestFooterIsNotAnAnswer(t *testing.T) {
	t.Parallel()
	const rows = 30_000
	rec := benchdata.Record(rows, 5) // id 0..rows-1, x, s, ts, ok with 5 % nulls
	defer rec.Release()
	st := ducktest.NewStore(t)
	obj := st.Write(t, rec.Schema(), []arrow.RecordBatch{rec}, writer.WithRowGroupRows(rows/3))
	stats := func(col int) *thrift.Struct {
		s := thrift.NewStruct(thrift.Field{ID: 3, Value: thrift.I64(0)})
		switch col {
		case 0:
			s.Set(5, thrift.Binary(i64le(3)))
			s.Set(6, thrift.Binary(i64le(-1000)))
		case 1:
			s.Set(5, thrift.Binary(binary.LittleEndian.AppendUint64(nil, math.Float64bits(1))))
			s.Set(6, thrift.Binary(binary.LittleEndian.AppendUint64(nil, math.Float64bits(0))))
		}
		return s
	}
	db := openDB(t, st, st)

	var minX, maxX float64 = math.Inf(1), math.Inf(-1)
	var okCount int64
	xs, oks := rec.Column(1).(*array.Float64), rec.Column(4)
	for i := range rows {
		minX, maxX = min(minX, xs.Value(i)), max(maxX, xs.Value(i))
		if oks.IsValid(i) {
			okCount++
		}
	}
	if okCount == rows {
		t.Fatal("the table has no nulls in ok: the null_count lie tests nothing")
	}
	q := func(from string) string {
		return "SELECT count(*), min(id), max(id), min(x), max(x), count(ok), count(*) FILTER (WHERE id > 3) FROM " + from
	}
	queries := []struct {
		sql  func(id storageid.ID) string
		want [][]any
	}{
		{func(id storageid.ID) string { return q(sopScan(id)) },
			[][]any{{int64(rows), int64(0), int64(rows - 1), minX, maxX, okCount, int64(rows - 4)}}},
		{func(id storageid.ID) string { return "SELECT count(*) FROM " + sopScan(id) }, [][]any{{int64(rows)}}},
		{func(id storageid.ID) string { return "SELECT count(*) FROM " + sopScan(id) + " WHERE id > 3" }, [][]any{{int64(rows - 4)}}},
	}
	for _, lie := range []struct {
		name      string
		rows      int64
		mayRefuse bool
	}{
		{"statistics", -1, false},
		{"row counts and statistics", 7, true},
	} {
		t.Run(lie.name, func(t *testing.T) {
			id := st.Import(t, lieFooter(t, st.Bytes(t, obj.StorageID), obj.DEK, lie.rows, stats), obj.DEK)
			for _, c := range queries {
				res, err := db.Query(context.Background(), c.sql(id))
				if err != nil {
					if lie.mayRefuse && errors.Is(err, reader.ErrFormat) {
						t.Logf("%s: refused: %v", c.sql(id), err)
						continue
					}
					t.Fatalf("%s: %v", c.sql(id), err)
				}
				compareRows(t, c.sql(id), c.want, res.Rows)
			}
			// DuckDB's own reader, given the file and the DEK, answers from
			// the footer: count(ok) from null_count, and with the row
			// counts, 7 rows per row group.
			native, err := queryErr(openNative(t, 0), q(nativeScan(st, id)))
			if err != nil {
				t.Fatalf("read_parquet: %v", err)
			}
			if len(native) == 1 && ducktest.SameBits(native[0][0], queries[0].want[0][0]) && ducktest.SameBits(native[0][5], okCount) {
				t.Errorf("read_parquet answered %v from the lying footer, the truth: the lie tests nothing", native)
			}
			t.Logf("read_parquet over the lying footer: %v; the rows: %v", native, queries[0].want)
		})
	}
}

// swapPages returns data with the bodies of data pages a and b of the
// column chunk c swapped: two modules of the same length, each still a
// valid AES-GCM module under the DEK (the module AAD is empty, Section
// 11.3). The chunk has no dictionary page: its modules are page header,
// page body, page header, page body, ...
func swapPages(t *testing.T, data []byte, c pme.Span, a, b int) []byte {
	t.Helper()
	var bodies []pme.Span
	off := c.Off
	rest := data[c.Off:c.End()]
	for i := 0; len(rest) > 0; i++ {
		_, next, err := pme.SplitModule(rest)
		if err != nil {
			t.Fatal(err)
		}
		n := int64(len(rest) - len(next))
		if i%2 == 1 {
			bodies = append(bodies, pme.Span{Off: off, Len: n})
		}
		off += n
		rest = next
	}
	if max(a, b) >= len(bodies) || bodies[a].Len != bodies[b].Len {
		t.Fatalf("chunk has %d pages; pages %d and %d cannot be swapped", len(bodies), a, b)
	}
	out := slices.Clone(data)
	pa, pb := bodies[a], bodies[b]
	copy(out[pa.Off:pa.End()], data[pb.Off:pb.End()])
	copy(out[pb.Off:pb.End()], data[pa.Off:pa.End()])
	return out
}

// customers is the damaged-object table: id 0..n-1 and a customer name of
// fixed length, so that the data pages of a column chunk have equal sizes.
func customers(n int) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Metadata: testtables.FieldID(1)},
		{Name: "customer", Type: arrow.BinaryTypes.String, Metadata: testtables.FieldID(2)},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("customer-%07d", i))
	}
	return b.NewRecordBatch()
}

// observer is a scalar function observe(BIGINT) → true that records every
// value DuckDB evaluates it on: it sees the rows a table function gave
// DuckDB, as they flow, before a query fails.
type observer struct {
	mu   sync.Mutex
	seen []int64
}

func (o *observer) Config() duckdb.ScalarFuncConfig {
	return duckdb.ScalarFuncConfig{
		InputTypeInfos: []duckdb.TypeInfo{typeInfo(duckdb.TYPE_BIGINT)},
		ResultTypeInfo: typeInfo(duckdb.TYPE_BOOLEAN),
		Volatile:       true,
	}
}

func (o *observer) Executor() duckdb.ScalarFuncExecutor {
	return duckdb.ScalarFuncExecutor{RowExecutor: func(v []driver.Value) (any, error) {
		o.mu.Lock()
		defer o.mu.Unlock()
		o.seen = append(o.seen, v[0].(int64))
		return true, nil
	}}
}

func registerObserver(t *testing.T, db *sql.DB) *observer {
	t.Helper()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	o := &observer{}
	if err := duckdb.RegisterScalarUDF(conn, "observe", o); err != nil {
		t.Fatal(err)
	}
	return o
}

// TestRearrangedObject swaps two data pages of the customer column in row
// group 2 of 4 in the stored file (storage_id is still the original's). A
// query through sop_scan fails with the verification error, and DuckDB
// sees no row of row group 2; DuckDB's own read_parquet of the same file
// with the DEK returns every row, some with the wrong customer, and no
// error: why the verified path exists (Section 11.10).
func TestRearrangedObject(t *testing.T) {
	t.Parallel()
	const rows, rgRows = 100_000, 25_000
	rec := customers(rows)
	defer rec.Release()
	st := ducktest.NewStore(t)
	obj := st.Write(t, rec.Schema(), []arrow.RecordBatch{rec}, writer.WithRowGroupRows(rgRows),
		writer.WithCodec(writer.Uncompressed), writer.WithDictionary(false), writer.WithDataPageSize(1<<10))
	id := obj.StorageID
	l := layoutOf(t, st, id)
	damaged := swapPages(t, st.Bytes(t, id), l.chunks[2][1], 0, 1)
	if err := os.WriteFile(st.Path(id), damaged, 0o644); err != nil {
		t.Fatal(err)
	}
	db := openDB(t, st, st)

	// sop_scan: the verification error, through DB.Query (and no rows).
	for _, q := range []string{
		"SELECT id, customer FROM " + sopScan(id),
		"SELECT count(*) FROM " + sopScan(id) + " WHERE customer <> ''",
		"SELECT customer FROM " + sopScan(id, "row_groups := [2]"),
	} {
		res, err := db.Query(context.Background(), q)
		if !errors.Is(err, verify.ErrVerify) || res != nil {
			t.Errorf("%s: result %v, error %v; want no result and verify.ErrVerify", q, res, err)
		}
		var qe *QueryError
		if !errors.As(err, &qe) || !isDuckDBError(qe.Err) {
			t.Errorf("%s: error %v is not a *QueryError over the driver's error", q, err)
		}
	}
	// Without TrackErrors, what crosses the driver is DuckDB's error, whose
	// message carries the Go error's text.
	_, err := queryErr(db.SQL(), "SELECT id, customer FROM "+sopScan(id))
	var de *duckdb.Error
	if !errors.As(err, &de) || de.Type != duckdb.ErrorTypeInvalidInput || !strings.Contains(de.Msg, verify.ErrVerify.Error()) || errors.Is(err, verify.ErrVerify) {
		t.Errorf("database/sql without TrackErrors: %#v; want a *duckdb.Error of type InvalidInput whose text holds %q", err, verify.ErrVerify)
	}
	t.Logf("without TrackErrors: %v", err)

	// What DuckDB received before the failure, row by row: none of row
	// group 2. With one thread, the row groups before it went through.
	for _, threads := range []int{1, 2} {
		t.Run(fmt.Sprintf("threads=%d", threads), func(t *testing.T) {
			db := openDB(t, st, st, WithThreads(threads))
			o := registerObserver(t, db.SQL())
			q := "SELECT count(*) FROM " + sopScan(id) + " WHERE observe(id) AND customer IS NOT NULL"
			if _, err := db.Query(context.Background(), q); !errors.Is(err, verify.ErrVerify) {
				t.Fatalf("%s: error %v, want verify.ErrVerify", q, err)
			}
			for _, v := range o.seen {
				if v >= 2*rgRows && v < 3*rgRows {
					t.Fatalf("DuckDB saw row %d, of the damaged row group 2", v)
				}
			}
			t.Logf("DuckDB saw %d rows before the error", len(o.seen))
			if threads == 1 && len(o.seen) != 2*rgRows {
				t.Errorf("with one thread DuckDB saw %d rows, want row groups 0 and 1 (%d rows)", len(o.seen), 2*rgRows)
			}
		})
	}

	// DuckDB's own reader: every row, no error, wrong customers.
	got := ducktest.MustQuery(t, openNative(t, 0), "SELECT id, customer FROM "+nativeScan(st, id)+" ORDER BY id")
	if len(got) != rows {
		t.Fatalf("read_parquet returned %d rows, want %d", len(got), rows)
	}
	var wrong []int64
	for i, r := range got {
		if r[0].(int64) != int64(i) {
			t.Fatalf("read_parquet row %d has id %v", i, r[0])
		}
		if r[1].(string) != fmt.Sprintf("customer-%07d", i) {
			wrong = append(wrong, int64(i))
		}
	}
	if len(wrong) == 0 {
		t.Fatal("read_parquet returned the right rows from the rearranged file: the damage tests nothing")
	}
	for _, i := range wrong {
		if i < 2*rgRows || i >= 3*rgRows {
			t.Fatalf("read_parquet got row %d wrong, outside the damaged row group", i)
		}
	}
	t.Logf("read_parquet returned all %d rows without an error, %d of them with another row's customer (first: row %d: %v)",
		rows, len(wrong), wrong[0], got[wrong[0]][1])
}

// TestProjectionIsNotVerification: an object damaged in a column chunk a
// query does not read answers that query (the projection verified what it
// read), yet the object is not verified: sop_verify and DB.Verify fail. An
// intact object passes sop_verify (Section 11.10: "A reader MUST NOT report
// an object as verified ... on the basis of a projection over it").
func TestProjectionIsNotVerification(t *testing.T) {
	t.Parallel()
	const rows = 20_000
	rec := customers(rows)
	defer rec.Release()
	st := ducktest.NewStore(t)
	intact := st.Write(t, rec.Schema(), []arrow.RecordBatch{rec}).StorageID
	obj := st.Write(t, rec.Schema(), []arrow.RecordBatch{rec}, writer.WithRowGroupRows(rows/2),
		writer.WithCodec(writer.Uncompressed), writer.WithDictionary(false)).StorageID
	l := layoutOf(t, st, obj)
	data := st.Bytes(t, obj)
	c := l.chunks[0][1] // customer, row group 0: far from the id chunks' 16 KiB groups
	if c.Len < 3*verify.GroupSize {
		t.Fatalf("customer chunk of %d bytes: too short to damage away from its neighbours", c.Len)
	}
	data[c.Off+c.Len/2] ^= 0x01
	if err := os.WriteFile(st.Path(obj), data, 0o644); err != nil {
		t.Fatal(err)
	}
	db := openDB(t, st, st)
	ctx := context.Background()

	res, err := db.Query(ctx, "SELECT count(*), sum(id)::BIGINT FROM "+sopScan(obj))
	if err != nil {
		t.Fatalf("a query that reads only id: %v", err)
	}
	compareRows(t, "sum(id)", [][]any{{int64(rows), int64(rows * (rows - 1) / 2)}}, res.Rows)
	if _, err := db.Query(ctx, "SELECT max(customer) FROM "+sopScan(obj)); !errors.Is(err, verify.ErrVerify) {
		t.Errorf("a query that reads the damaged chunk: %v, want verify.ErrVerify", err)
	}
	for _, q := range []string{
		"SELECT * FROM " + VerifyFunction + "('" + obj.String() + "')",
		"SELECT verified FROM " + VerifyFunction + "('" + obj.String() + "')",
	} {
		res, err := db.Query(ctx, q)
		if !errors.Is(err, verify.ErrVerify) || res != nil {
			t.Errorf("%s after a successful projection: %v, %v; want no result and verify.ErrVerify", q, res, err)
		}
	}
	if err := db.Verify(ctx, obj); !errors.Is(err, verify.ErrVerify) {
		t.Errorf("DB.Verify after a successful projection: %v, want verify.ErrVerify", err)
	}
	res, err = db.Query(ctx, "SELECT * FROM "+VerifyFunction+"('"+intact.String()+"')")
	if err != nil {
		t.Fatalf("sop_verify of an intact object: %v", err)
	}
	compareRows(t, "sop_verify", [][]any{{intact.String(), int64(len(st.Bytes(t, intact))), true}}, res.Rows)
	if err := db.Verify(ctx, intact); err != nil {
		t.Errorf("DB.Verify of an intact object: %v", err)
	}
	// sop_scan's columns are the object's: nothing in its output claims
	// anything about verification.
	res, err = db.Query(ctx, "SELECT column_name FROM (DESCRIBE SELECT * FROM "+sopScan(intact)+")")
	if err != nil {
		t.Fatal(err)
	}
	compareRows(t, "sop_scan columns", [][]any{{"id"}, {"customer"}}, res.Rows)
}
