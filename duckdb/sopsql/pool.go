package sopsql

import (
	"math/bits"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// bufferPool is the allocator of the readers of one sop_scan: it keeps the
// buffers arrow-go frees when a batch is released, and hands them out again
// for the next batches (cleared), instead of the Go allocator's new buffer
// for every column of every batch, which the garbage collector then has to
// find and free. Profiles of TPC-H Q1 at GOMAXPROCS=1 put a fifth of the
// process's time into allocating and collecting those buffers.
//
// Buffers of poolMin to poolMax bytes are pooled by size class (powers of
// two, 64-byte aligned, as memory.GoAllocator aligns); others come from the
// Go allocator and return to the garbage collector. The pool keeps at most
// limit bytes of free buffers, beyond which a freed buffer is dropped. A
// buffer is reused only after arrow-go freed it, which it does when the
// last reference to it is released; with poison set (the tests), a freed
// buffer is overwritten, so that a use after its release shows as wrong
// values, not as right ones by luck.
type bufferPool struct {
	mu     sync.Mutex
	free   [poolClasses][][]byte // by class: free buffers of the class's size
	live   map[*byte][]byte      // buffer handed out, by its first byte → its whole class buffer
	pooled int64                 // bytes in free
	limit  int64
	poison bool
	goMem  memory.GoAllocator
}

const (
	poolMinShift = 12 // 4 KiB
	poolMaxShift = 26 // 64 MiB
	poolClasses  = poolMaxShift - poolMinShift + 1
	poolAlign    = 64
	// poolLimit bounds the free buffers of one scan: a batch of 65,536
	// rows of a few dozen columns (see reader.DefaultBatchSize), per
	// DuckDB thread.
	poolLimit  = 64 << 20
	poisonByte = 0xA5
)

var _ memory.Allocator = (*bufferPool)(nil)

func newBufferPool(limit int64, poison bool) *bufferPool {
	return &bufferPool{live: map[*byte][]byte{}, limit: limit, poison: poison}
}

// class returns the size class of n bytes, or -1 if n is not pooled.
func class(n int) int {
	if n <= 0 || n > 1<<poolMaxShift {
		return -1
	}
	c := bits.Len(uint(n-1)) - poolMinShift
	if c < 0 {
		if n < 1<<(poolMinShift-1) {
			return -1 // small: the Go allocator's
		}
		c = 0
	}
	return c
}

func (p *bufferPool) Allocate(n int) []byte {
	c := class(n)
	if c < 0 {
		return p.goMem.Allocate(n)
	}
	p.mu.Lock()
	var buf []byte
	if k := len(p.free[c]); k > 0 {
		buf = p.free[c][k-1]
		p.free[c] = p.free[c][:k-1]
		p.pooled -= int64(len(buf))
	}
	p.mu.Unlock()
	if buf == nil {
		size := 1 << (c + poolMinShift)
		raw := make([]byte, size+poolAlign)
		shift := int(-uintptr(unsafe.Pointer(&raw[0])) & (poolAlign - 1))
		buf = raw[shift : shift+size : shift+size]
	} else {
		clear(buf[:n])
	}
	p.mu.Lock()
	p.live[&buf[0]] = buf
	p.mu.Unlock()
	return buf[:n:n]
}

func (p *bufferPool) Reallocate(n int, old []byte) []byte {
	if len(old) > 0 && n > len(old) {
		p.mu.Lock()
		whole, ok := p.live[&old[0]]
		p.mu.Unlock()
		if ok && n <= len(whole) {
			clear(whole[len(old):n])
			return whole[:n:n]
		}
	}
	if n <= len(old) {
		return old[:n]
	}
	buf := p.Allocate(n)
	copy(buf, old)
	p.Free(old)
	return buf
}

func (p *bufferPool) Free(b []byte) {
	if len(b) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	whole, ok := p.live[&b[0]]
	if !ok {
		return // the Go allocator's
	}
	delete(p.live, &b[0])
	if p.poison {
		for i := range whole {
			whole[i] = poisonByte
		}
	}
	if p.pooled+int64(len(whole)) > p.limit {
		return
	}
	c := class(len(whole))
	p.free[c] = append(p.free[c], whole)
	p.pooled += int64(len(whole))
}
