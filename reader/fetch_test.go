package reader_test

import (
	"context"
	"testing"

	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/writer"
)

// TestFetchAhead: every chunk a scan decodes was fetched, verified and
// opened ahead by the fetcher, never synchronously when arrow-go asked for
// it, whether the batch size is below or above the row groups' rows (a
// fetcher that predicted row-group order missed every chunk when batches
// spanned row groups, and every second chunk when they did not); adjacent
// projected chunks are fetched as one range.
func TestFetchAhead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema, rec := fiveColumns(t, 40000)
	defer rec.Release()
	st := newMemStore()
	obj := writeObject(t, st, schema, rec, writer.WithRowGroupRows(7000), writer.WithCodec(writer.Uncompressed))
	l := layoutOf(t, st.bytes(obj.StorageID), obj.DEK)
	for _, c := range []struct {
		name   string
		fields []int32
		batch  int64
		cols   []int // the leaf columns read
	}{
		{"all, batch above the row group", nil, 65536, []int{0, 1, 2, 3, 4}},
		{"all, batch below the row group", nil, 3000, []int{0, 1, 2, 3, 4}},
		{"two adjacent columns", []int32{2, 3}, 65536, []int{1, 2}},
		{"one column", []int32{4}, 1000, []int{3}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := reader.Open(ctx, st, obj.StorageID, keys{obj.StorageID: obj.DEK})
			if err != nil {
				t.Fatal(err)
			}
			opts := []reader.ScanOption{reader.WithBatchSize(c.batch)}
			if c.fields != nil {
				opts = append(opts, reader.WithFields(c.fields...))
			}
			slices0 := st.Slices.Load()
			before := r.Stats()
			rr, err := r.Scan(ctx, opts...)
			if err != nil {
				t.Fatal(err)
			}
			var rows int64
			for rr.Next() {
				rows += rr.RecordBatch().NumRows()
			}
			if err := rr.Err(); err != nil {
				t.Fatal(err)
			}
			rr.Release()
			if rows != 40000 {
				t.Fatalf("%d rows", rows)
			}
			if n := reader.SyncOpens(r); n != 0 {
				t.Errorf("%d chunks opened synchronously, want 0", n)
			}
			// One slice per row group: the projected chunks are adjacent.
			if got, want := st.Slices.Load()-slices0, int64(len(l.chunks)); got != want {
				t.Errorf("%d slices for %d row groups", got, want)
			}
			var chunkBytes int64
			for _, rg := range l.chunks {
				for _, col := range c.cols {
					chunkBytes += rg[col].Len
				}
			}
			after := r.Stats()
			if got := after.BytesVerified - before.BytesVerified; got != chunkBytes {
				t.Errorf("verified %d bytes, the projected chunks are %d", got, chunkBytes)
			}
			if got, bound := after.BytesFetched-before.BytesFetched, chunkBytes+int64(len(l.chunks))*(2*(16<<10)+1024); got > bound {
				t.Errorf("fetched %d bytes, more than the chunks plus 2 × 16 KiB and the proof per range (%d)", got, bound)
			}
		})
	}
}
