package sopsql

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/duckdb/duckdb-go/v2"
	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/duckdb/internal/ducktest"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/writer"
)

// threadID is a scalar function tid(BIGINT) → BIGINT that returns the OS
// thread DuckDB evaluates it on, the first time on each thread after a
// pause, so that a second thread has time to take work.
type threadID struct {
	mu   sync.Mutex
	seen map[int]bool
}

func (f *threadID) Config() duckdb.ScalarFuncConfig {
	return duckdb.ScalarFuncConfig{
		InputTypeInfos: []duckdb.TypeInfo{typeInfo(duckdb.TYPE_BIGINT)},
		ResultTypeInfo: typeInfo(duckdb.TYPE_BIGINT),
		Volatile:       true,
	}
}

func (f *threadID) Executor() duckdb.ScalarFuncExecutor {
	return duckdb.ScalarFuncExecutor{RowExecutor: func([]driver.Value) (any, error) {
		tid := syscall.Gettid() // a cgo callback runs on DuckDB's thread
		f.mu.Lock()
		first := !f.seen[tid]
		f.seen[tid] = true
		f.mu.Unlock()
		if first {
			time.Sleep(50 * time.Millisecond)
		}
		return int64(tid), nil
	}}
}

// TestParallelRowGroups: with two DuckDB threads, sop_scan's rows come from
// two threads, and every row group is read exactly once (the threads share
// one queue of row groups); with one thread, from one.
func TestParallelRowGroups(t *testing.T) {
	t.Parallel()
	const rows, rgRows = 160_000, 20_000
	rec := customers(rows)
	defer rec.Release()
	st := ducktest.NewStore(t)
	id := st.Write(t, rec.Schema(), []arrow.RecordBatch{rec}, writer.WithRowGroupRows(rgRows)).StorageID
	for _, threads := range []int{1, 2} {
		t.Run(fmt.Sprintf("threads=%d", threads), func(t *testing.T) {
			db := openDB(t, st, st, WithThreads(threads))
			conn, err := db.SQL().Conn(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if err := duckdb.RegisterScalarUDF(conn, "tid", &threadID{seen: map[int]bool{}}); err != nil {
				t.Fatal(err)
			}
			got := ducktest.MustQuery(t, db.SQL(), "SELECT count(*), count(DISTINCT id), sum(id)::BIGINT, count(DISTINCT tid(id)) FROM "+sopScan(id))
			want := [][]any{{int64(rows), int64(rows), int64(rows * (rows - 1) / 2), int64(threads)}}
			compareRows(t, "rows and threads", want, got)
		})
	}
}

// TestArguments: bad arguments and unknown objects fail the bind with
// typed errors, through DB.Query.
func TestArguments(t *testing.T) {
	t.Parallel()
	st := ducktest.NewStore(t)
	rec := customers(100)
	defer rec.Release()
	id := st.Write(t, rec.Schema(), []arrow.RecordBatch{rec}, writer.WithRowGroupRows(50)).StorageID
	var unknown storageid.ID
	unknown[0] = 1
	noKey := st.Write(t, rec.Schema(), []arrow.RecordBatch{rec}).StorageID
	delete(st.Keys, noKey)
	db := openDB(t, st, st)
	for _, c := range []struct {
		args string
		want error
	}{
		{"'not an id'", ErrArgument},
		{"'" + id.String() + "', row_groups := [2]", ErrArgument},
		{"'" + id.String() + "', row_groups := [-1]", ErrArgument},
		{"'" + id.String() + "', row_groups := [0, 0]", ErrArgument},
		{"'" + id.String() + "', row_groups := []", ErrArgument},
		{"'" + id.String() + "', row_groups := ['a']", ErrArgument},
		{"'" + id.String() + "', batch_size := -1", ErrArgument},
		{"'" + unknown.String() + "'", blobs.ErrNotFound},
		{"'" + noKey.String() + "'", reader.ErrNoKey},
	} {
		q := "SELECT * FROM " + ScanFunction + "(" + c.args + ")"
		res, err := db.Query(context.Background(), q)
		if !errors.Is(err, c.want) || res != nil {
			t.Errorf("%s: %v, %v; want %v", q, res, err, c.want)
		}
	}
	// The good arguments, for contrast: row groups in the order given.
	res, err := db.Query(context.Background(), "SELECT min(id), max(id), count(*) FROM "+sopScan(id, "row_groups := [1]", "batch_size := 7"))
	if err != nil {
		t.Fatal(err)
	}
	compareRows(t, "row group 1", [][]any{{int64(50), int64(99), int64(50)}}, res.Rows)
	res, err = db.Query(context.Background(), "SELECT id FROM "+sopScan(id, "row_groups := [1, 0]")+" LIMIT 1")
	if err != nil {
		t.Fatal(err)
	}
	compareRows(t, "first row of row groups [1, 0]", [][]any{{int64(50)}}, res.Rows)
}

// TestEarlyStop: a query that stops reading before the end (LIMIT) gives
// the right rows, and every buffer the reader allocated for it is released
// once DuckDB has dropped the scan's state (the reader clears plaintext on
// release), as after a query that reads everything.
func TestEarlyStop(t *testing.T) {
	const rows = 100_000
	rec := customers(rows)
	defer rec.Release()
	st := ducktest.NewStore(t)
	id := st.Write(t, rec.Schema(), []arrow.RecordBatch{rec}, writer.WithRowGroupRows(rows/4)).StorageID
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	dbs := map[int]*DB{}
	for _, threads := range []int{1, 2} {
		dbs[threads] = openDB(t, st, st, WithReaderOptions(reader.WithAllocator(mem)), WithThreads(threads))
	}
	for _, c := range []struct {
		query string
		want  [][]any
	}{
		{"SELECT count(*) FROM " + sopScan(id), [][]any{{int64(rows)}}},
		{"SELECT id, customer FROM " + sopScan(id) + " LIMIT 2", [][]any{{int64(0), "customer-0000000"}, {int64(1), "customer-0000001"}}},
		{"SELECT id FROM " + sopScan(id) + " WHERE id = 60000", [][]any{{int64(60000)}}},
	} {
		for _, threads := range []int{1, 2} {
			res, err := dbs[threads].Query(context.Background(), c.query)
			if err != nil {
				t.Fatal(err)
			}
			compareRows(t, c.query, c.want, res.Rows)
			deadline := time.Now().Add(10 * time.Second)
			for mem.CurrentAlloc() != 0 && time.Now().Before(deadline) {
				runtime.GC()
				time.Sleep(10 * time.Millisecond)
			}
			if n := mem.CurrentAlloc(); n != 0 {
				t.Errorf("%s, %d threads: %d bytes of the reader still allocated after the query", c.query, threads, n)
			}
		}
	}
}

// TestEmptyObject: an object without rows has its columns and no row.
func TestEmptyObject(t *testing.T) {
	t.Parallel()
	rec := customers(0)
	defer rec.Release()
	st := ducktest.NewStore(t)
	id := st.Write(t, rec.Schema(), nil).StorageID
	db := openDB(t, st, st).SQL()
	compareRows(t, "DESCRIBE", [][]any{{"id", "BIGINT"}, {"customer", "VARCHAR"}},
		ducktest.MustQuery(t, db, "SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM "+sopScan(id)+")"))
	compareRows(t, "count", [][]any{{int64(0)}}, ducktest.MustQuery(t, db, "SELECT count(*) FROM "+sopScan(id)))
	compareRows(t, "rows", nil, ducktest.MustQuery(t, db, "SELECT * FROM "+sopScan(id)))
}
