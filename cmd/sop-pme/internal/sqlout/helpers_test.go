//go:build duckdb

package sqlout

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/sovm/sop-pme/duckdb/sopsql"
	"github.com/sovm/sop-pme/internal/testkit/hostile"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/writer"
)

// newDB opens a sopsql.DB over a fresh in-memory store that resolves the
// DEK of every object put into it (put), and returns both.
func newDB(t *testing.T) (*sopsql.DB, *hostile.Store) {
	t.Helper()
	st := hostile.NewStore()
	db, err := sopsql.Open(context.Background(), st, st)
	if err != nil {
		t.Fatalf("sopsql.Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db, st
}

// put writes rec as one object into st, and returns its storage_id.
func put(t *testing.T, st *hostile.Store, rec arrow.RecordBatch, opts ...writer.Option) storageid.ID {
	t.Helper()
	data, dek, err := hostile.Write(rec, opts...)
	if err != nil {
		t.Fatalf("writing an object: %v", err)
	}
	return st.Put(data, dek)
}

// query runs q on db and returns its whole result.
func query(t *testing.T, db *sopsql.DB, q string) *sopsql.Result {
	t.Helper()
	res, err := db.Query(context.Background(), q)
	if err != nil {
		t.Fatalf("%s\n%v", q, err)
	}
	return res
}

// sopScan is sop_scan of id.
func sopScan(id storageid.ID) string { return sopsql.ScanFunction + "('" + id.String() + "')" }

// quoteIdent quotes s as a DuckDB identifier.
func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
