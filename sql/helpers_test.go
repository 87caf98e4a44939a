package sopsql

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/duckdb/duckdb-go/v2"
	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
	"github.com/sovm/sop-pme/writer"
)

// keys is a KeyResolver over a map.
type keys map[storageid.ID]pme.DEK

func (k keys) ResolveDEK(_ context.Context, id storageid.ID) (pme.DEK, error) {
	dek, ok := k[id]
	if !ok {
		return pme.DEK{}, fmt.Errorf("%w: %s", reader.ErrNoKey, id)
	}
	return dek, nil
}

// store is the library's directory store, which keeps object id as
// <dir>/<hex id>.data: DuckDB's read_parquet gets that path, as a user
// handing DuckDB the file and the DEK would.
type store struct {
	*blobs.Dir
	dir  string
	keys keys
}

func newStore(t testing.TB) *store {
	t.Helper()
	dir := t.TempDir()
	d, err := blobs.CreateDir(dir)
	if err != nil {
		t.Fatalf("blobs.CreateDir: %v", err)
	}
	return &store{Dir: d, dir: dir, keys: keys{}}
}

func (s *store) path(id storageid.ID) string { return filepath.Join(s.dir, id.String()+".data") }

// write writes recs as one object and records its DEK.
func (s *store) write(t testing.TB, schema *arrow.Schema, recs []arrow.RecordBatch, opts ...writer.Option) writer.Object {
	t.Helper()
	w, err := writer.New(context.Background(), s, schema, opts...)
	if err != nil {
		t.Fatalf("writer.New: %v", err)
	}
	for _, rec := range recs {
		if err := w.Write(rec); err != nil {
			t.Fatalf("Write: %v", err)
		}
	}
	obj, err := w.Close(context.Background())
	if err != nil {
		t.Fatalf("Close: %v", err)
	}
	s.keys[obj.StorageID] = obj.DEK
	return obj
}

// importBytes imports data as an object whose DEK is dek.
func (s *store) importBytes(t testing.TB, data []byte, dek pme.DEK) storageid.ID {
	t.Helper()
	p, err := s.Create(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Abort()
	if _, err := p.Write(data); err != nil {
		t.Fatal(err)
	}
	id, err := p.Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s.keys[id] = dek
	return id
}

// bytes returns the stored bytes of id, read from the store's file: what a
// user handing DuckDB the file would read, verified by nobody.
func (s *store) bytes(t testing.TB, id storageid.ID) []byte {
	t.Helper()
	data, err := os.ReadFile(s.path(id))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// counting wraps a Source and counts the bytes of the slices it hands out
// (proof material included: what the store sends).
type counting struct {
	src    *store
	bytes  atomic.Int64
	slices atomic.Int64
}

func (c *counting) Slice(ctx context.Context, id storageid.ID, off, n uint64) (io.ReadCloser, error) {
	rc, err := c.src.Slice(ctx, id, off, n)
	if err != nil {
		return nil, err
	}
	c.slices.Add(1)
	return countingRC{rc, &c.bytes}, nil
}

func (c *counting) reset() { c.bytes.Store(0); c.slices.Store(0) }

type countingRC struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c countingRC) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// openDB opens a DB that reads through src with the DEKs of st.
func openDB(t testing.TB, st *store, src verify.Source, opts ...Option) *DB {
	t.Helper()
	db, err := Open(context.Background(), src, st.keys, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// openNative opens a plain DuckDB database, with one connection (so that a
// SET applies to every query), for DuckDB's own read of the stored files
// (nativeScan): a DB refuses that read, as it refuses every file access
// from a query (LockDown).
func openNative(t testing.TB, threads int) *sql.DB {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	exec(t, db, "SET TimeZone = 'UTC'")
	if threads > 0 {
		exec(t, db, fmt.Sprintf("SET threads = %d", threads))
	}
	return db
}

// nativeScan is DuckDB's own read of the stored file of id, given the DEK:
// the unverified path. It runs on a database from openNative.
func nativeScan(st *store, id storageid.ID) string {
	key := base64.StdEncoding.EncodeToString(st.keys[id].Bytes())
	return fmt.Sprintf("read_parquet(%s, encryption_config = {footer_key_value: from_base64('%s')})", sqlString(st.path(id)), key)
}

// sopScan is sop_scan of id.
func sopScan(id storageid.ID, args ...string) string {
	return fmt.Sprintf("sop_scan(%s)", strings.Join(append([]string{sqlString(id.String())}, args...), ", "))
}

func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// query runs q and returns its rows as duckdb-go scans them.
func query(t testing.TB, db *sql.DB, q string) [][]any {
	t.Helper()
	rows, err := queryErr(db, q)
	if err != nil {
		t.Fatalf("%s\n%v", q, err)
	}
	return rows
}

func queryErr(db *sql.DB, q string) ([][]any, error) {
	rows, err := db.Query(q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out [][]any
	for rows.Next() {
		row := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range row {
			ptrs[i] = &row[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		out = append(out, row)
	}
	return out, rows.Err()
}

// exec runs statements on db.
func exec(t testing.TB, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s\n%v", q, err)
		}
	}
}

// sameValue reports whether two values as duckdb-go scans them are equal:
// floats by bits (NaN equals NaN, -0 differs from 0), instants with Equal,
// nested values element by element.
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case float32:
		y, ok := b.(float32)
		return ok && math.Float32bits(x) == math.Float32bits(y)
	case float64:
		y, ok := b.(float64)
		return ok && math.Float64bits(x) == math.Float64bits(y)
	case []byte:
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y)
	case *big.Int:
		y, ok := b.(*big.Int)
		return ok && x.Cmp(y) == 0
	case duckdb.Decimal:
		y, ok := b.(duckdb.Decimal)
		return ok && x.Width == y.Width && x.Scale == y.Scale && x.Value.Cmp(y.Value) == 0
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameValue(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !sameValue(v, w) {
				return false
			}
		}
		return true
	case duckdb.OrderedMap:
		y, ok := b.(duckdb.OrderedMap)
		if !ok || x.Len() != y.Len() {
			return false
		}
		return sameValue(x.Keys(), y.Keys()) && sameValue(x.Values(), y.Values())
	}
	return a == b
}

// show formats a value for a failure message.
func show(v any) string {
	if t, ok := v.(time.Time); ok {
		return t.UTC().Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("%#v", v)
}

// compareRows checks that got equals want row by row, in order.
func compareRows(t testing.TB, what string, want, got [][]any) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d rows, want %d", what, len(got), len(want))
	}
	bad := 0
	for i := range want {
		if len(got[i]) != len(want[i]) {
			t.Fatalf("%s: row %d has %d columns, want %d", what, i, len(got[i]), len(want[i]))
		}
		for j := range want[i] {
			if !sameValue(want[i][j], got[i][j]) {
				if bad++; bad <= 10 {
					t.Errorf("%s: row %d column %d: got %s, want %s", what, i, j, show(got[i][j]), show(want[i][j]))
				}
			}
		}
	}
	if bad > 10 {
		t.Errorf("%s: %d values differ in all", what, bad)
	}
}

// isDuckDBError reports whether err is an error of the DuckDB driver.
func isDuckDBError(err error) bool {
	var de *duckdb.Error
	return errors.As(err, &de)
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
