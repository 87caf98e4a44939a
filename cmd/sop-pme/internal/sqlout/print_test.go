//go:build duckdb

package sqlout

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sovm/sop-pme/duckdb/sopsql"
	"github.com/sovm/sop-pme/internal/testkit/testtables"
	"github.com/sovm/sop-pme/writer"
)

// printQuery runs q on db and prints its result.
func printQuery(t *testing.T, db *sopsql.DB, p Printer, q string) string {
	t.Helper()
	res, err := db.Query(context.Background(), q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	var b bytes.Buffer
	if err := p.Print(&b, res); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestPrintTable(t *testing.T) {
	t.Parallel()
	db, _ := newDB(t)
	got := printQuery(t, db, Printer{Format: Table}, `SELECT * FROM (VALUES
		(1, 'a', 1.5::DECIMAL(9,2), 0.1::DOUBLE, TIMESTAMPTZ '2023-11-14 22:13:20.5+00', [1, 2]),
		(-20, NULL, NULL, 'nan'::DOUBLE, NULL, []),
		(300, 'ä 日本' || chr(10) || 'x', -0.01, 1e20, TIMESTAMPTZ '1970-01-01 00:00:00+00', NULL)
	) t(n, s, d, f, ts, l)`)
	want := `┌───────┬───────────┬──────────────┬────────┬──────────────────────────┬─────────┐
│   n   │     s     │      d       │   f    │            ts            │    l    │
│ int32 │  varchar  │ decimal(9,2) │ double │ timestamp with time zone │ int32[] │
├───────┼───────────┼──────────────┼────────┼──────────────────────────┼─────────┤
│     1 │ a         │         1.50 │    0.1 │ 2023-11-14 22:13:20.5+00 │ [1, 2]  │
│   -20 │ NULL      │         NULL │    nan │ NULL                     │ []      │
│   300 │ ä 日本\nx │        -0.01 │  1e+20 │ 1970-01-01 00:00:00+00   │ NULL    │
└───────┴───────────┴──────────────┴────────┴──────────────────────────┴─────────┘
`
	if got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}

	// Truncated: the first and last rows, dots, and a count.
	got = printQuery(t, db, Printer{Format: Table, MaxRows: 4}, "SELECT range AS i, range * 10 AS j FROM range(100)")
	// The note widens the last column so that the box stays closed.
	want = `┌───────┬────────────┐
│   i   │     j      │
│ int64 │   int64    │
├───────┼────────────┤
│     0 │          0 │
│     1 │         10 │
│   ·   │     ·      │
│   ·   │     ·      │
│   ·   │     ·      │
│    98 │        980 │
│    99 │        990 │
├───────┴────────────┤
│ 100 rows (4 shown) │
└────────────────────┘
`
	if got != want {
		t.Errorf("truncated table:\n%s\nwant:\n%s", got, want)
	}

	got = printQuery(t, db, Printer{Format: Table}, "SELECT 1 AS a WHERE false")
	want = `┌────────┐
│   a    │
│ int32  │
├────────┤
│ 0 rows │
└────────┘
`
	if got != want {
		t.Errorf("empty table:\n%s\nwant:\n%s", got, want)
	}

	got = printQuery(t, db, Printer{Format: Table, MaxWidth: 6}, "SELECT 'abcdefghij' AS long_name")
	want = `┌────────┐
│ long_… │
│ varch… │
├────────┤
│ abcde… │
└────────┘
`
	if got != want {
		t.Errorf("clipped table:\n%s\nwant:\n%s", got, want)
	}

	// No columns, no table.
	var empty bytes.Buffer
	if err := (Printer{Format: Table}).Print(&empty, &sopsql.Result{}); err != nil || empty.Len() != 0 {
		t.Errorf("a result without columns: %q, %v", empty.String(), err)
	}
}

// TestPrintCSVAndJSON prints every value of the type table as CSV and
// JSON, and reads them back: the CSV fields are DuckDB's text of each value
// (empty for NULL), the JSON is valid and holds numbers, booleans, nulls,
// arrays and objects where the values are such.
func TestPrintCSVAndJSON(t *testing.T) {
	t.Parallel()
	db, st := newDB(t)
	rec := testtables.Record(testtables.AllTypes(), 300, 21)
	defer rec.Release()
	id := put(t, st, rec, writer.WithRowGroupRows(100))
	res, err := db.Query(context.Background(), "SELECT * FROM "+sopScan(id))
	if err != nil {
		t.Fatal(err)
	}
	casts := make([]string, len(res.Columns))
	for i, c := range res.Columns {
		casts[i] = "CAST(" + quoteIdent(c.Name) + " AS VARCHAR)"
	}
	texts := query(t, db, "SELECT "+strings.Join(casts, ", ")+" FROM "+sopScan(id)).Rows

	var b bytes.Buffer
	if err := (Printer{Format: CSV}).Print(&b, res); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(res.Rows)+1 {
		t.Fatalf("CSV: %d lines, want a header and %d rows", len(recs), len(res.Rows))
	}
	for j, c := range res.Columns {
		if recs[0][j] != c.Name {
			t.Errorf("CSV header %d: %q, want %q", j, recs[0][j], c.Name)
		}
	}
	for i, row := range texts {
		for j, v := range row {
			want := ""
			if v != nil {
				want = v.(string)
			}
			if got := recs[i+1][j]; got != want && !(res.Columns[j].Type == "FLOAT" && sameFloat32(got, want)) {
				t.Errorf("CSV row %d column %s: %q, want %q", i, res.Columns[j].Name, got, want)
			}
		}
	}

	b.Reset()
	if err := (Printer{Format: JSON}).Print(&b, res); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(b.String(), "\n"); lines != len(res.Rows) {
		t.Errorf("JSON: %d lines, want one per row (%d)", lines, len(res.Rows))
	}
	var rows []map[string]any
	dec := json.NewDecoder(&b)
	dec.UseNumber()
	if err := dec.Decode(&rows); err != nil {
		t.Fatalf("JSON does not parse: %v", err)
	}
	if len(rows) != len(res.Rows) {
		t.Fatalf("JSON: %d rows, want %d", len(rows), len(res.Rows))
	}
	kinds := map[string]string{}
	for i, row := range rows {
		for j, c := range res.Columns {
			v, ok := row[c.Name]
			if !ok {
				t.Fatalf("JSON row %d has no %s", i, c.Name)
			}
			if (v == nil) != (res.Rows[i][j] == nil) {
				t.Errorf("JSON row %d column %s: %v, value %v", i, c.Name, v, res.Rows[i][j])
			}
			if v != nil {
				kinds[c.Name] = fmt.Sprintf("%T", v)
			}
		}
	}
	want := map[string]string{"i64": "json.Number", "u64": "json.Number", "f64": "json.Number", "dec38": "json.Number",
		"b": "bool", "s": "string", "ts_us": "string", "l_s": "[]interface {}", "st": "map[string]interface {}", "m": "map[string]interface {}"}
	for c, k := range want {
		if kinds[c] != k {
			t.Errorf("JSON column %s holds %s, want %s", c, kinds[c], k)
		}
	}
	// NaN and the infinities, which JSON has no numbers for, are strings.
	b.Reset()
	res, err = db.Query(context.Background(), "SELECT 'nan'::DOUBLE AS a, '-inf'::FLOAT AS b, 0.5::DECIMAL(1,1) AS c, MAP {1: 'x'} AS d")
	if err != nil {
		t.Fatal(err)
	}
	if err := (Printer{Format: JSON}).Print(&b, res); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), `[{"a":"nan","b":"-inf","c":0.5,"d":{"1":"x"}}]`+"\n"; got != want {
		t.Errorf("JSON: %s, want %s", got, want)
	}
}

func TestParseFormat(t *testing.T) {
	t.Parallel()
	for _, f := range []Format{Table, CSV, JSON} {
		if g, err := ParseFormat(strings.ToUpper(f.String())); g != f || err != nil {
			t.Errorf("ParseFormat(%q) = %v, %v", f, g, err)
		}
	}
	if _, err := ParseFormat("xml"); !errors.Is(err, ErrFormat) {
		t.Errorf("ParseFormat(xml): %v, want ErrFormat", err)
	}
	if err := (Printer{Format: 9}).Print(new(bytes.Buffer), &sopsql.Result{}); !errors.Is(err, ErrFormat) {
		t.Errorf("Print in format 9: %v, want ErrFormat", err)
	}
}
