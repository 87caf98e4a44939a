package table

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestRecycler: a freed buffer comes back, cleared, for the same size; a
// Reallocate grows into a kept one; nothing is kept beyond max or after
// drain; and every byte goes back to the inner allocator.
func TestRecycler(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := newRecycler(mem, 1000)

	a := r.Allocate(100)
	for i := range a {
		a[i] = 0xff
	}
	r.Free(a)
	b := r.Allocate(100)
	if &b[0] != &a[0] {
		t.Error("a freed buffer was not reused")
	}
	for _, c := range b {
		if c != 0 {
			t.Fatal("a reused buffer was not cleared")
		}
	}
	// Reallocate to 200 takes a kept 200-byte buffer and keeps b.
	c := r.Allocate(200)
	r.Free(c)
	b[0] = 7
	g := r.Reallocate(200, b)
	if &g[0] != &c[0] || g[0] != 7 || len(g) != 200 {
		t.Error("Reallocate did not grow into the kept buffer")
	}
	if again := r.Allocate(100); &again[0] != &b[0] {
		t.Error("Reallocate did not keep the old buffer")
	} else {
		r.Free(again)
	}
	// Beyond max, a buffer goes to the inner allocator.
	big := r.Allocate(2000)
	r.Free(big)
	if r.held > r.max {
		t.Errorf("held %d > max %d", r.held, r.max)
	}
	r.drain()
	r.Free(g) // after drain: straight to inner
	if len(r.free) != 0 || r.held != 0 {
		t.Error("drain kept buffers")
	}
}
