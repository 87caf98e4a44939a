//go:build iroh

package iroh

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
)

// writeBlob writes size pseudo-random bytes (ChaCha8 from seed) to st in
// 1 MiB writes, never holding the object in memory, and commits it.
func writeBlob(t testing.TB, st blobs.Store, seed uint64, size int) storageid.ID {
	t.Helper()
	ctx := context.Background()
	var key [32]byte
	key[0], key[1] = byte(seed), byte(seed>>8)
	rng := rand.NewChaCha8(key)
	p, err := st.Create(ctx)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	for rest := size; rest > 0; {
		b := buf[:min(rest, len(buf))]
		rng.Read(b)
		if _, err := p.Write(b); err != nil {
			t.Fatal(err)
		}
		rest -= len(b)
	}
	id, err := p.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// rss returns the resident set size of the process, from /proc/self/statm.
func rss() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseUint(f[1], 10, 64)
	return pages * uint64(os.Getpagesize())
}

// memPeak is the peak growth of the Go heap (runtime.MemStats.HeapInuse) and
// of the resident set, over their values before a call, sampled every
// millisecond while it ran.
type memPeak struct{ heap, rss uint64 }

func measurePeak(f func()) memPeak {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	heap0, rss0 := ms.HeapInuse, rss()
	var peakHeap, peakRSS atomic.Uint64
	sample := func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if ms.HeapInuse > peakHeap.Load() {
			peakHeap.Store(ms.HeapInuse)
		}
		if r := rss(); r > peakRSS.Load() {
			peakRSS.Store(r)
		}
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tk := time.NewTicker(time.Millisecond)
		defer tk.Stop()
		for {
			sample()
			select {
			case <-stop:
				return
			case <-tk.C:
			}
		}
	}()
	f()
	close(stop)
	<-done
	sample()
	growth := func(peak, base uint64) uint64 {
		if peak < base {
			return 0
		}
		return peak - base
	}
	return memPeak{growth(peakHeap.Load(), heap0), growth(peakRSS.Load(), rss0)}
}

const mib = 1 << 20

// TestStreamVerifyBoundedMemory verifies a 64 MiB object through the iroh
// store and checks that the Go heap grows by far less than the object (the
// whole-object slice is streamed, not buffered), then corrupts a byte in
// the middle of the .data file and checks that Verify and a raw whole-object
// stream fail closed.
func TestStreamVerifyBoundedMemory(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	s := openStore(t, dir)
	const size = 64 << 20
	id := writeBlob(t, s, 1, size)

	var err error
	m := measurePeak(func() { err = verify.Verify(ctx, s, id) })
	if err != nil {
		t.Fatalf("verify.Verify of a %d MiB object: %v", size/mib, err)
	}
	t.Logf("verify.Verify of a %d MiB object: Go heap peak growth %.1f MiB, RSS peak growth %.1f MiB",
		size/mib, float64(m.heap)/mib, float64(m.rss)/mib)
	if m.heap >= 16*mib {
		t.Errorf("Go heap grew by %.1f MiB verifying a %d MiB object, want < 16 MiB", float64(m.heap)/mib, size/mib)
	}
	// The library's buffers are not in the Go heap: bound the process too.
	if m.rss >= 48*mib {
		t.Errorf("RSS grew by %.1f MiB verifying a %d MiB object, want < 48 MiB", float64(m.rss)/mib, size/mib)
	}

	// The encoding's length: size header, data, one parent pair per group
	// but one.
	groups := uint64(size / group)
	encLen := 8 + uint64(size) + (groups-1)*64

	const bad = size/2 + 77
	s = corrupt(t, dir, s, id, bad)
	m = measurePeak(func() { err = verify.Verify(ctx, s, id) })
	if err == nil {
		t.Fatal("verify.Verify passed an object corrupted in the middle")
	}
	if !errors.Is(err, ErrCorrupt) && !errors.Is(err, verify.ErrVerify) {
		t.Fatalf("verify.Verify of a corrupted object: %v, want ErrCorrupt or verify.ErrVerify", err)
	}
	t.Logf("verify.Verify of the corrupted object: %v (Go heap peak growth %.1f MiB)", err, float64(m.heap)/mib)

	// The raw stream: it ends in an error, never short and clean.
	rc, err := s.Slice(ctx, id, 0, 1<<63-1)
	if err != nil {
		// An error before any byte is also failing closed, but the damage
		// is 32 MiB in: the export must have started.
		t.Fatalf("Slice of the whole corrupted object: %v", err)
	}
	n, err := io.Copy(io.Discard, rc)
	rc.Close()
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("streaming the corrupted object: %d bytes, then %v; want an error matching ErrCorrupt", n, err)
	}
	if uint64(n) >= encLen || uint64(n) < bad {
		t.Fatalf("streaming the corrupted object stopped after %d bytes of %d, damage at %d", n, encLen, bad)
	}
	t.Logf("raw stream of the corrupted object: %d of %d bytes, then %v", n, encLen, err)
	// Ranges of up to 1 MiB are read whole: Slice itself fails, whichever
	// way it reads them.
	for _, n := range []uint64{1, 100 << 10, 600 << 10, mib} {
		if _, err := s.Slice(ctx, id, bad-n/2, n); !errors.Is(err, ErrCorrupt) {
			t.Errorf("Slice(%d, %d) over the damage: %v, want ErrCorrupt", bad-n/2, n, err)
		}
	}
	// Ranges away from the damage still verify.
	if err := verify.Verify(ctx, s, id, verify.WithExpectedSize(size)); err == nil {
		t.Fatal("Verify passed on the second try")
	}
	r, err := verify.NewReader(ctx, s, id)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 8*mib)
	if _, err := r.ReadAt(p, 1*mib); err != nil {
		t.Fatalf("ReadAt away from the damage: %v", err)
	}
	if _, err := r.ReadAt(p, bad-4*mib); err == nil {
		t.Fatal("ReadAt over the damage succeeded")
	}
}

