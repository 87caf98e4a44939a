//go:build duckdb

package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sovm/sop-pme/keyring"
	"github.com/sovm/sop-pme/storageid"
)

// sqlBinary is go build -tags duckdb ., declared only in a test binary
// built with that tag: it links DuckDB, which takes long enough to build
// once per test binary, not per test. Run only the TestSQL tests with the
// tag; the others test sopBinary, the same with or without.
var sqlBinary = builder("sop-pme-sql", "duckdb")

// demoRows is the demo table's size in the SQL tests: three row groups of
// at most 32,768 rows.
const demoRows = 70_000

// demoRow is row i of the demo table (sampleTable), as the command prints
// its values in CSV: order_id, customer, amount, placed_at, paid ("" for
// NULL).
func demoRow(i int) []string {
	paid := ""
	if i%20 != 0 {
		paid = fmt.Sprint(i%3 != 0)
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second)
	return []string{fmt.Sprint(i), fmt.Sprintf("customer-%05d", i%9973), fmt.Sprint(i % 1000 * 7), at.Format("2006-01-02 15:04:05") + "+00", paid}
}

// sqlEnv is an env that runs the sop-pme with SQL in a working directory
// of its own, with the demo table in its store.
func sqlEnv(t *testing.T) (*env, string) {
	t.Helper()
	e := newEnv(t)
	e.bin = sqlBinary(t)
	e.dir = filepath.Join(filepath.Dir(e.store), "cwd")
	if err := os.Mkdir(e.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	r := e.ok("demo", "--rows", fmt.Sprint(demoRows))
	m := storageIDLine.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("demo printed no storage_id:\n%s", r)
	}
	return e, m[1]
}

func parseCSV(t *testing.T, s string) [][]string {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(s)).ReadAll()
	if err != nil {
		t.Fatalf("the output is not CSV: %v\n%s", err, s)
	}
	return recs
}

