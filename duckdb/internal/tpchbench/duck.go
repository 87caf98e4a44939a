package main

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/sovm/sop-pme/duckdb/internal/ducktest"
	"github.com/sovm/sop-pme/keyring"
	"github.com/sovm/sop-pme/storageid"
)

// The engines a measurement runs on.
const (
	enginePlain = "duckdb-plain" // DuckDB's read_parquet on the generator's Parquet files
	engineEnc   = "duckdb-enc"   // DuckDB's read_parquet on the objects' files, given their DEKs
	engineSop   = "sop-pme"      // sop-pme sql: sop_scan, the verified reader

	// With -parts (make tpch-tables), sop-pme sql over a table of the
	// store's catalog, the view of its name.
	engineTable = "sop-table" // the table of the split files, one object a file
	engineOne   = "sop-one"   // the table of the unsplit file, one object
)

// duckResult is what the duck subcommand prints: its timings and the
// answer, every value as DuckDB's CAST(... AS VARCHAR) writes it.
type duckResult struct {
	OpenSeconds  float64    `json:"open_s"`  // sql.Open, SET threads and the views (DuckDB reads the footers)
	QuerySeconds float64    `json:"query_s"` // the query, every row fetched
	Header       []string   `json:"header"`
	Rows         [][]string `json:"rows"`
}

// runDuck is the duck subcommand: one query on DuckDB alone, in a process
// of its own so that each measurement starts cold in memory and DuckDB's
// threads are the only ones it runs. With -engine duckdb-enc the views
// read the objects' files in the store, with the DEKs taken from the
// keyring: a baseline for the benchmark only (it is the unverified read
// SOP-PME-1 11.10 forbids a reader to offer), never a path of the library.
func runDuck(args []string) error {
	fs := flag.NewFlagSet("duck", flag.ContinueOnError)
	engine := fs.String("engine", enginePlain, "duckdb-plain or duckdb-enc")
	threads := fs.Int("threads", 1, "DuckDB threads")
	queryFile := fs.String("query", "", "file holding the query")
	data := fs.String("data", "", "directory of the Parquet files (duckdb-plain)")
	store := fs.String("store", "", "directory store of the objects (duckdb-enc)")
	kek := fs.String("kek", "", "KEK file (duckdb-enc)")
	ring := fs.String("keyring", "", "keyring file (duckdb-enc)")
	check := fs.Bool("check", false, "also check the answer's text against DuckDB's casts (runs the query twice)")
	var tables tableFlag
	fs.Var(&tables, "table", "NAME=STORAGE_ID (duckdb-enc) or NAME (duckdb-plain), repeatable")
	if err := fs.Parse(args); err != nil {
		return err
	}
	q, err := os.ReadFile(*queryFile)
	if err != nil {
		return err
	}
	ctx := context.Background()
	start := time.Now()
	var sources map[string]string
	switch *engine {
	case enginePlain:
		if sources, err = plainSources(*data, tables); err != nil {
			return err
		}
	case engineEnc:
		if sources, err = encSources(ctx, *store, *kek, *ring, tables); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown engine %q", *engine)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	stmts := []string{fmt.Sprintf("SET threads = %d", *threads)}
	for _, name := range slices.Sorted(maps.Keys(sources)) {
		stmts = append(stmts, "CREATE VIEW "+name+" AS SELECT * FROM "+sources[name])
	}
	for _, s := range stmts {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", strings.SplitN(s, " FROM ", 2)[0], err)
		}
	}
	res := duckResult{OpenSeconds: time.Since(start).Seconds()}
	t0 := time.Now()
	res.Header, res.Rows, err = queryText(ctx, conn, string(q))
	res.QuerySeconds = time.Since(t0).Seconds()
	if err != nil {
		return err
	}
	if *check {
		if err := checkText(ctx, conn, string(q), res.Rows); err != nil {
			return err
		}
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// plainSources are read_parquet of the generator's files: dir/NAME.parquet,
// or, if dir/NAME is a directory (tpchgen-cli --parts), the list of its
// files dir/NAME/NAME.<part>.parquet.
func plainSources(dir string, tables tableFlag) (map[string]string, error) {
	out := map[string]string{}
	for _, t := range tables {
		files, err := partFiles(filepath.Join(dir, t.name))
		if err != nil {
			return nil, err
		}
		if files == nil {
			out[t.name] = "read_parquet(" + ducktest.SQLString(filepath.Join(dir, t.name+".parquet")) + ")"
			continue
		}
		quoted := make([]string, len(files))
		for i, f := range files {
			quoted[i] = ducktest.SQLString(f)
		}
		out[t.name] = "read_parquet([" + strings.Join(quoted, ", ") + "])"
	}
	return out, nil
}

// partFiles lists the Parquet files of the directory dir, by part number
// (NAME.<part>.parquet, as tpchgen-cli --parts names them), or returns nil
// if dir is not a directory.
func partFiles(dir string) ([]string, error) {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, nil
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.parquet"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no .parquet file in %s", dir)
	}
	part := func(f string) int {
		f = strings.TrimSuffix(filepath.Base(f), ".parquet")
		n, _ := strconv.Atoi(f[strings.LastIndexByte(f, '.')+1:])
		return n
	}
	slices.SortFunc(files, func(a, b string) int { return part(a) - part(b) })
	return files, nil
}

