package sopsql

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	oexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/sovm/sop-pme/duckdb/internal/ducktest"
	"github.com/sovm/sop-pme/writer"
)

// childQueryEnv names the query a child process of TestBadArguments runs.
const childQueryEnv = "SOPSQL_TEST_CHILD_QUERY"

// childResult is what a child process of TestBadArguments reports on its
// standard output, after childMarker.
type childResult struct {
	Err      string `json:"err"`
	Argument bool   `json:"argument"` // errors.Is(err, ErrArgument)
	Rows     int    `json:"rows"`
}

const childMarker = "CHILD-RESULT "

// runChildQuery runs q (with "ID" standing for an object of 100 rows in
// two row groups) in a DB of its own, and prints the result for the
// parent.
func runChildQuery(t *testing.T, q string) {
	st := ducktest.NewStore(t)
	rec := customers(100)
	defer rec.Release()
	id := st.Write(t, rec.Schema(), []arrow.RecordBatch{rec}, writer.WithRowGroupRows(50)).StorageID
	db := openDB(t, st, st)
	res, err := db.Query(context.Background(), strings.ReplaceAll(q, "ID", id.String()))
	var r childResult
	if err != nil {
		r.Err, r.Argument = err.Error(), errors.Is(err, ErrArgument)
	} else {
		r.Rows = len(res.Rows)
	}
	b, _ := json.Marshal(r)
	fmt.Printf("\n%s%s\n", childMarker, b)
}

