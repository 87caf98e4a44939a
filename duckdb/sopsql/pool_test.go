package sopsql

import (
	"bytes"
	"testing"
	"unsafe"
)

// TestBufferPool: buffers come 64-byte aligned and cleared, reused after
// Free (poisoned in between), grown in place within their class with the
// new bytes cleared, and the pool keeps no more than its limit.
func TestBufferPool(t *testing.T) {
	t.Parallel()
	p := newBufferPool(3<<20, true)
	aligned := func(b []byte) bool { return uintptr(unsafe.Pointer(&b[0]))%poolAlign == 0 }
	a := p.Allocate(100 << 10) // class 128 KiB
	if len(a) != 100<<10 || !aligned(a) || bytes.Count(a, []byte{0}) != len(a) {
		t.Fatalf("Allocate: %d bytes, aligned %v", len(a), aligned(a))
	}
	for i := range a {
		a[i] = 7
	}
	first := &a[0]
	p.Free(a)
	if a[0] != poisonByte || a[len(a)-1] != poisonByte {
		t.Fatalf("freed buffer not poisoned: %x %x", a[0], a[len(a)-1])
	}
	b := p.Allocate(90 << 10)
	if &b[0] != first {
		t.Error("a freed buffer of the same class was not reused")
	}
	if bytes.Count(b, []byte{0}) != len(b) {
		t.Fatal("a reused buffer is not cleared")
	}
	b[0], b[len(b)-1] = 1, 2
	g := p.Reallocate(120<<10, b)
	if &g[0] != first || len(g) != 120<<10 || g[0] != 1 || g[90<<10-1] != 2 || bytes.Count(g[90<<10:], []byte{0}) != 30<<10 {
		t.Fatalf("Reallocate within the class: moved %v, %d bytes", &g[0] != first, len(g))
	}
	h := p.Reallocate(200<<10, g) // beyond the class: a new buffer, g freed
	if &h[0] == first || h[0] != 1 || h[90<<10-1] != 2 || !aligned(h) {
		t.Fatal("Reallocate beyond the class did not copy into a new buffer")
	}
	// Small and huge buffers are the Go allocator's; freeing them is a no-op.
	small := p.Allocate(100)
	p.Free(small)
	if p.pooled != 128<<10 {
		t.Fatalf("pooled %d bytes, want the one 128 KiB buffer", p.pooled)
	}
	// The limit: of four 1 MiB buffers freed, three are kept.
	var mb [][]byte
	for range 4 {
		mb = append(mb, p.Allocate(1<<20))
	}
	p.Free(h)
	for _, m := range mb {
		p.Free(m)
	}
	if p.pooled > 3<<20 || len(p.live) != 0 {
		t.Fatalf("pooled %d bytes (limit %d), %d buffers live", p.pooled, 3<<20, len(p.live))
	}
}
