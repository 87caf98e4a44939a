package reader_test

import (
	"context"
	"io"
	"slices"
	"sync"
	"testing"

	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
	"github.com/sovm/sop-pme/writer"
)

// planningStore is a memStore that is a verify.Planner: it records the
// plans it is given and the slices asked for after the first plan.
type planningStore struct {
	*memStore
	mu     sync.Mutex
	plans  [][]verify.Range
	ctxs   []context.Context
	slices []verify.Range
}

func (s *planningStore) Plan(ctx context.Context, id storageid.ID, ranges []verify.Range) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.plans = append(s.plans, slices.Clone(ranges))
	s.ctxs = append(s.ctxs, ctx)
}

func (s *planningStore) Slice(ctx context.Context, id storageid.ID, off, n uint64) (io.ReadCloser, error) {
	s.mu.Lock()
	if len(s.plans) > 0 {
		s.slices = append(s.slices, verify.Range{Off: off, N: n})
	}
	s.mu.Unlock()
	return s.memStore.Slice(ctx, id, off, n)
}

// TestScanPlans: a scan tells a Source that is a verify.Planner, once,
// the ranges it will read, in order, and then reads exactly those (in
// that order when sequential); the plan's context ends with the scan.
func TestScanPlans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema, rec := fiveColumns(t, 40000)
	defer rec.Release()
	mem := newMemStore()
	obj := writeObject(t, mem, schema, rec, writer.WithRowGroupRows(7000), writer.WithCodec(writer.Uncompressed))
	for _, par := range []int{1, 2} {
		for _, fields := range [][]int32{nil, {2, 3}, {4}, {1, 5}} {
			st := &planningStore{memStore: mem}
			r, err := reader.Open(ctx, st, obj.StorageID, keys{obj.StorageID: obj.DEK})
			if err != nil {
				t.Fatal(err)
			}
			opts := []reader.ScanOption{reader.WithParallelism(par)}
			if fields != nil {
				opts = append(opts, reader.WithFields(fields...))
			}
			rr, err := r.Scan(ctx, opts...)
			if err != nil {
				t.Fatal(err)
			}
			var rows int64
			for rr.Next() {
				rows += rr.RecordBatch().NumRows()
			}
			if err := rr.Err(); err != nil || rows != 40000 {
				t.Fatalf("parallelism %d, fields %v: %d rows, %v", par, fields, rows, err)
			}
			rr.Release()
			if len(st.plans) != 1 {
				t.Fatalf("parallelism %d, fields %v: %d plans, want 1", par, fields, len(st.plans))
			}
			if st.ctxs[0].Err() == nil {
				t.Errorf("parallelism %d, fields %v: the plan's context outlived the scan", par, fields)
			}
			plan, got := st.plans[0], st.slices
			if len(plan) == 0 {
				t.Fatalf("parallelism %d, fields %v: empty plan", par, fields)
			}
			if par > 1 {
				cmp := func(a, b verify.Range) int { return int(min(max(int64(a.Off)-int64(b.Off), -1), 1)) }
				plan, got = slices.Clone(plan), slices.Clone(got)
				slices.SortFunc(plan, cmp)
				slices.SortFunc(got, cmp)
			}
			if !slices.Equal(plan, got) {
				t.Errorf("parallelism %d, fields %v: planned %v, read %v", par, fields, st.plans[0], st.slices)
			}
		}
	}
}