// TestStreamSameAsDirStore compares large (streamed) slices of the iroh store
// with the directory store's, read in uneven pieces.
func TestStreamSameAsDirStore(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := openStore(t, t.TempDir())
	d, err := blobs.CreateDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{5<<20 + 123, 4 << 20} {
		id := writeBlob(t, s, uint64(size), size)
		if id2 := writeBlob(t, d, uint64(size), size); id2 != id {
			t.Fatalf("ids differ: %v, %v", id, id2)
		}
		sz := uint64(size)
		for _, r := range [][2]uint64{
			{0, 1<<63 - 1}, {0, sz}, {1, sz - 2}, {3*group - 1, 2 * mib}, {sz - 2*mib, 5 * mib},
			{mib + 5, mib}, {sz, 2 * mib}, {sz + 5*mib, 3 * mib},
		} {
			want := readAll(t)(d.Slice(ctx, id, r[0], r[1]))
			rc, err := s.Slice(ctx, id, r[0], r[1])
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			sizes := []int{1, 63, 64, 65, 1000, group, 100 << 10, 300 << 10, 3 * mib}
			for i := 0; ; i++ {
				p := make([]byte, sizes[i%len(sizes)])
				n, err := rc.Read(p)
				got.Write(p[:n])
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("size %d, range %v: Read: %v", size, r, err)
				}
			}
			if n, err := rc.Read(make([]byte, 10)); n != 0 || err != io.EOF {
				t.Fatalf("Read after EOF = %d, %v", n, err)
			}
			if err := rc.Close(); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Fatalf("size %d, range %v: iroh slice (%d bytes) differs from the directory store's (%d bytes)",
					size, r, got.Len(), len(want))
			}
		}
	}
}

