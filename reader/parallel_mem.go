package reader

import (
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/sovm/sop-pme/internal/flatdec"
)

// The memory of a parallel scan (see WithParallelism). Its row groups in
// flight share the scan's one limit, the limit the sequential scan has for
// the row group the caller reads (the head): what every worker's column
// decoders (columnCost per leaf column, while it holds a record reader),
// the batch it decodes (what it allocated and has not freed) and the
// batches it has decoded and the caller has not taken add up to, inUse,
// never passes it. The head may use, for its own batch, what the
// sequential scan would: beyond that its batch fails with ErrMemoryLimit,
// as the sequential one does. A worker ahead of the head that would take
// inUse beyond the limit, or that holds memory the head needs (in a batch,
// or in batches it decoded and waits with until the caller takes them),
// gives its row group up (errYield: it drops what it decoded, which the
// caller has not seen) and decodes it again once it is the head; the head
// waits for them.
// So a parallel scan fails no batch the sequential one decodes, and uses no
// more memory than it.

// errYield is the panic value of a worker ahead of the head whose batch
// would take the scan beyond its memory limit, or that the head asked to
// make room.
type errYield struct{}

// errStopped is the panic value of a worker whose scan ended (Release, or
// its context) during a batch.
type errStopped struct{}

// workerMem is a worker's allocator: it passes every allocation to the
// Reader's allocator, and counts what the worker's decoder holds in the
// scan's shared inUse, under the scan's lock.
type workerMem struct {
	s     *parScan
	mem   memory.Allocator
	task  *rgTask         // the row group the worker decodes (under s.mu)
	armed bool            // in a batch (under s.mu)
	live  map[uintptr]int // the buffers allocated since the batch began
	used  int64           // their bytes
	dec   int64           // the column decoders' cost, while it holds a record reader
}

func newWorkerMem(s *parScan, mem memory.Allocator) *workerMem {
	return &workerMem{s: s, mem: mem, live: map[uintptr]int{}}
}

func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// charge counts n bytes the worker's decoder is about to allocate: within
// a batch it panics (errYield, errStopped or errBudget) rather than take the
// scan beyond its limit, and the head waits for room the others hold.
// Outside a batch (arrow-go building its column readers, which the column
// decoders' cost covers) it counts nothing and reports false.
func (w *workerMem) charge(n int) (counted bool) {
	s := w.s
	s.mu.Lock()
	if !w.armed {
		// Building the column readers: columnCost covers it.
		s.mu.Unlock()
		return false
	}
	for n > 0 {
		if s.stopped {
			s.mu.Unlock()
			panic(errStopped{})
		}
		limit := s.limit()
		if w.task.seq != s.head {
			if s.yield || s.inUse+int64(n) > limit {
				s.mu.Unlock()
				panic(errYield{})
			}
			break
		}
		if allowed := limit - s.b.cols; w.used+int64(n) > allowed {
			s.mu.Unlock()
			panic(errBudget{want: w.used + int64(n), limit: allowed})
		}
		if s.inUse+int64(n) <= limit {
			s.yield = false
			break
		}
		s.yield = true
		s.cond.Broadcast()
		s.cond.Wait()
	}
	w.used += int64(n)
	s.inUse += int64(n)
	s.peakInUse = max(s.peakInUse, s.inUse)
	s.mu.Unlock()
	return true
}

// track records buf as allocated by the worker, counted by charge.
func (w *workerMem) track(buf []byte, n int) {
	s := w.s
	s.mu.Lock()
	if cap(buf) > 0 {
		w.live[addr(buf)] += n
	} else {
		// Nothing to free later: uncount it.
		w.used -= int64(n)
		s.inUse -= int64(n)
	}
	s.mu.Unlock()
}

// untrack uncounts buf, if the worker allocated it in its current batch.
func (w *workerMem) untrack(buf []byte) {
	if cap(buf) == 0 {
		return
	}
	s := w.s
	s.mu.Lock()
	if n, ok := w.live[addr(buf)]; ok {
		delete(w.live, addr(buf))
		w.used -= int64(n)
		s.inUse -= int64(n)
		s.cond.Broadcast()
	}
	s.mu.Unlock()
}

func (w *workerMem) Allocate(n int) []byte {
	counted := w.charge(n)
	buf := w.mem.Allocate(n)
	if counted {
		w.track(buf, n)
	}
	return buf
}

// AllocateUncleared is Allocate of a buffer flatdec overwrites whole
// (flatdec.UnclearedAllocator).
// The buffer's size, poolClass(n), is what it counts.
func (w *workerMem) AllocateUncleared(n int) []byte {
	c := poolClass(n)
	counted := w.charge(c)
	var buf []byte
	if u, ok := w.mem.(flatdec.UnclearedAllocator); ok {
		buf = u.AllocateUncleared(n)
	} else {
		buf = w.mem.Allocate(n)
	}
	if counted {
		w.track(buf, c)
	}
	return buf
}

// Reallocate counts the new buffer whole while the old one is copied into
// it: both are live then.
func (w *workerMem) Reallocate(n int, old []byte) []byte {
	counted := w.charge(n)
	out := w.mem.Reallocate(n, old)
	w.untrack(old)
	if counted {
		w.track(out, n)
	}
	return out
}

func (w *workerMem) Free(buf []byte) {
	w.untrack(buf)
	w.mem.Free(buf)
}

// settle ends the worker's batch (under s.mu): what it allocated and has
// not freed becomes the decoded batch's, which the caller takes with it,
// and is no longer tracked. It returns those bytes.
func (w *workerMem) settle() int64 {
	n := w.used
	w.used, w.armed = 0, false
	clear(w.live)
	return n
}

// drop uncounts everything the worker holds (under s.mu): its batch and
// its column decoders.
func (w *workerMem) drop() {
	w.s.inUse -= w.settle() + w.dec
	w.dec = 0
	w.s.cond.Broadcast()
}
