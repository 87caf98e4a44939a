package sopsql

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/duckdb/duckdb-go/v2"
	"github.com/sovm/sop-pme/duckdb/internal/ducktest"
	"github.com/sovm/sop-pme/internal/testkit/benchdata"
	"github.com/sovm/sop-pme/internal/thrift"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/writer"
)

// TestCardinalityEstimate: DuckDB's planner gets the footer's row count of
// the row groups a scan reads as its estimate (EXPLAIN shows it), where it
// had none, and the join order it drives: the object, 30,000 rows, is the
// probe side of a join with a 3-row table, not the side hashed.
func TestCardinalityEstimate(t *testing.T) {
	t.Parallel()
	rec := benchdata.Record(30_000, 5)
	defer rec.Release()
	st := ducktest.NewStore(t)
	id := st.Write(t, rec.Schema(), []arrow.RecordBatch{rec}, writer.WithRowGroupRows(10_000)).StorageID
	db := openDB(t, st, st)
	for _, c := range []struct {
		from, want string
	}{
		{sopScan(id), "~30,000 rows"},
		{sopScan(id, "row_groups := [2]"), "~10,000 rows"},
		{sopScan(id, "row_groups := [0, 2]"), "~20,000 rows"},
	} {
		plan := explain(t, db, "SELECT sum(id) FROM "+c.from)
		_, scan, _ := strings.Cut(plan, "SOP_SCAN")
		if !strings.Contains(scan, c.want) {
			t.Errorf("EXPLAIN over %s: no %q under SOP_SCAN:\n%s", c.from, c.want, plan)
		}
	}
	// A hash join builds its right child: the small side.
	plan := explain(t, db, "SELECT count(*) FROM (VALUES (1), (2), (3)) v(k) JOIN "+sopScan(id)+" s ON s.id = v.k")
	join := strings.Index(plan, "HASH_JOIN")
	scan, values := strings.Index(plan, "SOP_SCAN"), strings.Index(plan, "COLUMN_DATA_SCAN")
	if join < 0 || scan < 0 || values < 0 || scan > values {
		t.Errorf("the object is not the probe side (left child) of the join:\n%s", plan)
	}
}

// explain returns the physical plan of q.
func explain(t *testing.T, db *DB, q string) string {
	t.Helper()
	var b strings.Builder
	for _, r := range ducktest.MustQuery(t, db.SQL(), "EXPLAIN "+q) {
		fmt.Fprintln(&b, r[1])
	}
	return b.String()
}

// TestLyingFooterSum: a footer that states fewer rows than the object
// holds cannot turn the planner's estimate into a wrong answer. With a
// maximum cardinality of 7 rows DuckDB 1.5.6 sums the CASE below, whose
// statistics say [0, 10^18], in an int64 and wraps (the research behind
// Cardinality measured -6657342515609337856 for 400,000 rows); sop_scan
// gives the estimate only, and the reader refuses the rows of a row group
// whose pages disagree with its footer. So each query gives the exact
// answer, computed from the rows, or fails with reader.ErrFormat; count,
// min and max come from the rows too, never from the footer.
func TestLyingFooterSum(t *testing.T) {
	t.Parallel()
	const rows = 30_000
	rec := benchdata.Record(rows, 5)
	defer rec.Release()
	st := ducktest.NewStore(t)
	obj := st.Write(t, rec.Schema(), []arrow.RecordBatch{rec}, writer.WithRowGroupRows(rows/3))
	ids := rec.Column(0).(*array.Int64)
	var positive, minID, maxID int64 = 0, ids.Value(0), ids.Value(0)
	for i := range rows {
		if ids.IsValid(i) && ids.Value(i) > 0 {
			positive++
		}
		minID, maxID = min(minID, ids.Value(i)), max(maxID, ids.Value(i))
	}
	sum := new(big.Int).Mul(big.NewInt(positive), big.NewInt(1e18))
	if sum.IsInt64() {
		t.Fatal("the sum fits an int64: a wrapping sum would go unseen")
	}
	db := openDB(t, st, st)
	query := func(id storageid.ID) string {
		return "SELECT sum(CASE WHEN id > 0 THEN 1000000000000000000::BIGINT ELSE 0 END)::VARCHAR, count(*), min(id), max(id) FROM " + sopScan(id)
	}
	want := [][]any{{sum.String(), int64(rows), minID, maxID}}
	res, err := db.Query(context.Background(), query(obj.StorageID))
	if err != nil {
		t.Fatal(err)
	}
	compareRows(t, "the true footer", want, res.Rows)

	noStats := func(int) *thrift.Struct { return thrift.NewStruct() }
	lying := st.Import(t, lieFooter(t, st.Bytes(t, obj.StorageID), obj.DEK, 7, noStats), obj.DEK)
	if plan := explain(t, db, query(lying)); !strings.Contains(plan, "~21 rows") {
		t.Fatalf("the lying footer's 3 × 7 rows are not the estimate:\n%s", plan)
	}
	for _, q := range []string{query(lying), "SELECT count(*) FROM " + sopScan(lying)} {
		res, err := db.Query(context.Background(), q)
		if err != nil {
			if !errors.Is(err, reader.ErrFormat) {
				t.Fatalf("%s: %v, want the answer or reader.ErrFormat", q, err)
			}
			t.Logf("refused: %v", err)
			continue
		}
		if q == query(lying) {
			compareRows(t, "the lying footer", want, res.Rows)
		} else {
			compareRows(t, "the lying footer", [][]any{{int64(rows)}}, res.Rows)
		}
	}
}