// TestSQL: queries over a demo object and an imported one return the right
// rows, as a table, CSV and JSON; --view names objects; the store, the
// keyring, the home and the working directory are left as they were.
func TestSQL(t *testing.T) {
	t.Parallel()
	e, id := sqlEnv(t)
	in := filepath.Join(t.TempDir(), "notes.csv")
	os.WriteFile(in, []byte("order_id,note\n0,first\n3,third\n69999,last\n123456,none\n"), 0o600)
	notes := e.importJSON(in, "--assign-field-ids").StorageID
	root := filepath.Dir(e.store)
	before := tree(t, root)

	// A table, as the DuckDB shell prints one.
	r := e.ok("sql", "SELECT * FROM sop_scan('"+id+"') WHERE order_id IN (0, 1, 3, 69999) ORDER BY order_id")
	wantTable := `┌──────────┬────────────────┬────────┬──────────────────────────┬─────────┐
│ order_id │    customer    │ amount │        placed_at         │  paid   │
│  int64   │    varchar     │ int64  │ timestamp with time zone │ boolean │
├──────────┼────────────────┼────────┼──────────────────────────┼─────────┤
│        0 │ customer-00000 │      0 │ 2026-01-01 00:00:00+00   │ NULL    │
│        1 │ customer-00001 │      7 │ 2026-01-01 00:00:01+00   │ true    │
│        3 │ customer-00003 │     21 │ 2026-01-01 00:00:03+00   │ false   │
│    69999 │ customer-00188 │   6993 │ 2026-01-01 19:26:39+00   │ false   │
└──────────┴────────────────┴────────┴──────────────────────────┴─────────┘
`
	if r.stdout != wantTable || r.stderr != "" {
		t.Errorf("table:\n%s\nwant:\n%s", r, wantTable)
	}

	// Every row, as CSV, against the table the demo wrote.
	r = e.ok("sql", "--csv", "SELECT * FROM sop_scan('"+id+"') ORDER BY order_id")
	recs := parseCSV(t, r.stdout)
	if len(recs) != demoRows+1 || !slices.Equal(recs[0], []string{"order_id", "customer", "amount", "placed_at", "paid"}) {
		t.Fatalf("CSV: %d records, header %v", len(recs), recs[0])
	}
	for i, rec := range recs[1:] {
		if want := demoRow(i); !slices.Equal(rec, want) {
			t.Fatalf("CSV row %d: %q, want %q", i, rec, want)
		}
	}

	// Aggregates come from the rows; --format csv is --csv.
	var sum, paid, unpaid int
	for i := range demoRows {
		row := demoRow(i)
		var a int
		fmt.Sscan(row[2], &a)
		sum += a
		switch row[4] {
		case "true":
			paid++
		case "false":
			unpaid++
		}
	}
	r = e.ok("sql", "--format", "csv", "SELECT count(*) AS n, sum(amount) AS total, count(*) FILTER (WHERE paid) AS paid, "+
		"count(*) FILTER (WHERE NOT paid) AS unpaid, min(placed_at) AS first, max(customer) AS last FROM sop_scan('"+id+"')")
	want := fmt.Sprintf("n,total,paid,unpaid,first,last\n%d,%d,%d,%d,2026-01-01 00:00:00+00,customer-09972\n", demoRows, sum, paid, unpaid)
	if r.stdout != want {
		t.Errorf("aggregates:\n%s\nwant:\n%s", r, want)
	}

	// JSON: numbers as numbers, NULL as null.
	r = e.ok("sql", "--json", "SELECT * FROM sop_scan('"+id+"') WHERE order_id < 25 ORDER BY order_id")
	var rows []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
		t.Fatalf("JSON: %v\n%s", err, r)
	}
	if len(rows) != 25 {
		t.Fatalf("JSON: %d rows, want 25", len(rows))
	}
	for i, row := range rows {
		d := demoRow(i)
		var paid any
		if d[4] != "" {
			paid = d[4] == "true"
		}
		want := map[string]any{"order_id": float64(i), "customer": d[1], "amount": float64(i % 1000 * 7), "placed_at": d[3], "paid": paid}
		if fmt.Sprint(row) != fmt.Sprint(want) {
			t.Errorf("JSON row %d: %v, want %v", i, row, want)
		}
	}

	// --view: two objects joined by name, the imported one and the demo.
	r = e.ok("sql", "--csv", "--view", "orders="+id, "--view", "notes="+notes,
		"SELECT o.order_id, o.customer, o.amount, n.note FROM orders o JOIN notes n USING (order_id) ORDER BY 1")
	want = "order_id,customer,amount,note\n0,customer-00000,0,first\n3,customer-00003,21,third\n69999,customer-00188,6993,last\n"
	if r.stdout != want {
		t.Errorf("--view join:\n%s\nwant:\n%s", r, want)
	}
	r = e.ok("sql", "--view", "notes="+notes, "--csv", "SELECT * FROM notes ORDER BY order_id DESC LIMIT 1")
	if r.stdout != "order_id,note\n123456,none\n" {
		t.Errorf("--view notes:\n%s", r)
	}

	// --max-rows: the first and last halves, and a count of all.
	r = e.ok("sql", "--max-rows", "4", "--view", "orders="+id, "SELECT order_id FROM orders ORDER BY 1 LIMIT 10")
	var cells []string
	for _, line := range strings.Split(r.stdout, "\n") {
		if c := strings.Trim(line, "│ "); c != "" && !strings.ContainsAny(c, "─·") {
			cells = append(cells, c)
		}
	}
	if want := []string{"order_id", "int64", "0", "1", "8", "9", "10 rows (4 shown)"}; !slices.Equal(cells, want) {
		t.Errorf("--max-rows 4: %q, want %q\n%s", cells, want, r.stdout)
	}

	// sop_verify checks every byte.
	r = e.ok("sql", "--csv", "SELECT storage_id, verified FROM sop_verify('"+id+"')")
	if r.stdout != "storage_id,verified\n"+id+",true\n" {
		t.Errorf("sop_verify:\n%s", r)
	}

	// Decrypted rows never go to disk: DuckDB has no temporary directory
	// (TestSQLLockDown: and a query cannot give it one), installs no
	// extension and reaches no file. Statements run in turn; the last
	// one's result is printed.
	r = e.ok("sql", "--csv", "SELECT 1 AS one; SELECT current_setting('temp_directory') AS tmp, current_setting('autoinstall_known_extensions') AS install, "+
		"current_setting('enable_external_access') AS files, current_setting('lock_configuration') AS locked")
	if r.stdout != "tmp,install,files,locked\n,false,false,true\n" {
		t.Errorf("DuckDB settings:\n%s", r)
	}

	// Read-only: no file created or changed, in the store, the
	// configuration directory (KEK and keyring), the home or the working
	// directory: DuckDB spilled nothing and installed nothing.
	if after := tree(t, root); !slices.Equal(before, after) {
		t.Errorf("sql created or changed files:\nbefore %v\nafter  %v", before, after)
	}
}

