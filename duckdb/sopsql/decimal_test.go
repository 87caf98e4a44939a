package sopsql

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/sovm/sop-pme/duckdb/internal/ducktest"
	"github.com/sovm/sop-pme/reader"
)

// TestNarrowDecimalsAsReadParquet: decimals DuckDB stores as INT32 and
// INT64 (as tpchgen-cli stores TPC-H's DECIMAL(15,2)) reach DuckDB through
// the reader's decimal32 and decimal64 (reader.WithNarrowDecimals), with
// read_parquet's values: extremes of each precision, nulls, and the
// aggregates over them.
func TestNarrowDecimalsAsReadParquet(t *testing.T) {
	t.Parallel()
	st := ducktest.NewStore(t)
	d := openDuckWriter(t)
	const q = `SELECT
		CASE WHEN i % 13 = 0 THEN NULL WHEN i = 1 THEN 9999999999999.99 WHEN i = 2 THEN -9999999999999.99 ELSE ((i * 7919) % 1999999 - 999999)::DECIMAL(15,2) / 7 END::DECIMAL(15,2) AS d15,
		CASE WHEN i % 5 = 0 THEN NULL WHEN i = 1 THEN 999.9 WHEN i = 2 THEN -999.9 ELSE (i % 19999 - 9999)::DECIMAL(5,0) / 10 END::DECIMAL(4,1) AS d4,
		CASE WHEN i % 7 = 0 THEN NULL WHEN i = 1 THEN 9999999.99 ELSE ((i * 31) % 199999 - 99999)::DECIMAL(9,2) END::DECIMAL(9,2) AS d9,
		CASE WHEN i = 1 THEN 999999999999999999 WHEN i = 2 THEN -999999999999999999 ELSE i * 1000003 END::DECIMAL(18,0) AS d18
		FROM range(20000) t(i)`
	id := d.write(t, st, q, 32, "FIELD_IDS {d15: 1, d4: 2, d9: 3, d18: 4}, ROW_GROUP_SIZE 6000")
	r, err := reader.Open(context.Background(), st, id, st.Keys)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []arrow.Type{arrow.DECIMAL64, arrow.DECIMAL32, arrow.DECIMAL32, arrow.DECIMAL64} {
		if got := r.NarrowDecimalSchema().Field(i).Type.ID(); got != want {
			t.Fatalf("column %d reads as %s, want %s: the test would not take the narrow path", i, got, want)
		}
	}
	db, native := openDB(t, st, st).SQL(), openNative(t, 0)
	for _, q := range []string{
		"SELECT * FROM %s",
		"SELECT sum(d15), min(d15), max(d15), count(d15), sum(d4), min(d4), max(d4), sum(d9), max(d9), sum(d18), min(d18) FROM %s",
		"SELECT d4, count(*), sum(d15) FROM %s GROUP BY d4 ORDER BY d4 NULLS FIRST",
	} {
		from := func(f string) string { return fmtQuery(q, f) }
		compareRows(t, q, ducktest.MustQuery(t, native, from(nativeScan(st, id))), ducktest.MustQuery(t, db, from(sopScan(id))))
	}
}

func fmtQuery(q, from string) string { return strings.Replace(q, "%s", from, 1) }
