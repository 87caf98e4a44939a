package writer

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
)

// recorder is a store that keeps every write it gets, and fails once it
// holds failAt bytes (if failAt > 0).
type recorder struct {
	buf    bytes.Buffer
	writes []int
	failAt int
}

var errStore = errors.New("store refused")

func (r *recorder) Write(p []byte) (int, error) {
	if r.failAt > 0 && r.buf.Len()+len(p) > r.failAt {
		return 0, errStore
	}
	r.writes = append(r.writes, len(p))
	return r.buf.Write(p)
}

// TestSinkCoalesces: whatever the sizes written (one byte to several
// buffers), the store gets the same bytes in order, in writes of at most
// sinkBuf bytes of which only the last may leave a buffer part full, and
// the count is of every byte.
func TestSinkCoalesces(t *testing.T) {
	t.Parallel()
	src := rand.NewChaCha8([32]byte{1})
	rng := rand.New(src)
	var want bytes.Buffer
	rec := &recorder{}
	s := newSink(rec)
	for range 100 {
		var n int
		switch rng.IntN(4) {
		case 0:
			n = rng.IntN(16)
		case 1:
			n = rng.IntN(4 << 10)
		case 2:
			n = rng.IntN(300 << 10)
		default:
			n = rng.IntN(3 * sinkBuf)
		}
		p := make([]byte, n)
		src.Read(p)
		want.Write(p)
		if got, err := s.Write(p); got != n || err != nil {
			t.Fatalf("Write(%d bytes) = %d, %v", n, got, err)
		}
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rec.buf.Bytes(), want.Bytes()) {
		t.Fatal("the store did not get the bytes written, in order")
	}
	if got := s.n.Load(); got != int64(want.Len()) {
		t.Errorf("counted %d bytes, wrote %d", got, want.Len())
	}
	// Buffers fill up to their capacity (sinkMin, doubling to sinkBuf):
	// every write but the last is a full buffer.
	full := map[int]bool{}
	for c := sinkMin; c <= sinkBuf; c *= 2 {
		full[c] = true
	}
	for i, n := range rec.writes[:len(rec.writes)-1] {
		if !full[n] {
			t.Fatalf("store write %d of %d bytes; want a full buffer", i, n)
		}
	}
	if last := rec.writes[len(rec.writes)-1]; last > sinkBuf || last == 0 {
		t.Errorf("last store write of %d bytes", last)
	}
	t.Logf("%d bytes written in %d store writes", want.Len(), len(rec.writes))
}

// TestSinkAllocs: once its buffers exist, the sink allocates nothing per
// write.
func TestSinkAllocs(t *testing.T) {
	s := newSink(io.Discard)
	defer s.close()
	p := make([]byte, 100<<10)
	for range 64 { // make every buffer, at full size
		s.Write(p)
	}
	if a := testing.AllocsPerRun(200, func() { s.Write(p) }); a != 0 {
		t.Errorf("%v allocations per write; want 0", a)
	}
}

// TestSinkStickyError: the store's first error comes back from a later
// Write and from close (every close), and nothing after it reaches the
// store.
func TestSinkStickyError(t *testing.T) {
	t.Parallel()
	rec := &recorder{failAt: 3 * sinkBuf}
	s := newSink(rec)
	p := make([]byte, 256<<10)
	var err error
	for i := 0; i < 1000 && err == nil; i++ {
		_, err = s.Write(p)
	}
	if !errors.Is(err, errStore) {
		t.Fatalf("Write after the store failed: %v; want %v", err, errStore)
	}
	for range 2 {
		if err := s.close(); !errors.Is(err, errStore) {
			t.Fatalf("close: %v; want %v", err, errStore)
		}
	}
	if rec.buf.Len() > rec.failAt {
		t.Errorf("the store took %d bytes, more than it accepted", rec.buf.Len())
	}
	if _, err := s.Write(p); err == nil {
		t.Error("Write after close succeeded")
	}
}