// TestSQLErrors: each failure is one line with its exit code, and prints no
// row: a damaged object 4, an unknown storage_id 3, an object whose DEK the
// keyring lacks 5, a bad query or flag 2.
func TestSQLErrors(t *testing.T) {
	t.Parallel()
	e, id := sqlEnv(t)
	unknown := storageid.Sum([]byte("no such object")).String()
	scan := func(id string) string { return "SELECT * FROM sop_scan('" + id + "')" }
	noRows := func(r result) {
		t.Helper()
		if r.stdout != "" {
			t.Errorf("a failed query printed:\n%s", r.stdout)
		}
	}

	// Bad command lines and queries: 2.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sql"}, "one query"},
		{[]string{"sql", "SELECT 1", "SELECT 2"}, "one query"},
		{[]string{"sql", " "}, "the query is empty"},
		{[]string{"sql", "--csv", "--json", "SELECT 1"}, "give one of --csv, --json"},
		{[]string{"sql", "--format", "xml", "SELECT 1"}, `--format "xml"`},
		{[]string{"sql", "--view", "orders", "SELECT 1"}, "want NAME=ID"},
		{[]string{"sql", "--view", "orders=abc", "SELECT 1"}, "not a storage_id"},
		{[]string{"sql", "--view", "o=" + id, "--view", "O=" + id, "SELECT 1"}, "--view O given twice"},
		{[]string{"sql", "SELEC 1"}, "Parser Error"},
		{[]string{"sql", "SELECT * FROM orders"}, "Catalog Error"},
		{[]string{"sql", "SELECT nope FROM sop_scan('" + id + "')"}, `"nope" not found`},
		{[]string{"sql", scan("abc")}, `"abc" is neither a storage_id nor a table`},
	} {
		noRows(e.fails(exitUsage, []string{c.want}, c.args...))
	}
	// A failure DuckDB reports, not a usage error: 1.
	noRows(e.fails(exitFailure, []string{"Could not convert string 'x' to INT32"}, "sql", "SELECT 'x'::INTEGER"))

	// An unknown storage_id: 3, through sop_scan, sop_verify and --view.
	noRows(e.fails(exitNotFound, []string{unknown, "no such object"}, "sql", scan(unknown)))
	noRows(e.fails(exitNotFound, []string{unknown, "no such object"}, "sql", "SELECT * FROM sop_verify('"+unknown+"')"))
	noRows(e.fails(exitNotFound, []string{unknown, "no such object"}, "sql", "--view", "t="+unknown, "SELECT 1"))
	// No store, no KEK: 3, and nothing created.
	missing := filepath.Join(t.TempDir(), "typo")
	noRows(e.fails(exitNotFound, []string{missing, "no store"}, "sql", "--store", missing, scan(id)))
	if _, err := os.Stat(missing); err == nil {
		t.Errorf("sql created the store %s", missing)
	}
	r := e.run([]string{"SOP_PME_STORE=" + e.store, "XDG_CONFIG_HOME=" + t.TempDir()}, "sql", scan(id))
	checkFailure(t, r, exitNotFound, []string{"no KEK at"}, []string{"sql", scan(id)})

	// An object whose DEK the keyring does not hold: 5.
	in := filepath.Join(t.TempDir(), "t.csv")
	os.WriteFile(in, []byte("a\n1\n2\n"), 0o600)
	other := e.importJSON(in, "--assign-field-ids").StorageID
	e.ok("sql", scan(other))
	ctx := context.Background()
	kek, err := keyring.LoadKEKFile(e.kekPath())
	if err != nil {
		t.Fatal(err)
	}
	ring, err := keyring.Open(ctx, e.ringPath(), kek)
	if err != nil {
		t.Fatal(err)
	}
	oid, _ := storageid.Parse(other)
	if err := ring.Delete(ctx, oid); err != nil {
		t.Fatal(err)
	}
	noRows(e.fails(exitKey, []string{other, "holds no DEK"}, "sql", scan(other)))
	noRows(e.fails(exitKey, []string{other, "holds no DEK"}, "sql", "--view", "t="+other, "SELECT * FROM t"))

	// A damaged object: 4, and no row. The byte changed is in the second
	// of the three row groups (rows 32,768 to 65,535, 47 % to 94 % of the
	// data region), far from the footer's ranges, which the object's
	// opening verifies: the scan finds the damage, after DuckDB may have
	// read rows of the first row group.
	var ins struct {
		DataRegion int64 `json:"data_region"`
	}
	if err := json.Unmarshal([]byte(e.ok("inspect", "--json", id).stdout), &ins); err != nil || ins.DataRegion < 1000 {
		t.Fatalf("inspect --json: %v, data region %d", err, ins.DataRegion)
	}
	data := filepath.Join(e.store, id+".data")
	b, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	b[4+ins.DataRegion*6/10] ^= 0x40 // after the 4-byte magic
	if err := os.WriteFile(data, b, 0o600); err != nil {
		t.Fatal(err)
	}
	damaged := []string{id, "do not match the storage_id"}
	for _, args := range [][]string{
		{"sql", scan(id)},
		{"sql", "--csv", scan(id) + " ORDER BY order_id"},
		{"sql", "--json", "--view", "orders=" + id, "SELECT * FROM orders"},
		{"sql", "SELECT count(order_id), sum(amount), max(customer), max(placed_at), count(paid) FROM sop_scan('" + id + "')"},
		{"sql", "SELECT * FROM sop_verify('" + id + "')"},
	} {
		noRows(e.fails(exitVerify, damaged, args...))
	}
}

