package reader

import (
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// bufPool is a scan's allocator under its budget: it keeps the buffers the
// scan's batches free (when the caller releases them) and hands them out
// again, cleared, to the next batches, which ask for the same sizes, batch
// after batch. A scan otherwise takes fresh memory from the Go heap for
// every batch, which the runtime zeroes (and the kernel faults in) each
// time: a third of the time of a scan of one float64 column, at one thread.
//
// The pool keeps at most max bytes, dropping those it has kept longest to
// make room (to the Reader's allocator, as every buffer it keeps when the
// scan ends: drain). The
// budget above it counts what the decoder allocates whatever the pool holds,
// so the scan's memory limit is unchanged; the pool's bytes were the
// garbage of earlier batches before.
type bufPool struct {
	mem memory.Allocator
	max int64

	mu     sync.Mutex
	free   map[int][]pooled // by length, which is their capacity but for some allocators
	held   int64            // their capacity
	clock  uint64           // counts the buffers kept
	closed bool
}

// pooled is a buffer the pool keeps, and when it came back.
type pooled struct {
	buf []byte
	at  uint64
}

// poolMax is the most bytes a scan's pool keeps: a quarter of the scan's
// memory limit, up to poolMaxBytes.
const poolMaxBytes = 32 << 20

func newBufPool(mem memory.Allocator, limit int64) *bufPool {
	return &bufPool{mem: mem, max: min(poolMaxBytes, limit/4), free: map[int][]pooled{}}
}

// reuse returns a kept buffer of n bytes, cleared, or nil.
func (p *bufPool) reuse(n int) []byte {
	buf := p.take(n)
	clear(buf)
	return buf
}

// take returns a kept buffer of n bytes, as it was freed, or nil.
func (p *bufPool) take(n int) []byte {
	if n <= 0 {
		return nil
	}
	p.mu.Lock()
	l := p.free[n]
	if len(l) == 0 {
		p.mu.Unlock()
		return nil
	}
	buf := l[len(l)-1].buf
	l[len(l)-1] = pooled{}
	p.free[n] = l[:len(l)-1]
	p.held -= int64(cap(buf))
	p.mu.Unlock()
	return buf
}

// evict drops the buffers kept longest (under p.mu) until n more bytes
// fit, and returns them: sizes the batches ask for come back again and
// again, others (intermediate sizes of a growing buffer) do not.
func (p *bufPool) evict(n int64) (out [][]byte) {
	for p.held+n > p.max && p.held > 0 {
		oldest := -1
		for size, l := range p.free {
			if len(l) > 0 && (oldest < 0 || l[0].at < p.free[oldest][0].at) {
				oldest = size
			}
		}
		l := p.free[oldest]
		out = append(out, l[0].buf)
		p.held -= int64(cap(l[0].buf))
		if len(l) == 1 {
			delete(p.free, oldest)
		} else {
			p.free[oldest] = slices.Delete(l, 0, 1)
		}
	}
	return out
}

// AllocateUncleared is Allocate without clearing a kept buffer, for
// flatdec, which overwrites every byte it uses (flatdec.UnclearedAllocator).
// The buffer has poolClass(n) bytes, the size it is kept at: the last
// batch of each row group has as many rows as the row group leaves
// (TPC-H's vary), and its buffers would otherwise never be reused.
func (p *bufPool) AllocateUncleared(n int) []byte {
	c := poolClass(n)
	if buf := p.take(c); buf != nil {
		return buf
	}
	return p.mem.Allocate(c)
}

// poolGrain is the granularity of poolClass, in bytes.
const poolGrain = 64 << 10

// poolClass returns n, rounded up to a multiple of poolGrain above it: at
// most a sixteenth more than n (n > 16 poolGrain), or poolGrain.
func poolClass(n int) int {
	if n <= poolGrain {
		return n
	}
	return (n + poolGrain - 1) &^ (poolGrain - 1)
}

func (p *bufPool) Allocate(n int) []byte {
	if buf := p.reuse(n); buf != nil {
		return buf
	}
	return p.mem.Allocate(n)
}

// Reallocate takes a kept buffer of n bytes, if there is one, copies old
// into it and keeps old; or else leaves it to the Reader's allocator.
func (p *bufPool) Reallocate(n int, old []byte) []byte {
	if cap(old) < n {
		if buf := p.reuse(n); buf != nil {
			copy(buf, old)
			p.Free(old)
			return buf
		}
	}
	return p.mem.Reallocate(n, old)
}

// Free keeps buf, whole: a buffer that a Reallocate shrank (arrow-go
// shrinks a batch's buffers to fit) is grown back to its capacity through
// the Reader's allocator, in place, so that the allocator counts what it
// gets back; the next batches ask for the size it was allocated at.
func (p *bufPool) Free(buf []byte) {
	if c := cap(buf); c > 0 {
		p.mu.Lock()
		keep := !p.closed && int64(c) <= p.max
		var evicted [][]byte
		if keep {
			evicted = p.evict(int64(c))
			p.held += int64(c)
		}
		p.mu.Unlock()
		for _, b := range evicted {
			p.mem.Free(b)
		}
		if keep {
			if len(buf) < c {
				buf = p.mem.Reallocate(c, buf)
			}
			p.mu.Lock()
			if p.closed {
				p.mu.Unlock()
				p.mem.Free(buf)
				return
			}
			p.held += int64(cap(buf) - c)
			p.clock++
			p.free[len(buf)] = append(p.free[len(buf)], pooled{buf: buf, at: p.clock})
			p.mu.Unlock()
			return
		}
	}
	p.mem.Free(buf)
}

// drain gives the buffers back to the Reader's allocator; later frees pass
// through.
func (p *bufPool) drain() {
	p.mu.Lock()
	free := p.free
	p.free, p.held, p.closed = nil, 0, true
	p.mu.Unlock()
	for _, l := range free {
		for _, b := range l {
			p.mem.Free(b.buf)
		}
	}
}