// TestBadArguments: every argument of sop_scan and sop_verify, NULL and every
// type included, gives a result or an error, never a crash: each query
// runs in a child process (this test binary, run again), so that an abort
// fails the test instead of ending the suite. The errors about arguments
// match ErrArgument, and no message names a function the query did not.
func TestBadArguments(t *testing.T) {
	t.Parallel()
	if q, ok := os.LookupEnv(childQueryEnv); ok {
		runChildQuery(t, q)
		return
	}
	// arg: an ErrArgument whose text holds want; binder: DuckDB's error
	// about a call to a function with other arguments; rows: the rows.
	type want struct {
		arg, binder string
		rows        int
	}
	all := want{rows: 100}
	for _, c := range []struct {
		q    string
		want want
	}{
		// NULL, untyped and typed, where each argument goes.
		{"sop_scan(NULL)", want{arg: "storage_id is NULL"}},
		{"sop_scan(NULL::VARCHAR)", want{arg: "storage_id is NULL"}},
		{"sop_scan(storage_id := NULL)", want{arg: "storage_id is NULL"}},
		{"sop_verify(NULL)", want{arg: "storage_id is NULL"}},
		{"sop_verify(NULL::VARCHAR)", want{arg: "storage_id is NULL"}},
		{"system.main.sop_scan(NULL, NULL, NULL, NULL, NULL, NULL)", want{arg: "storage_id is NULL"}},
		{"system.main.sop_scan(NULL::VARCHAR, 'VARCHAR', NULL::VARCHAR, NULL::VARCHAR, NULL::VARCHAR, NULL::VARCHAR)", want{arg: "storage_id is NULL"}},
		{"system.main.sop_scan('ID', 'VARCHAR', NULL, NULL, NULL, NULL)", all},
		{"sop_scan('ID', row_groups := NULL)", all},
		{"sop_scan('ID', row_groups := NULL::INTEGER[])", all},
		{"sop_scan('ID', batch_size := NULL::BIGINT)", all},
		{"sop_scan('ID', row_groups := [NULL])", want{arg: `row_groups is of type "NULL"[]`}},
		{"sop_scan('ID', row_groups := [0, NULL])", want{arg: "row group NULL"}},
		// storage_id of every other type.
		{"sop_scan(1)", want{arg: "storage_id is of type INTEGER"}},
		{"sop_scan(1.5)", want{arg: "storage_id is of type DECIMAL(2,1)"}},
		{"sop_scan(1e300)", want{arg: "storage_id is of type DOUBLE"}},
		{"sop_scan(true)", want{arg: "storage_id is of type BOOLEAN"}},
		{"sop_scan(['ID'])", want{arg: "storage_id is of type VARCHAR[]"}},
		{"sop_scan(['ID']::VARCHAR[1])", want{arg: "storage_id is of type VARCHAR[1]"}},
		{"sop_scan({'id': 'ID'})", want{arg: "storage_id is of type STRUCT(id VARCHAR)"}},
		{"sop_scan(MAP {'id': 'ID'})", want{arg: "storage_id is of type MAP(VARCHAR, VARCHAR)"}},
		{"sop_scan('ID'::BLOB)", want{arg: "storage_id is of type BLOB"}},
		{"sop_scan(DATE '2026-01-01')", want{arg: "storage_id is of type DATE"}},
		{"sop_scan(TIMESTAMPTZ '2026-01-01 00:00:00+00')", want{arg: "storage_id is of type TIMESTAMP WITH TIME ZONE"}},
		{"sop_scan(INTERVAL 1 DAY)", want{arg: "storage_id is of type INTERVAL"}},
		{"sop_scan(uuid())", want{arg: "storage_id is of type UUID"}},
		{"sop_scan(1::UNION(a INTEGER))", want{arg: "storage_id is of type UNION(a INTEGER)"}},
		{"sop_scan('not an id')", want{arg: `storage_id "not an id"`}},
		{"sop_scan('ID', 'ID')", want{arg: "row_groups is of type VARCHAR"}},
		{"sop_scan(['ID', 'ID'])", want{arg: "storage_id is of type VARCHAR[]"}},
		// row_groups.
		{"sop_scan('ID', row_groups := 0)", want{arg: "row_groups is of type INTEGER"}},
		{"sop_scan('ID', row_groups := '[0]')", want{arg: "row_groups is of type VARCHAR"}},
		{"sop_scan('ID', row_groups := [])", want{arg: `row_groups is of type "NULL"[]`}},
		{"sop_scan('ID', row_groups := [0.5])", want{arg: "row_groups is of type DECIMAL(2,1)[]"}},
		{"sop_scan('ID', row_groups := ['0'])", want{arg: "row_groups is of type VARCHAR[]"}},
		{"sop_scan('ID', row_groups := [[0]])", want{arg: "row_groups is of type INTEGER[][]"}},
		{"sop_scan('ID', row_groups := {'a': 0})", want{arg: "row_groups is of type STRUCT(a INTEGER)"}},
		{"sop_scan('ID', row_groups := [2])", want{arg: "row group 2: the object has 2 row groups"}},
		{"sop_scan('ID', row_groups := [0, 0])", want{arg: "row group 0 given twice"}},
		{"sop_scan('ID', row_groups := [1]::UTINYINT[])", want{rows: 50}},
		{"sop_scan('ID', row_groups := [1, 0]::HUGEINT[2])", all},
		// batch_size.
		{"sop_scan('ID', batch_size := 'x')", want{arg: "batch_size is of type VARCHAR"}},
		{"sop_scan('ID', batch_size := [1])", want{arg: "batch_size is of type INTEGER[]"}},
		{"sop_scan('ID', batch_size := 1.5)", want{arg: "batch_size is of type DECIMAL(2,1)"}},
		{"sop_scan('ID', batch_size := true)", want{arg: "batch_size is of type BOOLEAN"}},
		{"sop_scan('ID', batch_size := -1)", want{arg: "batch_size -1"}},
		{"sop_scan('ID', batch_size := 99999999999999999999999)", want{arg: "batch_size 99999999999999999999999"}},
		{"sop_scan('ID', batch_size := 7::UBIGINT)", all},
		// Calls DuckDB's binder refuses: the messages name the function called.
		{"sop_scan()", want{binder: "Macro sop_scan() does not support the supplied arguments"}},
		{"sop_scan('ID', unknown := 1)", want{binder: "Macro sop_scan() does not support the supplied arguments"}},
		{"sop_scan('ID', [0], 7, 8)", want{binder: "Macro sop_scan() does not support the supplied arguments"}},
		{"sop_verify(1)", want{binder: "'sop_verify(INTEGER)'"}},
		{"sop_verify(['ID'])", want{binder: "'sop_verify(VARCHAR[])'"}},
		{"sop_verify('ID', 'ID')", want{binder: "'sop_verify(VARCHAR, VARCHAR)'"}},
		{"system.main.sop_scan(1, 2, 3, 4, 5, 6)", want{binder: "'sop_scan(INTEGER, INTEGER, INTEGER, INTEGER, INTEGER, INTEGER)'"}},
	} {
		q := "SELECT * FROM " + c.q
		t.Run(c.q, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := oexec.CommandContext(ctx, os.Args[0], "-test.run=^TestBadArguments$", "-test.count=1")
			cmd.Env = append(os.Environ(), childQueryEnv+"="+q)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: the child process failed: %v\n%s", q, err, lastLines(string(out), 8))
			}
			_, line, ok := strings.Cut(string(out), childMarker)
			var r childResult
			if !ok || json.Unmarshal([]byte(strings.SplitN(line, "\n", 2)[0]), &r) != nil {
				t.Fatalf("%s: no result from the child:\n%s", q, out)
			}
			switch {
			case c.want.arg != "":
				if !r.Argument || !strings.Contains(r.Err, c.want.arg) {
					t.Errorf("%s: error %q (ErrArgument: %v), want ErrArgument with %q", q, r.Err, r.Argument, c.want.arg)
				}
			case c.want.binder != "":
				if r.Argument || !strings.Contains(r.Err, "Binder Error") || !strings.Contains(r.Err, c.want.binder) {
					t.Errorf("%s: error %q, want a Binder Error with %q", q, r.Err, c.want.binder)
				}
			case r.Err != "" || r.Rows != c.want.rows:
				t.Errorf("%s: %d rows, error %q; want %d rows", q, r.Rows, r.Err, c.want.rows)
			}
			if strings.Contains(r.Err, "impl") {
				t.Errorf("%s: the error names an internal function: %s", q, r.Err)
			}
		})
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// TestLockDown: a query on a DB cannot reconfigure DuckDB, read or write a
// file of the host, attach a database, or install or load an extension;
// nothing reaches the directories it names, nor the extension repository
// (a listener on 127.0.0.1 that counts connections); sop_scan and
// sop_verify keep working.
func TestLockDown(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var dialed atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			dialed.Add(1)
			c.Close()
		}
	}()
	dir := t.TempDir()
	home := filepath.Join(dir, "home") // DuckDB's, where INSTALL would write
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	host := filepath.Join(dir, "host.csv")
	if err := os.WriteFile(host, []byte("secret\nhost file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	st := ducktest.NewStore(t)
	rec := customers(1000)
	defer rec.Release()
	id := st.Write(t, rec.Schema(), []arrow.RecordBatch{rec}).StorageID
	db := openDB(t, st, st, WithDSN(fmt.Sprintf("?home_directory=%s&custom_extension_repository=http://%s", home, ln.Addr())))
	path := func(name string) string { return ducktest.SQLString(filepath.Join(dir, name)) }
	for _, c := range []struct{ q, want string }{
		{"SET temp_directory = " + path("spill"), "the configuration has been locked"},
		{"SET GLOBAL temp_directory = " + path("spill"), "the configuration has been locked"},
		{"RESET temp_directory", "the configuration has been locked"},
		{"SET memory_limit = '16MB'", "the configuration has been locked"},
		{"PRAGMA memory_limit = '16MB'", "the configuration has been locked"},
		{"SET threads = 1", "the configuration has been locked"},
		{"SET enable_external_access = true", "the configuration has been locked"},
		{"SET lock_configuration = false", "the configuration has been locked"},
		{"RESET lock_configuration", "the configuration has been locked"},
		{"SET allowed_directories = [" + path("") + "]", "the configuration has been locked"},
		{"SET autoinstall_known_extensions = true", "the configuration has been locked"},
		{"SET profile_output = " + path("profile"), "the configuration has been locked"},
		{"SET log_query_path = " + path("log"), "the configuration has been locked"},
		{"COPY (SELECT * FROM " + sopScan(id) + ") TO " + path("out.csv"), "Permission Error"},
		{"COPY (SELECT * FROM " + sopScan(id) + ") TO " + path("out.parquet") + " (FORMAT parquet)", "Permission Error"},
		{"EXPORT DATABASE " + path("export"), "Permission Error"},
		{"SELECT * FROM read_csv(" + ducktest.SQLString(host) + ")", "Permission Error"},
		{"SELECT * FROM read_text(" + ducktest.SQLString(host) + ")", "Permission Error"},
		{"SELECT * FROM glob(" + path("*") + ")", "Permission Error"},
		{"ATTACH " + path("attached.db"), "Permission Error"},
		{"INSTALL httpfs", "Permission Error"},
		{"FORCE INSTALL json", "Permission Error"},
		{"LOAD httpfs", "Permission Error"},
		{"LOAD " + ducktest.SQLString(host), "Permission Error"},
		{"CREATE PERSISTENT SECRET s (TYPE http, BEARER_TOKEN 'x')", "Persistent secrets are disabled"},
	} {
		_, err := db.Query(context.Background(), c.q)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.q, err, c.want)
		}
	}
	if n := dialed.Load(); n != 0 {
		t.Errorf("the extension repository got %d connections", n)
	}
	if got := tree(t, dir); !slices.Equal(got, []string{"home", "host.csv"}) {
		t.Errorf("the queries left %v in the directory they named, want home (empty) and host.csv", got)
	}
	// The settings as the queries left them, and the functions working.
	res, err := db.Query(context.Background(), "SELECT current_setting('temp_directory'), current_setting('enable_external_access'), "+
		"current_setting('lock_configuration'), current_setting('autoinstall_known_extensions'), current_setting('autoload_known_extensions')")
	if err != nil {
		t.Fatal(err)
	}
	compareRows(t, "settings", [][]any{{"", false, true, false, false}}, res.Rows)
	res, err = db.Query(context.Background(), "SELECT (SELECT count(*) FROM "+sopScan(id)+"), (SELECT verified FROM sop_verify('"+id.String()+"'))")
	if err != nil {
		t.Fatal(err)
	}
	compareRows(t, "sop_scan and sop_verify", [][]any{{int64(1000), true}}, res.Rows)
}

