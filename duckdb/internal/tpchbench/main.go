// Command tpchbench is the TPC-H benchmark of issue 16 (make tpch; see
// bench/README.md). It imports TPC-H tables, generated as Parquet by
// tpchgen-cli, with sop-pme import --assign-field-ids into a fresh store
// and keyring in a temporary directory, and runs each query of a
// directory of q*.sql files through three engines, at each thread count,
// for a number of rounds:
//
//   - sop-pme sql, each table a --view over sop_scan (the verified read,
//     SOP-PME-1 11.10), GOMAXPROCS = threads for the whole process, which
//     gives DuckDB as many threads;
//   - DuckDB 1.5.6 on the Parquet files (read_parquet), SET threads;
//   - DuckDB 1.5.6 on the objects' files with their DEKs (read_parquet
//     with encryption_config): the unverified read a user could take
//     instead, a baseline only.
//
// Every measurement is a process of its own (this program's duck
// subcommand for DuckDB), timed from start to exit; the engines take turns
// within each round, in an order that rotates. A first round warms the
// page cache and is not counted; in it each DuckDB answer's text is also
// checked against DuckDB's own casts. Every answer is compared, row by row
// and column by column as text, with DuckDB's on the Parquet files: a
// difference is printed and makes the program exit 1. The report has
// every measurement, the medians and their ratios, and the peak RSS of
// each process.
//
// With -parts DIR (make tpch-tables, issue 17), the engines are tables
// instead: the files DIR/lineitem/lineitem.<part>.parquet (tpchgen-cli
// --parts) are imported as one table lineitem, an object a file (sop-pme
// import --table lineitem FILE...), into one store and keyring, and
// -data's lineitem.parquet, the same rows unsplit, as a table lineitem of
// one object into another; the queries run through sop-pme sql over each
// table (the view of its name) and through DuckDB read_parquet over the
// list of the split files, whose answers are the reference.
//
//	tpchbench -sop-pme BIN -data DIR -queries DIR [-parts DIR] [-only q1,q6] [-rounds 5] [-threads 1,2] [-out FILE]
package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	var err error
	if len(os.Args) > 1 && os.Args[1] == "duck" {
		err = runDuck(os.Args[2:])
	} else {
		err = runBench(os.Args[1:])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tpchbench:", err)
		os.Exit(1)
	}
}

// The tables the queries read, in the order they are imported.
var tableNames = []string{"customer", "orders", "lineitem", "part"}

type config struct {
	sop, data, queries, out, commit string
	sf                              string
	only                            []string
	threads                         []int
	rounds                          int
	parts                           string // -parts: the split files, and the tables mode
	self                            string // this program, for the duck subcommand
	work                            string // the temporary directory: store, KEK, keyring
}

// home is the directory of the store, KEK and keyring engine reads: the
// one-object table has its own.
func (c *config) home(engine string) string {
	if engine == engineOne {
		return filepath.Join(c.work, "one")
	}
	return c.work
}

func (c *config) store(engine string) string   { return filepath.Join(c.home(engine), "store") }
func (c *config) kek(engine string) string     { return filepath.Join(c.home(engine), "kek") }
func (c *config) keyring(engine string) string { return filepath.Join(c.home(engine), "keyring") }

// engines are the engines measured, in the order of the report's columns.
func (c *config) engines() []string {
	if c.parts != "" {
		return []string{enginePlain, engineTable, engineOne}
	}
	return []string{enginePlain, engineEnc, engineSop}
}

// plainData is the directory DuckDB's plaintext reads from.
func (c *config) plainData() string {
	if c.parts != "" {
		return c.parts
	}
	return c.data
}