// encSources are read_parquet of the objects' files in the directory store
// (blobs.Dir keeps object ID as ID.data), each with its DEK from the
// keyring. The DEK goes into the SQL text of this process only: it is not
// printed, logged or passed on a command line.
func encSources(ctx context.Context, store, kekFile, ringFile string, tables tableFlag) (map[string]string, error) {
	kek, err := keyring.LoadKEKFile(kekFile)
	if err != nil {
		return nil, err
	}
	ring, err := keyring.Open(ctx, ringFile, kek, keyring.WithReadOnly())
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, t := range tables {
		id, err := storageid.Parse(t.id)
		if err != nil {
			return nil, fmt.Errorf("table %s: %w", t.name, err)
		}
		dek, err := ring.ResolveDEK(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("table %s: %w", t.name, err)
		}
		key := base64.StdEncoding.EncodeToString(dek.Bytes())
		path := filepath.Join(store, id.String()+".data")
		out[t.name] = "read_parquet(" + ducktest.SQLString(path) + ", encryption_config = " + ducktest.FooterKeyValue(key) + ")"
	}
	return out, nil
}

// queryText runs q and returns its column names and rows, each value as
// DuckDB casts it to VARCHAR (the text sop-pme sql --csv prints).
func queryText(ctx context.Context, conn *sql.Conn, q string) ([]string, [][]string, error) {
	rows, err := conn.QueryContext(ctx, q)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	cols, err := rows.ColumnTypes()
	if err != nil {
		return nil, nil, err
	}
	header := make([]string, len(cols))
	for i, c := range cols {
		header[i] = c.Name()
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var out [][]string
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, nil, err
		}
		row := make([]string, len(cols))
		for i, v := range vals {
			if row[i], err = valueText(v, cols[i].DatabaseTypeName()); err != nil {
				return nil, nil, fmt.Errorf("column %s: %w", header[i], err)
			}
		}
		out = append(out, row)
	}
	return header, out, rows.Err()
}

// checkText runs q again with every column cast to VARCHAR by DuckDB, and
// returns an error unless that is the text valueText gave: the renderer
// is checked, not trusted.
func checkText(ctx context.Context, conn *sql.Conn, q string, got [][]string) error {
	rows, err := conn.QueryContext(ctx, "SELECT COLUMNS(*)::VARCHAR FROM ("+q+")")
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	n := 0
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		if n >= len(got) {
			return fmt.Errorf("text check: DuckDB's cast gives more than %d rows", len(got))
		}
		for i, v := range vals {
			if v.String != got[n][i] { // NULL is "" in both
				return fmt.Errorf("text check: row %d column %d: rendered %q, DuckDB casts %q", n, i, got[n][i], v.String)
			}
		}
		n++
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if n != len(got) {
		return fmt.Errorf("text check: DuckDB's cast gives %d rows, the query %d", n, len(got))
	}
	return nil
}

// errType is a value of a type the TPC-H answers do not have.
var errType = errors.New("a type valueText does not render")

// valueText renders v as DuckDB's CAST(v AS VARCHAR) does, for the types
// of the TPC-H answers; NULL is "" (as sop-pme sql --csv writes it).
func valueText(v any, dbType string) (string, error) {
	switch v := v.(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	case int32:
		return strconv.FormatInt(int64(v), 10), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case *big.Int:
		return v.String(), nil
	case float64:
		return doubleText(v), nil
	case duckdb.Decimal:
		return decimalString(v), nil
	case time.Time:
		if dbType == "DATE" {
			return v.Format(time.DateOnly), nil
		}
	}
	return "", fmt.Errorf("%w: %T (%s)", errType, v, dbType)
}

// doubleText is DuckDB's text of a finite DOUBLE: the shortest digits that
// read back as f, positional with at least one fractional digit, or in
// Go's exponent form for exponents below -4 or from 16 up.
func doubleText(f float64) string {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return strings.ToLower(strconv.FormatFloat(f, 'g', -1, 64))
	}
	sci := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX: the exponent as DuckDB sees it
	if exp, _ := strconv.Atoi(sci[strings.LastIndexByte(sci, 'e')+1:]); f != 0 && (exp < -4 || exp >= 16) {
		return sci
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// decimalString writes d's unscaled value with its scale's digits after
// the point.
func decimalString(d duckdb.Decimal) string {
	if d.Scale == 0 {
		return d.Value.String()
	}
	r := new(big.Rat).SetFrac(d.Value, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d.Scale)), nil))
	s := r.FloatString(int(d.Scale))
	if d.Width == d.Scale { // DuckDB writes no integer digit then
		s = strings.Replace(s, "0.", ".", 1)
	}
	return s
}

// A tableFlag is the repeated -table flag: NAME or NAME=STORAGE_ID.
type tableFlag []struct{ name, id string }

func (t *tableFlag) String() string { return fmt.Sprint(*t) }

func (t *tableFlag) Set(s string) error {
	name, id, _ := strings.Cut(s, "=")
	*t = append(*t, struct{ name, id string }{name, id})
	return nil
}
