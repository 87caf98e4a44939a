package writer

import (
	"io"
	"sync"
	"sync/atomic"
)

// sink carries the ciphertext to the store on a goroutine of its own, so
// that the store's hashing and file writes overlap with encoding and
// sealing, and counts it. It copies each write (the Sealer reuses its
// buffer) into the buffer it is filling, and hands the store whole buffers
// of up to sinkBuf bytes: the store sees few large writes (which it hashes
// while it writes them) whatever the page sizes, and nothing is allocated
// per write. At most sinkDepth buffers wait for the store. The first error
// of the store is sticky: later writes return it, and so does close. Write
// and close are called by one goroutine at a time (the pipeline has
// stopped sealing before a Writer closes its sink).
type sink struct {
	w    io.Writer
	ch   chan []byte // full buffers, to the store
	free chan []byte // buffers the store is done with
	done chan struct{}
	cur  []byte // the buffer being filled
	made int    // buffers allocated
	size int    // capacity of the next buffer allocated

	mu     sync.Mutex
	err    error
	closed bool

	n atomic.Int64 // bytes accepted
}

const (
	// sinkDepth is how many full buffers may wait for the store.
	sinkDepth = 4
	// sinkBuf is the largest buffer; the first is sinkMin, and each one
	// allocated after it is twice the last, so that a small object
	// allocates little.
	sinkBuf = 1 << 20
	sinkMin = 64 << 10
)

func newSink(w io.Writer) *sink {
	s := &sink{
		w:    w,
		ch:   make(chan []byte, sinkDepth),
		free: make(chan []byte, sinkDepth+1),
		done: make(chan struct{}),
		size: sinkMin,
	}
	go s.run()
	return s
}

func (s *sink) run() {
	defer close(s.done)
	for b := range s.ch {
		if s.failed() == nil {
			if _, err := s.w.Write(b); err != nil {
				s.mu.Lock()
				s.err = err
				s.mu.Unlock()
			}
		}
		s.free <- b[:0]
	}
}

func (s *sink) failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// buffer returns an empty buffer to fill: one the store is done with, a new
// one while fewer than sinkDepth+1 exist, or else the next one the store
// gives back.
func (s *sink) buffer() []byte {
	select {
	case b := <-s.free:
		return b
	default:
	}
	if s.made <= sinkDepth {
		s.made++
		b := make([]byte, 0, s.size)
		s.size = min(2*s.size, sinkBuf)
		return b
	}
	return <-s.free
}

// flush hands the buffer being filled, if it holds anything, to the store.
func (s *sink) flush() {
	if len(s.cur) > 0 {
		s.ch <- s.cur
		s.cur = nil
	}
}

// Write copies p for the store.
func (s *sink) Write(p []byte) (int, error) {
	s.mu.Lock()
	err, closed := s.err, s.closed
	s.mu.Unlock()
	if err != nil {
		return 0, err
	}
	if closed {
		return 0, io.ErrClosedPipe
	}
	n := len(p)
	for len(p) > 0 {
		if s.cur == nil {
			s.cur = s.buffer()
		}
		k := min(len(p), cap(s.cur)-len(s.cur))
		s.cur = append(s.cur, p[:k]...)
		p = p[k:]
		if len(s.cur) == cap(s.cur) {
			s.flush()
		}
	}
	s.n.Add(int64(n))
	return n, nil
}

// close hands the store what remains and waits until everything has
// reached it, and returns the store's first error. It may be called more
// than once.
func (s *sink) close() error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		s.flush()
		close(s.ch)
	}
	s.mu.Unlock()
	<-s.done
	return s.failed()
}
