package sopsql

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/sovm/sop-pme/duckdb/internal/ducktest"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
)

// counting wraps a Source and counts the bytes of the slices it hands out
// (proof material included: what the store sends).
type counting struct {
	src    *ducktest.Store
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
func openDB(t testing.TB, st *ducktest.Store, src verify.Source, opts ...Option) *DB {
	t.Helper()
	db, err := Open(context.Background(), src, st.Keys, append([]Option{withPoison()}, opts...)...)
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
	db := ducktest.OpenDuckDB(t)
	db.SetMaxOpenConns(1)
	ducktest.Exec(t, db, "SET TimeZone = 'UTC'")
	if threads > 0 {
		ducktest.Exec(t, db, fmt.Sprintf("SET threads = %d", threads))
	}
	return db
}

// nativeScan is DuckDB's own read of the stored file of id, given the DEK:
// the unverified path. It runs on a database from openNative.
func nativeScan(st *ducktest.Store, id storageid.ID) string {
	key := base64.StdEncoding.EncodeToString(st.Keys[id].Bytes())
	return fmt.Sprintf("read_parquet(%s, encryption_config = %s)", ducktest.SQLString(st.Path(id)), ducktest.FooterKeyValue(key))
}

// sopScan is sop_scan of id.
func sopScan(id storageid.ID, args ...string) string {
	return fmt.Sprintf("sop_scan(%s)", strings.Join(append([]string{ducktest.SQLString(id.String())}, args...), ", "))
}

// queryErr runs q and returns its rows as duckdb-go scans them.
func queryErr(db *sql.DB, q string) ([][]any, error) {
	_, rows, err := ducktest.Query(db, q)
	return rows, err
}

// compareRows checks that got equals want row by row, in order, floats by
// their bits (ducktest.SameBits).
func compareRows(t testing.TB, what string, want, got [][]any) {
	t.Helper()
	ducktest.CompareRows(t, what, nil, want, got, ducktest.SameBits)
}

// isDuckDBError reports whether err is an error of the DuckDB driver.
func isDuckDBError(err error) bool {
	var de *duckdb.Error
	return errors.As(err, &de)
}

// withPoison makes every scan overwrite the buffers it frees (bufferPool),
// so that a use of a batch after its release reads poison: every test DB
// has it (openDB).
func withPoison() Option {
	return func(c *config) error {
		c.poison = true
		return nil
	}
}
