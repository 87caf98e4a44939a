package writer_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/sovm/sop-pme/writer"
)

// TestManyColumnChunks: an object with 10 string columns and 25,000
// row groups (below pme.MaxRowGroups = 32,767) must be written. Its footer
// holds about 24 Thrift values per column chunk, 6 million in all, above
// the default 2^22 values of internal/thrift: the footer's limit must grow
// with its bytes.
func TestManyColumnChunks(t *testing.T) {
	// Not parallel: alone, before the parallel tests, it took 50 s under
	// -race; next to them, 160 s, longer than all of them together.
	if testing.Short() && os.Getenv("CI") == "" {
		t.Skip("-short, not under CI: 160,000 column chunks")
	}
	const cols, rows = 10, 25000
	fields := make([]arrow.Field, cols)
	for i := range fields {
		fields[i] = arrow.Field{Name: fmt.Sprintf("c%d", i), Type: arrow.BinaryTypes.String, Nullable: true, Metadata: fieldID(i + 1)}
	}
	schema := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for r := range rows {
		for c := range cols {
			b.Field(c).(*array.StringBuilder).Append(fmt.Sprint(r * c))
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	st := newMemStore()
	w, err := writer.New(context.Background(), st, schema, writer.WithRowGroupRows(1), writer.WithCodec(writer.Uncompressed))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Close(context.Background()); err != nil {
		t.Fatalf("%d row groups of %d columns: %v", rows, cols, err)
	}
}

// TestErrClosedAfterAbort: ErrClosed is documented to report "Write or
// Close after Close, or after a failure that aborted the object".
func TestErrClosedAfterAbort(t *testing.T) {
	t.Parallel()
	schema := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64, Metadata: fieldID(1)}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).Append(1)
	rec := b.NewRecordBatch()
	defer rec.Release()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := writer.New(ctx, newMemStore(), schema)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := w.Write(rec); err == nil {
		t.Fatal("Write after cancel succeeded")
	}
	if err := w.Write(rec); !errors.Is(err, writer.ErrClosed) {
		t.Errorf("Write after an aborting failure: %v, want ErrClosed", err)
	}
	if _, err := w.Close(context.Background()); !errors.Is(err, writer.ErrClosed) {
		t.Errorf("Close after an aborting failure: %v, want ErrClosed", err)
	}
}
