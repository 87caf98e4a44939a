package sopsql

import (
	"context"
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/sovm/sop-pme/duckdb/internal/ducktest"
	"github.com/sovm/sop-pme/internal/testkit/testtables"
)

// TestInvalidUTF8: a VARCHAR value that is not UTF-8 fails the query with
// ErrData, as read_parquet fails on it; duckdb-go's checked assignment,
// which the value-by-value path used, wrote a NULL instead, silently.
func TestInvalidUTF8(t *testing.T) {
	t.Parallel()
	schema := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: testtables.FieldID(1)}}, nil)
	b := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).AppendValues([]string{"ok", "bad\xff", "a longer string, still fine"}, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	st := ducktest.NewStore(t)
	id := st.Write(t, schema, []arrow.RecordBatch{rec}).StorageID
	if _, err := queryErr(openNative(t, 1), "SELECT * FROM "+nativeScan(st, id)); err == nil {
		t.Fatal("read_parquet read the invalid string: the test assumes it refuses it")
	}
	res, err := openDB(t, st, st).Query(context.Background(), "SELECT s FROM "+sopScan(id))
	if !errors.Is(err, ErrData) {
		t.Fatalf("sop_scan: %v, %v; want ErrData", res, err)
	}
}
