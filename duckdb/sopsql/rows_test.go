package sopsql

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/sovm/sop-pme/duckdb/internal/ducktest"
	"github.com/sovm/sop-pme/writer"
)

// TestQueryRows: QueryRows reads the rows Query returns, one at a time; a
// bad query fails QueryRows itself with a *QueryError.
func TestQueryRows(t *testing.T) {
	t.Parallel()
	st := ducktest.NewStore(t)
	rec := customers(5000)
	defer rec.Release()
	id := st.Write(t, rec.Schema(), []arrow.RecordBatch{rec}, writer.WithRowGroupRows(1000)).StorageID
	db := openDB(t, st, st)
	q := "SELECT * FROM " + sopScan(id) + " ORDER BY id"
	res, err := db.Query(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := db.QueryRows(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if fmt.Sprint(rows.Columns()) != fmt.Sprint(res.Columns) {
		t.Errorf("columns %v, want %v", rows.Columns(), res.Columns)
	}
	var got [][]any
	for rows.Next() {
		got = append(got, []any{rows.Row()[0], rows.Row()[1]})
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	compareRows(t, "QueryRows", res.Rows, got)
	if len(got) != 5000 {
		t.Errorf("%d rows, want 5000", len(got))
	}
	_, err = db.QueryRows(context.Background(), "SELECT * FROM "+ScanFunction+"('nope')")
	var qe *QueryError
	if !errors.As(err, &qe) || !errors.Is(err, ErrArgument) {
		t.Errorf("QueryRows of a bad argument: %v, want a *QueryError matching ErrArgument", err)
	}
}