// understated is a table function of rows BIGINT values 1 that tells
// DuckDB's planner it has 1 row, with sop_scan's exactness flag.
type understated struct {
	rows, next int
	exact      bool
}

func (u *understated) ColumnInfos() []duckdb.ColumnInfo {
	return []duckdb.ColumnInfo{{Name: "a", T: typeInfo(duckdb.TYPE_BIGINT)}}
}

func (u *understated) Cardinality() *duckdb.CardinalityInfo {
	return &duckdb.CardinalityInfo{Cardinality: 1, Exact: u.exact}
}

func (u *understated) Init() {}

func (u *understated) FillChunk(ch duckdb.DataChunk) error {
	n := min(u.rows-u.next, duckdb.GetDataChunkCapacity())
	for i := range n {
		if err := duckdb.SetChunkValue(ch, 0, i, int64(1)); err != nil {
			return err
		}
	}
	u.next += n
	return ch.SetSize(n)
}

// TestCardinalityIsAnEstimate: the flag sop_scan passes with its
// cardinality makes it an estimate only, on the linked DuckDB: a table
// function that understates its rows with that flag still gets an exact
// sum. With DuckDB 1.5.6's other flag (Exact: false, which sets a maximum
// cardinality) the sum wraps; a DuckDB that swaps the two (main, commit
// 90cb1904) fails this test, and sop_scan must then pass Exact: false.
func TestCardinalityIsAnEstimate(t *testing.T) {
	t.Parallel()
	rec := benchdata.Record(10, 5)
	defer rec.Release()
	st := ducktest.NewStore(t)
	id := st.Write(t, rec.Schema(), []arrow.RecordBatch{rec}).StorageID
	r, err := reader.Open(context.Background(), st, id, st.Keys)
	if err != nil {
		t.Fatal(err)
	}
	card := (&scanSource{r: r, rowGroups: []int{0}}).Cardinality()
	if card == nil || card.Cardinality != 10 {
		t.Fatalf("sop_scan's cardinality %+v, want the footer's 10 rows", card)
	}
	const rows = 50_000
	db := openNative(t, 1)
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	fn := duckdb.ChunkTableFunction{BindArguments: func(map[string]any, ...any) (duckdb.ChunkTableSource, error) {
		return &understated{rows: rows, exact: card.Exact}, nil
	}}
	if err := duckdb.RegisterTableUDF(conn, "understated", fn); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	got := ducktest.MustQuery(t, db, "SELECT sum(CASE WHEN a > 0 THEN 1000000000000000000::BIGINT ELSE 0 END)::VARCHAR FROM understated()")
	if want := "50000000000000000000000"; got[0][0] != want {
		t.Fatalf("sum over a table function that states 1 row with Exact: %v: %v, want %s", card.Exact, got[0][0], want)
	}
}