func runBench(args []string) error {
	fs := flag.NewFlagSet("tpchbench", flag.ContinueOnError)
	var c config
	var only, threads string
	fs.StringVar(&c.sop, "sop-pme", "", "the sop-pme binary, built with -tags duckdb")
	fs.StringVar(&c.data, "data", "", "directory of customer.parquet, orders.parquet, lineitem.parquet, part.parquet")
	fs.StringVar(&c.queries, "queries", "", "directory of the queries, q*.sql")
	fs.StringVar(&c.parts, "parts", "", "directory of lineitem/lineitem.<part>.parquet: measure tables (see the package doc)")
	fs.StringVar(&only, "only", "", "comma-separated query names (default: every q*.sql)")
	fs.StringVar(&threads, "threads", "1,2", "comma-separated thread counts")
	fs.IntVar(&c.rounds, "rounds", 5, "rounds counted (after one warm-up round)")
	fs.StringVar(&c.sf, "sf", "?", "scale factor, for the report")
	fs.StringVar(&c.commit, "commit", "", "commit measured, for the report")
	fs.StringVar(&c.out, "out", "", "file for the report (default: standard output only)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if c.sop == "" || c.data == "" || c.queries == "" || c.rounds < 1 {
		return errors.New("need -sop-pme, -data, -queries and -rounds ≥ 1")
	}
	for _, s := range strings.Split(threads, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return fmt.Errorf("-threads %q: want positive integers", threads)
		}
		c.threads = append(c.threads, n)
	}
	if only != "" {
		c.only = strings.Split(only, ",")
	}
	var err error
	if c.self, err = os.Executable(); err != nil {
		return err
	}
	queries, err := loadQueries(c.queries, c.only)
	if err != nil {
		return err
	}
	if c.work, err = os.MkdirTemp("", "sop-pme-tpch"); err != nil {
		return err
	}
	defer os.RemoveAll(c.work)

	var out io.Writer = os.Stdout
	// The report is written to -out when it is whole (wrong answers
	// included): a run that fails midway leaves the last report as it was.
	var whole bytes.Buffer
	if c.out != "" {
		out = io.MultiWriter(os.Stdout, &whole)
	}
	open, err := openQuery(c.work)
	if err != nil {
		return err
	}
	rep := &report{w: out, cfg: &c, queries: append([]query{open}, queries...)}
	rep.header()
	var ids map[string]string
	if c.parts != "" {
		err = importLineitemTables(context.Background(), &c, rep)
	} else {
		ids, err = importTables(context.Background(), &c, rep)
	}
	if err != nil {
		return err
	}
	if err := rep.run(ids); err != nil {
		return err
	}
	err = rep.finish()
	if c.out != "" {
		if werr := os.WriteFile(c.out, whole.Bytes(), 0o644); werr != nil {
			return errors.Join(err, werr)
		}
	}
	return err
}

// A query is one q*.sql file, and the tables it names.
type query struct {
	name, file string
	tables     []string
}

// openQuery is the measurement of what every query pays before it reads a
// row: the process's start, the keyring (sop-pme, duckdb-enc), DuckDB's
// start, and the view over lineitem (whose footer sop_scan and
// read_parquet read and, for sop_scan, verify). Its answer is one number.
func openQuery(dir string) (query, error) {
	f := filepath.Join(dir, "open.sql")
	err := os.WriteFile(f, []byte("select 42 as answer\n"), 0o600)
	return query{name: "open", file: f, tables: []string{"lineitem"}}, err
}

func loadQueries(dir string, only []string) ([]query, error) {
	files, err := filepath.Glob(filepath.Join(dir, "q*.sql"))
	if err != nil {
		return nil, err
	}
	var out []query
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".sql")
		if len(only) > 0 && !slices.Contains(only, name) {
			continue
		}
		text, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		q := query{name: name, file: f}
		for _, t := range tableNames {
			if regexp.MustCompile(`(?i)\b` + t + `\b`).Match(text) {
				q.tables = append(q.tables, t)
			}
		}
		out = append(out, q)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no query q*.sql in %s (-only %s)", dir, strings.Join(only, ","))
	}
	// q1, q3, q6, q12, q14: by number.
	slices.SortFunc(out, func(a, b query) int { return queryNumber(a.name) - queryNumber(b.name) })
	return out, nil
}

func queryNumber(name string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(name, "q"))
	return n
}