// TestSQLLockDown: a query cannot reconfigure DuckDB, spill, reach a file of
// the host or install an extension: each statement fails with one line,
// and no file appears anywhere (the store, the configuration, the home, the
// working directory, the directories the statements name).
func TestSQLLockDown(t *testing.T) {
	t.Parallel()
	e, id := sqlEnv(t)
	dir := t.TempDir()
	host := filepath.Join(dir, "host.csv")
	if err := os.WriteFile(host, []byte("a,b\n1,2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	spill := filepath.Join(dir, "spill")
	if err := os.Mkdir(spill, 0o700); err != nil {
		t.Fatal(err)
	}
	roots := []string{filepath.Dir(e.store), dir}
	before := tree(t, roots...)
	path := func(name string) string { return "'" + filepath.Join(dir, name) + "'" }
	sort := "SELECT count(*) FROM (SELECT * FROM range(4000000) t(i) ORDER BY hash(i))"
	for _, c := range []struct{ query, want string }{
		// A spill to disk: a low memory limit and a temporary directory,
		// then a sort that outgrows the limit.
		{"SET memory_limit = '16MB'; SET temp_directory = '" + spill + "'; " + sort, "the configuration has been locked"},
		{"SET temp_directory = '" + spill + "'", "the configuration has been locked"},
		{"RESET temp_directory", "the configuration has been locked"},
		{"SET lock_configuration = false", "the configuration has been locked"},
		{"COPY (SELECT * FROM sop_scan('" + id + "')) TO " + path("out.csv"), "Permission Error"},
		{"COPY (SELECT * FROM sop_scan('" + id + "')) TO " + path("out.parquet") + " (FORMAT parquet)", "Permission Error"},
		{"SELECT * FROM read_csv('" + host + "')", "Permission Error"},
		{"SELECT * FROM read_text('/etc/hostname')", "Permission Error"},
		{"INSTALL httpfs", "Permission Error"},
		{"LOAD httpfs", "Permission Error"},
		{"ATTACH " + path("attached.db"), "Permission Error"},
		{"EXPORT DATABASE " + path("export"), "Permission Error"},
		// DuckDB 1.5.6 runs this despite the lock; the file is refused, the
		// next statement fails, and closing DuckDB would abort: one line.
		{"CALL enable_logging(storage := 'file', storage_path := " + path("logs") + "); SELECT 42", "Permission Error"},
	} {
		r := e.fails(exitFailure, []string{c.want}, "sql", c.query)
		if r.stdout != "" {
			t.Errorf("%s printed:\n%s", c.query, r.stdout)
		}
	}
	if after := tree(t, roots...); !slices.Equal(before, after) {
		t.Errorf("the queries created or changed files:\nbefore %v\nafter  %v", before, after)
	}
}

// TestSQLArguments: any argument of sop_scan and sop_verify, NULL and every
// type included, is a usage error on one line that names the argument and
// sop_scan, never a crash and never an internal name.
func TestSQLArguments(t *testing.T) {
	t.Parallel()
	e, id := sqlEnv(t)
	for _, c := range []struct{ query, want string }{
		{"SELECT * FROM sop_scan(NULL)", "storage_id is NULL"},
		{"SELECT * FROM sop_scan(NULL::VARCHAR)", "storage_id is NULL"},
		{"SELECT * FROM sop_verify(NULL)", "storage_id is NULL"},
		{"SELECT * FROM sop_scan(['" + id + "'])", "storage_id is of type VARCHAR[]"},
		{"SELECT * FROM sop_scan('" + id + "', '" + id + "')", "row_groups is of type VARCHAR"},
		{"SELECT * FROM sop_scan(42)", "storage_id is of type INTEGER"},
		{"SELECT * FROM sop_scan('" + id + "', row_groups := [NULL])", `row_groups is of type "NULL"[]`},
		{"SELECT * FROM sop_scan('" + id + "', batch_size := 'x')", "batch_size is of type VARCHAR"},
		{"SELECT * FROM sop_verify(1)", "sop_verify(INTEGER)"},
	} {
		r := e.fails(exitUsage, []string{c.want}, "sql", c.query)
		if strings.Contains(r.stderr, "impl") || r.stdout != "" {
			t.Errorf("%s:\n%s", c.query, r)
		}
	}
}

// TestSQLThreads: DuckDB runs GOMAXPROCS threads, so that GOMAXPROCS holds
// the whole command (DuckDB's own default is the machine's CPU count,
// whatever GOMAXPROCS or the process's CPU affinity says).
func TestSQLThreads(t *testing.T) {
	t.Parallel()
	e, _ := sqlEnv(t)
	for _, n := range []string{"1", "3"} {
		r := e.run([]string{"SOP_PME_STORE=" + e.store, "GOMAXPROCS=" + n}, "sql", "--csv", "SELECT current_setting('threads') AS threads")
		if r.code != 0 {
			t.Fatalf("GOMAXPROCS=%s: %s", n, r)
		}
		if got, want := parseCSV(t, r.stdout), [][]string{{"threads"}, {n}}; !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("GOMAXPROCS=%s: DuckDB runs %v threads, want %s", n, got, n)
		}
	}
}
