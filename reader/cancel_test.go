package reader_test

import (
	"context"
	"errors"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/sovm/sop-pme/internal/testkit/hostile"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/writer"
)

// claimedCases returns the hostile cases whose pages claim 2^31−1 rows
// each.
func claimedCases(t *testing.T) []builtCase {
	var out []builtCase
	for _, c := range hostileCases() {
		if strings.HasPrefix(c.Name, "claimed-rows") {
			if c.err != nil {
				t.Fatal(c.err)
			}
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		t.Fatal("no claimed-rows case")
	}
	return out
}

// TestScanDeadline: a scan of the claimed-rows objects (about a kilobyte,
// 8.6 × 10^9 rows in RLE runs), with the values limit lifted, ends with
// context.DeadlineExceeded within a second of its context's deadline,
// having returned rows before it. Before scans checked their context
// between batches, such a scan ran on inside its row group for about two
// minutes, whatever the deadline.
func TestScanDeadline(t *testing.T) {
	const wait = 2 * time.Second
	for _, c := range claimedCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			st := hostile.NewStore()
			id := st.Put(c.obj, fuzzKey())
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			deadline, _ := ctx.Deadline()
			r, err := reader.Open(ctx, st, id, st)
			if err != nil {
				t.Fatal(err)
			}
			rr, err := r.Scan(ctx, reader.WithMaxValues(math.MaxInt64))
			if err != nil {
				t.Fatal(err)
			}
			defer rr.Release()
			var rows int64
			done := make(chan struct{})
			go func() {
				defer close(done)
				for rr.Next() {
					rows += rr.RecordBatch().NumRows()
				}
			}()
			select {
			case <-done:
			case <-time.After(wait + 30*time.Second):
				t.Fatalf("the scan still runs 30 s after its deadline")
			}
			late := time.Since(deadline)
			t.Logf("%d-byte object: %d rows, then %v, %v after the deadline", len(c.obj), rows, rr.Err(), late.Round(time.Millisecond))
			if !errors.Is(rr.Err(), context.DeadlineExceeded) {
				t.Errorf("scan ended with %v, want context.DeadlineExceeded", rr.Err())
			}
			if late > time.Second {
				t.Errorf("the scan returned %v after its deadline, more than 1 s", late)
			}
			if rows == 0 {
				t.Errorf("no rows before the deadline")
			}
		})
	}
}

// TestScanValueLimit: by default a scan refuses the claimed-rows objects
// before it decodes a row, with ErrValueLimit naming the limit;
// WithMaxValues sets the limit, and a scan may decode exactly its limit.
func TestScanValueLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range claimedCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			st := hostile.NewStore()
			id := st.Put(c.obj, fuzzKey())
			r, err := reader.Open(ctx, st, id, st)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err = r.Scan(ctx)
			t.Logf("default scan of %d bytes: %v in %v", len(c.obj), err, time.Since(start).Round(time.Microsecond))
			if !errors.Is(err, reader.ErrValueLimit) {
				t.Fatalf("default scan: %v, want ErrValueLimit", err)
			}
			if want := "the limit is 1073741824 values"; !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not name the limit (%q)", err, want)
			}
			if _, err := r.Scan(ctx, reader.WithMaxValues(hostile.ClaimedPages*hostile.ClaimedRows-1)); !errors.Is(err, reader.ErrValueLimit) {
				t.Errorf("limit one short: %v, want ErrValueLimit", err)
			}
			rr, err := r.Scan(ctx, reader.WithMaxValues(hostile.ClaimedPages*hostile.ClaimedRows))
			if err != nil {
				t.Fatalf("limit exactly the values: %v", err)
			}
			rr.Release()
		})
	}
}

// TestScanValueLimitRowGroups: the limit counts the values of every row
// group and projected column a scan reads, and stops the scan at the row
// group that would pass it, after the rows of those before.
func TestScanValueLimitRowGroups(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := newMemStore()
	rec := hostile.FlatRecord(1000)
	defer rec.Release()
	obj := writeObject(t, st, rec.Schema(), rec, writer.WithRowGroupRows(100))
	r, err := reader.Open(ctx, st, obj.StorageID, keys{obj.StorageID: obj.DEK})
	if err != nil {
		t.Fatal(err)
	}
	// Two columns of 100 values per row group: 450 values take two row
	// groups and stop at the third.
	rr, err := r.Scan(ctx, reader.WithFields(1, 3), reader.WithMaxValues(450))
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Release()
	var rows int64
	for rr.Next() {
		rows += rr.RecordBatch().NumRows()
	}
	if rows != 200 || !errors.Is(rr.Err(), reader.ErrValueLimit) {
		t.Errorf("%d rows, then %v; want 200 rows, then ErrValueLimit", rows, rr.Err())
	}
	rr, err = r.Scan(ctx, reader.WithFields(1, 3), reader.WithMaxValues(2000))
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Release()
	for rows = 0; rr.Next(); {
		rows += rr.RecordBatch().NumRows()
	}
	if rows != 1000 || rr.Err() != nil {
		t.Errorf("%d rows, then %v; want 1000 rows", rows, rr.Err())
	}
	if _, err := r.Scan(ctx, reader.WithMaxValues(0)); !errors.Is(err, reader.ErrOption) {
		t.Errorf("WithMaxValues(0): %v, want ErrOption", err)
	}
}

// TestConstantColumnReads: a constant column of 10M rows, in row groups of
// the default size or in one row group of one RLE run per page, reads back
// whole with the default options: the reader bounds the work a tiny object
// demands without refusing highly compressible pages.
func TestConstantColumnReads(t *testing.T) {
	t.Parallel()
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("-short: writes and reads 10M rows; CI runs it")
	}
	const n = 10_000_000
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64, Metadata: fid(1)},
		{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true, Metadata: fid(2)},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	ab := b.Field(0).(*array.Int64Builder)
	ab.Reserve(n)
	for range n {
		ab.UnsafeAppend(7)
	}
	b.Field(1).(*array.Int32Builder).AppendNulls(n)
	rec := b.NewRecordBatch()
	t.Cleanup(rec.Release) // after the parallel subtests
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		opts []writer.Option
	}{
		{"default row groups", nil},
		{"one row group", []writer.Option{writer.WithRowGroupRows(n), writer.WithRowGroupBytes(1 << 30)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := newMemStore()
			obj := writeObject(t, st, schema, rec, tc.opts...)
			r, err := reader.Open(ctx, st, obj.StorageID, keys{obj.StorageID: obj.DEK})
			if err != nil {
				t.Fatal(err)
			}
			rr, err := r.Scan(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer rr.Release()
			var rows, sevens, nulls int64
			for rr.Next() {
				batch := rr.RecordBatch()
				rows += batch.NumRows()
				a := batch.Column(0).(*array.Int64)
				for i := range a.Len() {
					if a.Value(i) == 7 {
						sevens++
					}
				}
				nulls += int64(batch.Column(1).NullN())
			}
			t.Logf("%d bytes, %d row groups: %d rows (%.0f values a byte), %v", obj.Size, r.NumRowGroups(), rows, 2*float64(rows)/float64(obj.Size), rr.Err())
			if rr.Err() != nil || rows != n || sevens != n || nulls != n {
				t.Errorf("%d rows, %d sevens, %d nulls, %v; want %d of each", rows, sevens, nulls, rr.Err(), n)
			}
		})
	}
}
