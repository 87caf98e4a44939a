package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sovm/sop-pme/duckdb/internal/ducktest"
)

// TestValueText: the runner renders the types of the TPC-H answers as
// DuckDB's CAST(... AS VARCHAR) does, the text sop-pme sql --csv prints:
// decimals of several scales and signs, doubles near the switches to the
// exponent form, integers of each width, dates, strings and NULL.
func TestValueText(t *testing.T) {
	t.Parallel()
	db := ducktest.OpenDuckDB(t)
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	q := `SELECT * FROM (VALUES
		(1::DECIMAL(15,2), 1.5::DOUBLE, 1::INTEGER, 1::BIGINT, 1::HUGEINT, DATE '1995-03-15', 'R', NULL::DOUBLE),
		(-0.05::DECIMAL(15,2), 25.522005853257337::DOUBLE, -7::INTEGER, 2147483648::BIGINT, 170141183460469231731687303715884105727::HUGEINT, DATE '1992-01-02', 'MAIL', 3.0::DOUBLE),
		(123456789012.34::DECIMAL(38,2), 1e-5::DOUBLE, 0::INTEGER, -1::BIGINT, -5::HUGEINT, DATE '1998-12-01', '', 1e16::DOUBLE),
		(16.3807786263955401::DECIMAL(38,4), 0.0001::DOUBLE, 0::INTEGER, 0::BIGINT, 0::HUGEINT, DATE '0001-01-01', 'x,y', 9999999999999998.0::DOUBLE),
		(0::DECIMAL(15,2), 0::DOUBLE, 0::INTEGER, 0::BIGINT, 0::HUGEINT, DATE '2026-12-02', 'é', -2.5e-300::DOUBLE)
	) t(dec, dbl, i32, i64, i128, d, s, n)`
	_, rows, err := queryText(context.Background(), conn, q)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkText(context.Background(), conn, q, rows); err != nil {
		t.Fatal(err)
	}
	// checkText itself fails on a difference.
	rows[1][1] = "25.52200585325734"
	if err := checkText(context.Background(), conn, q, rows); err == nil || !strings.Contains(err.Error(), "row 1 column 1") {
		t.Errorf("checkText passed a changed value: %v", err)
	}
	if err := checkText(context.Background(), conn, q, rows[:2]); err == nil {
		t.Error("checkText passed a missing row")
	}
}

// TestDiff: an answer differing in one cell, a row, or a column name is
// told apart from the reference, and an equal one is not.
func TestDiff(t *testing.T) {
	t.Parallel()
	want := answer{header: []string{"l_returnflag", "sum_qty"}, rows: [][]string{{"A", "37734107.00"}, {"N", "991417.00"}}}
	clone := func() answer {
		return answer{header: slices.Clone(want.header), rows: [][]string{slices.Clone(want.rows[0]), slices.Clone(want.rows[1])}}
	}
	if d := diff(clone(), want); d != "" {
		t.Errorf("equal answers differ: %s", d)
	}
	cell := clone()
	cell.rows[1][1] = "991417.01"
	short := clone()
	short.rows = short.rows[:1]
	long := clone()
	long.rows = append(long.rows, []string{"R", "1.00"})
	named := clone()
	named.header[1] = "sum_quantity"
	narrow := clone()
	narrow.rows[0] = narrow.rows[0][:1]
	for name, got := range map[string]answer{"cell": cell, "short": short, "long": long, "named": named, "narrow": narrow} {
		if d := diff(got, want); d == "" {
			t.Errorf("%s: no difference found", name)
		}
	}
}

// TestLoadQueries: the queries of bench/tpch are found in their order,
// each with the tables it reads (Q14's part, not l_partkey).
func TestLoadQueries(t *testing.T) {
	t.Parallel()
	qs, err := loadQueries(filepath.Join("..", "..", "..", "bench", "tpch"), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	var names []string
	for _, q := range qs {
		names = append(names, q.name)
		got[q.name] = q.tables
	}
	if want := []string{"q1", "q3", "q6", "q12", "q14"}; !slices.Equal(names, want) {
		t.Errorf("queries %v, want %v", names, want)
	}
	want := map[string][]string{"q1": {"lineitem"}, "q3": {"customer", "orders", "lineitem"}, "q6": {"lineitem"},
		"q12": {"orders", "lineitem"}, "q14": {"lineitem", "part"}}
	for n, w := range want {
		if !slices.Equal(got[n], w) {
			t.Errorf("%s reads %v, want %v", n, got[n], w)
		}
	}
	only, err := loadQueries(filepath.Join("..", "..", "..", "bench", "tpch"), []string{"q6"})
	if err != nil || len(only) != 1 || only[0].name != "q6" {
		t.Errorf("-only q6: %v, %v", only, err)
	}
}

// TestDuckPlain: the plaintext engine's view reads the table's Parquet
// file in the data directory, and its answer is DuckDB's, as text.
func TestDuckPlain(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := ducktest.OpenDuckDB(t)
	ducktest.Exec(t, db, "COPY (SELECT i::BIGINT AS l_orderkey, (i % 7)::DECIMAL(15,2) AS l_quantity FROM range(1000) t(i)) TO "+
		ducktest.SQLString(filepath.Join(dir, "lineitem.parquet")))
	db2, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	conn, err := db2.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	src, err := plainSources(dir, tableFlag{{"lineitem", ""}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), "CREATE VIEW lineitem AS SELECT * FROM "+src["lineitem"]); err != nil {
		t.Fatal(err)
	}
	h, rows, err := queryText(context.Background(), conn, "select sum(l_quantity) as s, count(*) as n from lineitem")
	if err != nil {
		t.Fatal(err)
	}
	// 0+1+...+6 = 21 per 7 rows: 142 full cycles (2982) and 0..5 (15).
	if !slices.Equal(h, []string{"s", "n"}) || len(rows) != 1 || !slices.Equal(rows[0], []string{"2997.00", "1000"}) {
		t.Errorf("got %v %v, want [s n] [[2997.00 1000]]", h, rows)
	}
}

// TestDuckPlainParts: with the table a directory of tpchgen-cli --parts
// files, the view reads them all, listed by part number.
func TestDuckPlainParts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := ducktest.OpenDuckDB(t)
	if err := os.Mkdir(filepath.Join(dir, "lineitem"), 0o755); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, p := range []int{1, 2, 10} {
		f := filepath.Join(dir, "lineitem", fmt.Sprintf("lineitem.%d.parquet", p))
		want = append(want, f)
		ducktest.Exec(t, db, fmt.Sprintf("COPY (SELECT %d::BIGINT AS l_orderkey FROM range(10)) TO %s", p, ducktest.SQLString(f)))
	}
	files, err := partFiles(filepath.Join(dir, "lineitem"))
	if err != nil || !slices.Equal(files, want) {
		t.Fatalf("partFiles: %q, %v; want %q", files, err, want)
	}
	src, err := plainSources(dir, tableFlag{{"lineitem", ""}})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "CREATE VIEW lineitem AS SELECT * FROM "+src["lineitem"]); err != nil {
		t.Fatal(err)
	}
	_, rows, err := queryText(context.Background(), conn, "select sum(l_orderkey), count(*) from lineitem")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || !slices.Equal(rows[0], []string{"130", "30"}) {
		t.Errorf("got %v, want [[130 30]]", rows)
	}
}
