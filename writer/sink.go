package writer

import (
	"io"
	"sync"
	"sync/atomic"
)

// sink carries the ciphertext to the store on a goroutine of its own, so
// that the store's hashing and file writes overlap with encoding and
// sealing, and counts it. It copies each write (the Sealer reuses its
// buffer) and holds at most sinkDepth writes in flight. The first error of
// the store is sticky: later writes return it, and so does close.
type sink struct {
	w    io.Writer
	ch   chan []byte
	done chan struct{}
	pool sync.Pool // of *[]byte

	mu     sync.Mutex
	err    error
	closed bool

	n atomic.Int64 // bytes accepted
}

const sinkDepth = 4

func newSink(w io.Writer) *sink {
	s := &sink{w: w, ch: make(chan []byte, sinkDepth), done: make(chan struct{})}
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
		b = b[:0]
		s.pool.Put(&b)
	}
}

func (s *sink) failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Write queues a copy of p for the store.
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
	var b []byte
	if bp, _ := s.pool.Get().(*[]byte); bp != nil && cap(*bp) >= len(p) {
		b = (*bp)[:len(p)]
	} else {
		b = make([]byte, len(p))
	}
	copy(b, p)
	s.ch <- b
	s.n.Add(int64(len(p)))
	return len(p), nil
}

// close waits until everything queued has reached the store, and returns
// the store's first error. It may be called more than once.
func (s *sink) close() error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.ch)
	}
	s.mu.Unlock()
	<-s.done
	return s.failed()
}