// importResult is what sop-pme import --json prints.
type importResult struct {
	StorageID string `json:"storage_id"`
	Size      uint64 `json:"size"`
	Rows      int64  `json:"rows"`
	RowGroups int    `json:"row_groups"`
	Path      string `json:"path"` // sealed or reencoded
}

// importTables imports each table with sop-pme import --assign-field-ids,
// and returns their storage_ids by name.
func importTables(ctx context.Context, c *config, rep *report) (map[string]string, error) {
	ids := map[string]string{}
	for _, t := range tableNames {
		src := filepath.Join(c.data, t+".parquet")
		fi, err := os.Stat(src)
		if err != nil {
			return nil, err
		}
		cmd := exec.CommandContext(ctx, c.sop, "import", "--store", c.store(engineSop), "--kek", c.kek(engineSop), "--keyring", c.keyring(engineSop),
			"--assign-field-ids", "--json", "-q", src)
		m, err := measure(cmd, 0)
		if err != nil {
			return nil, fmt.Errorf("sop-pme import %s: %w", t, err)
		}
		var r importResult
		if err := json.Unmarshal(m.stdout, &r); err != nil {
			return nil, fmt.Errorf("sop-pme import %s: %w in %q", t, err, m.stdout)
		}
		ids[t] = r.StorageID
		rep.printf("import %-8s %11d rows %4d row groups  parquet %10d B  object %10d B  %-8s %6.2f s  %7.1f MB/s  peak RSS %4d MiB\n",
			t, r.Rows, r.RowGroups, fi.Size(), r.Size, r.Path, m.wall, float64(fi.Size())/m.wall/1e6, m.maxRSS>>20)
	}
	return ids, nil
}

// importLineitemTables imports the split files of c.parts as the table
// lineitem of engineTable's store, and c.data's lineitem.parquet as the
// table lineitem of engineOne's: one sop-pme import --table each.
func importLineitemTables(ctx context.Context, c *config, rep *report) error {
	split, err := partFiles(filepath.Join(c.parts, "lineitem"))
	if err != nil {
		return err
	}
	if split == nil {
		return fmt.Errorf("-parts %s: no directory lineitem", c.parts)
	}
	for _, e := range []string{engineTable, engineOne} {
		files := split
		if e == engineOne {
			files = []string{filepath.Join(c.data, "lineitem.parquet")}
		}
		var size int64
		for _, f := range files {
			fi, err := os.Stat(f)
			if err != nil {
				return err
			}
			size += fi.Size()
		}
		if err := os.MkdirAll(c.home(e), 0o700); err != nil {
			return err
		}
		args := []string{"import", "--store", c.store(e), "--kek", c.kek(e), "--keyring", c.keyring(e),
			"--table", "lineitem", "--json", "-q"}
		m, err := measure(exec.CommandContext(ctx, c.sop, append(args, files...)...), 0)
		if err != nil {
			return fmt.Errorf("sop-pme import --table lineitem (%s): %w", e, err)
		}
		var rs []importResult
		if err := json.Unmarshal(m.stdout, &rs); err != nil {
			return fmt.Errorf("sop-pme import --table lineitem (%s): %w in %q", e, err, m.stdout)
		}
		var rows, objSize int64
		var groups int
		for _, r := range rs {
			rows += r.Rows
			objSize += int64(r.Size)
			groups += r.RowGroups
		}
		rep.printf("import %-9s %2d objects %9d rows %4d row groups  parquet %10d B  objects %10d B  %6.2f s (cpu %6.2f s)  %7.1f MB/s  peak RSS %4d MiB\n",
			e, len(rs), rows, groups, size, objSize, m.wall, m.cpu, float64(size)/m.wall/1e6, m.maxRSS>>20)
	}
	return nil
}

// A measurement is one process: its wall time, peak RSS and output.
type measurement struct {
	wall   float64 // seconds from start to exit
	cpu    float64 // seconds of CPU, user and system, of every thread
	maxRSS int64   // bytes
	stdout []byte
}

