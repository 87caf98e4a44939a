package reader_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/writer"
)

// countingAlloc counts the bytes of the buffers its allocator makes (a
// Reallocate within the buffer's capacity makes none).
type countingAlloc struct {
	*memory.CheckedAllocator
	bytes atomic.Int64
}

func (c *countingAlloc) Allocate(n int) []byte {
	c.bytes.Add(int64(n))
	return c.CheckedAllocator.Allocate(n)
}

func (c *countingAlloc) Reallocate(n int, b []byte) []byte {
	if n > cap(b) {
		c.bytes.Add(int64(n))
	}
	return c.CheckedAllocator.Reallocate(n, b)
}

// TestScanReusesBuffers: a scan whose caller releases each batch takes
// the buffers of the next batches from those (of one float64 column over
// 40 row groups: under half the bytes the batches hold, where it took
// seven times as many from the allocator before), sequential or parallel,
// and
// every buffer goes back to the allocator once the scan is released.
func TestScanReusesBuffers(t *testing.T) {
	t.Parallel()
	schema, rec := fiveColumns(t, 40000)
	defer rec.Release()
	st := newMemStore()
	obj := writeObject(t, st, schema, rec, writer.WithRowGroupRows(1000))
	for _, par := range []int{1, 3} {
		mem := &countingAlloc{CheckedAllocator: memory.NewCheckedAllocator(memory.DefaultAllocator)}
		r, err := reader.Open(context.Background(), st, obj.StorageID, keys{obj.StorageID: obj.DEK}, reader.WithAllocator(mem))
		if err != nil {
			t.Fatal(err)
		}
		rr, err := r.Scan(context.Background(), reader.WithFields(2), reader.WithParallelism(par))
		if err != nil {
			t.Fatal(err)
		}
		var values int64
		for rr.Next() {
			values += 8 * rr.RecordBatch().NumRows()
		}
		if err := rr.Err(); err != nil {
			t.Fatal(err)
		}
		rr.Release()
		t.Logf("parallelism %d: %d bytes of values, %d allocated", par, values, mem.bytes.Load())
		if got := mem.bytes.Load(); got > values/2 {
			t.Errorf("parallelism %d: %d bytes allocated for %d bytes of values, want under half", par, got, values)
		}
		mem.AssertSize(t, 0)
	}
}
