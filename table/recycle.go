package table

import (
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// recycleMax is the most bytes a Scan keeps for its next objects.
const recycleMax = 64 << 20

// recycler is a Scan's allocator: it keeps the buffers one object's scan
// frees (package reader returns its decoders' buffers to its allocator when
// the scan ends) and hands them out again, cleared, to the next objects',
// which ask for the same sizes. Without it every object of a table takes
// fresh memory from the Go heap for its decoders, which the runtime zeroes
// and collects: most of the cost of an object beyond its Open.
//
// It keeps at most max bytes; the rest, and everything once the scan is
// done, goes to inner. It is safe for concurrent use.
type recycler struct {
	inner memory.Allocator
	max   int64

	mu     sync.Mutex
	free   map[int][][]byte // by length
	held   int64            // their capacity
	closed bool
}

func newRecycler(inner memory.Allocator, max int64) *recycler {
	return &recycler{inner: inner, max: max, free: map[int][][]byte{}}
}

func (r *recycler) Allocate(n int) []byte {
	if b := r.reuse(n); b != nil {
		return b
	}
	return r.inner.Allocate(n)
}

// reuse returns a kept buffer of n bytes, cleared, or nil.
func (r *recycler) reuse(n int) []byte {
	if n <= 0 {
		return nil
	}
	r.mu.Lock()
	l := r.free[n]
	if len(l) == 0 {
		r.mu.Unlock()
		return nil
	}
	b := l[len(l)-1]
	l[len(l)-1] = nil
	r.free[n] = l[:len(l)-1]
	r.held -= int64(cap(b))
	r.mu.Unlock()
	clear(b)
	return b
}

// Reallocate grows b into a kept buffer of n bytes if there is one, and keeps
// b; otherwise inner reallocates it.
func (r *recycler) Reallocate(n int, b []byte) []byte {
	if cap(b) < n {
		if nb := r.reuse(n); nb != nil {
			copy(nb, b)
			r.Free(b)
			return nb
		}
	}
	return r.inner.Reallocate(n, b)
}

func (r *recycler) Free(b []byte) {
	if len(b) > 0 {
		r.mu.Lock()
		if !r.closed && r.held+int64(cap(b)) <= r.max {
			r.free[len(b)] = append(r.free[len(b)], b)
			r.held += int64(cap(b))
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
	}
	r.inner.Free(b)
}

// drain hands every kept buffer to inner, and from then on every freed one.
func (r *recycler) drain() {
	r.mu.Lock()
	free := r.free
	r.free, r.held, r.closed = nil, 0, true
	r.mu.Unlock()
	for _, l := range free {
		for _, b := range l {
			r.inner.Free(b)
		}
	}
}