// TestStreamEarlyClose closes streams before their end, by Close, by
// context cancellation and by closing the store.
func TestStreamEarlyClose(t *testing.T) {
	ctx := testCtx(t)
	s := openStore(t, t.TempDir())
	const size = 32 << 20
	id := writeBlob(t, s, 2, size)

	p := make([]byte, mib)
	for range 20 {
		rc, err := s.Slice(ctx, id, 0, size)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(rc, p); err != nil {
			t.Fatal(err)
		}
		if err := rc.Close(); err != nil {
			t.Fatal(err)
		}
		if err := rc.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		if n, err := rc.Read(p); n != 0 || err == nil {
			t.Fatalf("Read after Close = %d, %v", n, err)
		}
	}
	// Closed before any Read.
	rc, err := s.Slice(ctx, id, 0, size)
	if err != nil {
		t.Fatal(err)
	}
	rc.Close()

	// A reader dropped without Close: its cleanup frees the cursor.
	for range 5 {
		rc, err := s.Slice(ctx, id, 0, size)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(rc, p[:1000]); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.GC()

	// Close while another goroutine reads.
	rc, err = s.Slice(ctx, id, 0, size)
	if err != nil {
		t.Fatal(err)
	}
	readErr := make(chan error, 1)
	var nRead atomic.Int64
	go func() {
		n, err := io.CopyBuffer(io.Discard, rc, make([]byte, 4096))
		nRead.Store(n)
		readErr <- err
	}()
	time.Sleep(2 * time.Millisecond)
	rc.Close()
	if err := <-readErr; err == nil {
		t.Logf("the concurrent reader finished (%d bytes) before Close", nRead.Load())
	} else if !errors.Is(err, errReaderClosed) {
		t.Fatalf("concurrent reader: %v, want errReaderClosed", err)
	}

	// Context cancellation stops the stream.
	cctx, cancel := context.WithCancel(ctx)
	rc, err = s.Slice(cctx, id, 0, size)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(rc, p); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := io.Copy(io.Discard, rc); !errors.Is(err, context.Canceled) {
		t.Fatalf("reading after cancel: %v, want context.Canceled", err)
	}
	rc.Close()

	// The store still serves whole streams.
	if err := verify.Verify(ctx, s, id); err != nil {
		t.Fatal(err)
	}

	// Closing the store with streams open: they fail with ErrClosed, and
	// closing them afterwards is fine.
	dir := t.TempDir()
	s2, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	id2 := writeBlob(t, s2, 3, 8<<20)
	var open []io.ReadCloser
	for k := range 3 {
		rc, err := s2.Slice(ctx, id2, 0, 8<<20)
		if err != nil {
			t.Fatal(err)
		}
		if k > 0 {
			if _, err := io.ReadFull(rc, p[:k*100000]); err != nil {
				t.Fatal(err)
			}
		}
		open = append(open, rc)
	}
	t0 := time.Now()
	if err := s2.Close(); err != nil {
		t.Fatalf("closing a store with open streams: %v", err)
	}
	t.Logf("closing a store with 3 open streams took %v", time.Since(t0))
	for i, rc := range open {
		if _, err := io.Copy(io.Discard, rc); !errors.Is(err, ErrClosed) {
			t.Errorf("stream %d after the store closed: %v, want ErrClosed", i, err)
		}
		if err := rc.Close(); err != nil {
			t.Errorf("closing stream %d after the store: %v", i, err)
		}
	}
	// Reopens: the closed store released its lock.
	s3 := openStore(t, dir)
	if err := verify.Verify(ctx, s3, id2); err != nil {
		t.Fatal(err)
	}
}

// TestStreamConcurrent runs whole-object streams of two blobs at once,
// alongside verify.Verify of both.
func TestStreamConcurrent(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := openStore(t, t.TempDir())
	d, err := blobs.CreateDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const size = 6 << 20
	var ids [2]storageid.ID
	var want [2][32]byte
	for i := range ids {
		ids[i] = writeBlob(t, s, uint64(10+i), size+i*1000)
		writeBlob(t, d, uint64(10+i), size+i*1000)
		rc, err := d.Slice(ctx, ids[i], 0, 1<<63-1)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		io.Copy(h, rc)
		rc.Close()
		h.Sum(want[i][:0])
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 6 {
		wg.Go(func() {
			i := g % 2
			rc, err := s.Slice(ctx, ids[i], 0, 1<<63-1)
			if err != nil {
				errs <- err
				return
			}
			defer rc.Close()
			h := sha256.New()
			if _, err := io.CopyBuffer(h, rc, make([]byte, 1000+g*7000)); err != nil {
				errs <- err
				return
			}
			if [32]byte(h.Sum(nil)) != want[i] {
				errs <- errors.New("concurrent stream differs from the directory store's slice")
			}
		})
	}
	// Verify in parallel with the raw streams.
	for i := range ids {
		wg.Go(func() {
			if err := verify.Verify(ctx, s, ids[i]); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestRemoteStream streams a whole-object slice through a Remote: fetched,
// then streamed from the local store.
func TestRemoteStream(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	a := openStore(t, t.TempDir())
	b := openStore(t, t.TempDir())
	const size = 3<<20 + 5
	id := writeBlob(t, a, 20, size)
	addr, err := a.Serve(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r := b.Remote(addr)
	rc, err := r.Slice(ctx, id, 0, 1<<63-1)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := rc.(*exportReader); !ok {
		t.Fatalf("a whole-object remote slice is a %T, not streamed", rc)
	}
	got := readAll(t)(rc, nil)
	want := readAll(t)(a.Slice(ctx, id, 0, 1<<63-1))
	if !bytes.Equal(got, want) {
		t.Fatal("remote whole-object slice differs from the serving node's")
	}
	if recv := r.BytesReceived(); recv < size {
		t.Fatalf("received %d bytes for a %d-byte object", recv, size)
	}
	if err := verify.Verify(ctx, r, id); err != nil {
		t.Fatal(err)
	}
}