// measure runs cmd with GOMAXPROCS=threads (unless 0) and returns its
// measurement; a failure carries its standard error.
func measure(cmd *exec.Cmd, threads int) (measurement, error) {
	cmd.Env = os.Environ()
	if threads > 0 {
		cmd.Env = append(cmd.Env, "GOMAXPROCS="+strconv.Itoa(threads))
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start).Seconds()
	if err != nil {
		return measurement{}, fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	m := measurement{wall: wall, stdout: stdout.Bytes()}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		m.maxRSS = ru.Maxrss << 10 // KiB on Linux
		m.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	}
	return m, nil
}

// An answer is a result as text: the header, then the rows.
type answer struct {
	header []string
	rows   [][]string
}

// runOne runs query q on engine at the thread count, and returns its
// measurement, the DuckDB process's own query time (0 for sop-pme) and the
// answer.
func (c *config) runOne(q query, engine string, threads int, ids map[string]string, check bool) (measurement, float64, answer, error) {
	var cmd *exec.Cmd
	switch engine {
	case engineSop, engineTable, engineOne:
		args := []string{"sql", "--store", c.store(engine), "--kek", c.kek(engine), "--keyring", c.keyring(engine), "--csv", "-q"}
		if engine == engineSop {
			for _, t := range q.tables {
				args = append(args, "--view", t+"="+ids[t])
			}
		}
		text, err := os.ReadFile(q.file)
		if err != nil {
			return measurement{}, 0, answer{}, err
		}
		cmd = exec.Command(c.sop, append(args, "--", string(text))...)
	default:
		args := []string{"duck", "-engine", engine, "-threads", strconv.Itoa(threads), "-query", q.file,
			"-data", c.plainData(), "-store", c.store(engine), "-kek", c.kek(engine), "-keyring", c.keyring(engine)}
		if check {
			args = append(args, "-check")
		}
		for _, t := range q.tables {
			if engine == engineEnc {
				args = append(args, "-table", t+"="+ids[t])
			} else {
				args = append(args, "-table", t)
			}
		}
		cmd = exec.Command(c.self, args...)
	}
	m, err := measure(cmd, threads)
	if err != nil {
		return m, 0, answer{}, fmt.Errorf("%s %s t%d: %w", engine, q.name, threads, err)
	}
	if engine == engineSop || engine == engineTable || engine == engineOne {
		recs, err := csv.NewReader(bytes.NewReader(m.stdout)).ReadAll()
		if err != nil || len(recs) == 0 {
			return m, 0, answer{}, fmt.Errorf("%s %s t%d: reading its CSV: %v", engine, q.name, threads, err)
		}
		return m, 0, answer{header: recs[0], rows: recs[1:]}, nil
	}
	var r duckResult
	if err := json.Unmarshal(m.stdout, &r); err != nil {
		return m, 0, answer{}, fmt.Errorf("%s %s t%d: %w", engine, q.name, threads, err)
	}
	return m, r.QuerySeconds, answer{header: r.Header, rows: r.Rows}, nil
}

// diff describes the first difference between got and want, or is "".
func diff(got, want answer) string {
	if !slices.Equal(got.header, want.header) {
		return fmt.Sprintf("columns %q, want %q", got.header, want.header)
	}
	for i := range max(len(got.rows), len(want.rows)) {
		switch {
		case i >= len(got.rows):
			return fmt.Sprintf("%d rows, want %d (first missing: %q)", len(got.rows), len(want.rows), want.rows[i])
		case i >= len(want.rows):
			return fmt.Sprintf("%d rows, want %d (first extra: %q)", len(got.rows), len(want.rows), got.rows[i])
		}
		for j := range max(len(got.rows[i]), len(want.rows[i])) {
			if j >= len(got.rows[i]) || j >= len(want.rows[i]) || got.rows[i][j] != want.rows[i][j] {
				return fmt.Sprintf("row %d: %q, want %q", i+1, got.rows[i], want.rows[i])
			}
		}
	}
	return ""
}

func machine() string {
	model := "?"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		if m := regexp.MustCompile(`(?m)^model name\s*:\s*(.*)$`).FindSubmatch(b); m != nil {
			model = string(m[1])
		}
	}
	return fmt.Sprintf("%s/%s, %d CPUs (%s)", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), model)
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
