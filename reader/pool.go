package reader

import (
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
// The pool keeps at most max bytes; it passes every other Free, and every
// buffer it keeps when the scan ends (drain), to the Reader's allocator. The
// budget above it counts what the decoder allocates whatever the pool holds,
// so the scan's memory limit is unchanged; the pool's bytes were the
// garbage of earlier batches before.
type bufPool struct {
	mem memory.Allocator
	max int64

	mu     sync.Mutex
	free   map[int][][]byte // by length, which is their capacity but for some allocators
	held   int64            // their capacity
	closed bool
}

// poolMax is the most bytes a scan's pool keeps: a quarter of the scan's
// memory limit, up to poolMaxBytes.
const poolMaxBytes = 32 << 20

func newBufPool(mem memory.Allocator, limit int64) *bufPool {
	return &bufPool{mem: mem, max: min(poolMaxBytes, limit/4), free: map[int][][]byte{}}
}

// reuse returns a kept buffer of n bytes, cleared, or nil.
func (p *bufPool) reuse(n int) []byte {
	if n <= 0 {
		return nil
	}
	p.mu.Lock()
	l := p.free[n]
	if len(l) == 0 {
		p.mu.Unlock()
		return nil
	}
	buf := l[len(l)-1]
	l[len(l)-1] = nil
	p.free[n] = l[:len(l)-1]
	p.held -= int64(cap(buf))
	p.mu.Unlock()
	clear(buf)
	return buf
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
		keep := !p.closed && p.held+int64(c) <= p.max
		if keep {
			p.held += int64(c)
		}
		p.mu.Unlock()
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
			p.free[len(buf)] = append(p.free[len(buf)], buf)
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
		for _, buf := range l {
			p.mem.Free(buf)
		}
	}
}
