package reader_test

import (
	"context"
	"encoding/binary"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/sovm/sop-pme/internal/testkit/hostile"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/reader"
)

// heapSampler samples the Go heap (every allocated object, live or not yet
// swept) in a goroutine of its own until stop, and keeps the peak.
type heapSampler struct {
	stop chan struct{}
	done sync.WaitGroup
	peak uint64
}

const heapMetric = "/memory/classes/heap/objects:bytes"

func heapNow() uint64 {
	s := []metrics.Sample{{Name: heapMetric}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// sampleHeap starts sampling, at most every interval and for at most limit.
func sampleHeap(interval, limit time.Duration) *heapSampler {
	h := &heapSampler{stop: make(chan struct{})}
	h.done.Add(1)
	go func() {
		defer h.done.Done()
		s := []metrics.Sample{{Name: heapMetric}}
		deadline := time.Now().Add(limit)
		for time.Now().Before(deadline) {
			metrics.Read(s)
			h.peak = max(h.peak, s[0].Value.Uint64())
			select {
			case <-h.stop:
				return
			case <-time.After(interval):
			}
		}
	}()
	return h
}

// Peak stops sampling and returns the peak.
func (h *heapSampler) Peak() uint64 {
	close(h.stop)
	h.done.Wait()
	return max(h.peak, heapNow())
}

// sizes returns the footer region's size, the largest column chunk and the
// number of leaf columns of a sealed object.
func sizes(t *testing.T, obj []byte, dek pme.DEK) (footer, chunk int64, leaves int) {
	flen := int64(binary.LittleEndian.Uint32(obj[len(obj)-8:]))
	tail, err := pme.ParseFooterRegion(obj[int64(len(obj))-8-flen : len(obj)-8])
	if err != nil {
		t.Fatal(err)
	}
	f, err := pme.OpenFooter(dek, tail.FooterBody)
	if err != nil {
		return flen, 0, 0
	}
	rgs, _ := f.ColumnChunks()
	for _, rg := range rgs {
		for _, c := range rg {
			chunk = max(chunk, c.Len)
		}
	}
	fields, _ := f.Fields()
	for _, fd := range fields {
		leaves = max(leaves, fd.FirstLeaf+fd.NumLeaf)
	}
	return flen, chunk, leaves
}

// TestHostileMemoryBound: for every hostile case, Open, a full Scan drained
// to its end, and Check return (with the case's error, or rows), and the Go
// heap's peak stays under 64 MiB + 16 × (footer bytes + the largest chunk)
// + 64 KiB for each leaf column whose decoder the default memory limit
// makes room for (up to reader.DefaultMaxColumns).
// The heap (every allocated object, live or not yet swept) is sampled every
// 200 µs, with the garbage collector at GOGC=25 and a memory limit at the
// bound, so that the peak is what the reader holds, not what it has dropped
// and the collector has not reclaimed yet. The heap is measured by
// runtime/metrics, which the race detector's shadow memory does not enter:
// the figures are the same with -race, and the test runs with it.
func TestHostileMemoryBound(t *testing.T) {
	ctx := context.Background()
	dek := fuzzKey()
	defer debug.SetGCPercent(debug.SetGCPercent(25))
	for _, c := range hostileCases() {
		t.Run(c.Name, func(t *testing.T) {
			if c.err != nil {
				t.Fatal(c.err)
			}
			footer, chunk, leaves := sizes(t, c.obj, dek)
			if leaves > reader.DefaultMaxColumns {
				leaves = 0 // the default limit makes no room for their decoders
			}
			bound := uint64(64<<20 + 16*(footer+chunk) + 64<<10*int64(leaves))
			st := hostile.NewStore()
			id := st.Put(c.obj, dek)
			runtime.GC()
			base := heapNow()
			limit := debug.SetMemoryLimit(int64(base + bound))
			defer debug.SetMemoryLimit(limit)
			h := sampleHeap(200*time.Microsecond, time.Minute)
			rows, err := readObject(ctx, st, id)
			_, cerr := reader.Check(ctx, st, id, st)
			peak := h.Peak()
			grew := peak - min(peak, base)
			t.Logf("footer %d, chunk %d, %d leaves: peak %.1f MiB, bound %.1f MiB; %d rows, %v", footer, chunk, leaves,
				float64(grew)/(1<<20), float64(bound)/(1<<20), rows, err)
			if cerr != nil {
				t.Errorf("Check: %v", cerr)
			}
			if grew > bound {
				t.Errorf("the heap grew by %d bytes, bound %d", grew, bound)
			}
		})
	}
}