// tree lists the names under dir, relative to it.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			rel, _ := filepath.Rel(dir, p)
			names = append(names, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestNoSpill: a query that outgrows DuckDB's memory limit fails with an
// out-of-memory error and writes nothing: not into DuckDB's default
// temporary directory (.tmp in the working directory, here a temporary
// one), not into one the query names.
func TestNoSpill(t *testing.T) {
	cwd := t.TempDir()
	t.Chdir(cwd)
	spill := t.TempDir()
	st := ducktest.NewStore(t)
	db := openDB(t, st, st, WithMemoryLimit(16<<20), WithThreads(1))
	sort := "SELECT count(*) FROM (SELECT i, hash(i) AS h FROM range(4000000) t(i) ORDER BY h)"
	_, err := db.Query(context.Background(), sort)
	if err == nil || !strings.Contains(err.Error(), "Out of Memory Error") {
		t.Errorf("%s: %v, want an Out of Memory Error", sort, err)
	}
	_, err = db.Query(context.Background(), "SET temp_directory = "+ducktest.SQLString(spill)+"; "+sort)
	if err == nil || !strings.Contains(err.Error(), "the configuration has been locked") {
		t.Errorf("SET temp_directory: %v, want it refused", err)
	}
	if got := append(tree(t, cwd), tree(t, spill)...); len(got) != 0 {
		t.Errorf("DuckDB wrote %v", got)
	}
	// The limit is DuckDB's, for every connection, and queries within it run.
	res, err := db.Query(context.Background(), "SELECT current_setting('memory_limit'), current_setting('threads'), count(*) FROM range(1000)")
	if err != nil {
		t.Fatal(err)
	}
	compareRows(t, "settings", [][]any{{"16.0 MiB", int64(1), int64(1000)}}, res.Rows)
}

// TestOptions: bad values of WithThreads and WithMemoryLimit are refused
// with ErrOption, as is LockDown without a connection.
func TestOptions(t *testing.T) {
	t.Parallel()
	st := ducktest.NewStore(t)
	for _, o := range []Option{WithThreads(0), WithThreads(-1), WithMemoryLimit(0), WithMemoryLimit(-5)} {
		if db, err := Open(context.Background(), st, st.Keys, o); !errors.Is(err, ErrOption) {
			if db != nil {
				db.Close()
			}
			t.Errorf("Open: %v, want ErrOption", err)
		}
	}
	if err := LockDown(context.Background(), nil); !errors.Is(err, ErrOption) {
		t.Errorf("LockDown(nil): %v, want ErrOption", err)
	}
}

// childLoggingEnv makes TestLoggingDoesNotAbort's child run its session.
const childLoggingEnv = "SOPSQL_TEST_CHILD_LOGGING"

// TestLoggingDoesNotAbort: CALL enable_logging with a file storage, which
// DuckDB 1.5.6 runs despite lock_configuration, makes every later
// statement fail (enable_external_access refuses the file), and would
// abort the process when a connection closes: the pool keeps its
// connections, Close returns an error instead, and the process lives (a
// child process, so that an abort fails the test). No log file is written.
func TestLoggingDoesNotAbort(t *testing.T) {
	if dir, ok := os.LookupEnv(childLoggingEnv); ok {
		st := ducktest.NewStore(t)
		db, err := Open(context.Background(), st, st.Keys)
		if err != nil {
			t.Fatal(err)
		}
		_, err = db.Query(context.Background(), "CALL enable_logging(storage := 'file', storage_path := "+ducktest.SQLString(filepath.Join(dir, "logs"))+")")
		fmt.Printf("\n%senable_logging: %v\n", childMarker, err)
		_, err = db.Query(context.Background(), "SELECT 42")
		fmt.Printf("\n%sSELECT 42: %v\n", childMarker, err)
		// Queries at once, on several connections of the pool, which
		// it must not close when they come back.
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() { db.Query(context.Background(), "SELECT 43") })
		}
		wg.Wait()
		fmt.Printf("\n%sClose: %v\n", childMarker, db.Close())
		return
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := oexec.CommandContext(ctx, os.Args[0], "-test.run=^TestLoggingDoesNotAbort$", "-test.count=1")
	cmd.Env = append(os.Environ(), childLoggingEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the child process failed: %v\n%s", err, lastLines(string(out), 12))
	}
	var lines []string
	for _, l := range strings.Split(string(out), "\n") {
		if r, ok := strings.CutPrefix(l, childMarker); ok {
			lines = append(lines, r)
		}
	}
	t.Logf("%q", lines)
	if len(lines) != 3 || !strings.Contains(lines[1], "Permission Error") || !strings.Contains(lines[2], "the database is left open") {
		t.Errorf("child: %q; want SELECT 42 to fail with a Permission Error, and Close to leave the database open", lines)
	}
	if got := tree(t, dir); len(got) != 0 {
		t.Errorf("DuckDB wrote %v", got)
	}
}
