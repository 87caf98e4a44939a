package verify

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"

	"github.com/sovm/sop-pme/storageid"
)

func TestReaderReadAt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(5, 6))
	for _, size := range testSizes(t) {
		data := randBytes(size, uint64(size)+2)
		src := newMemSource(t, data)
		for _, par := range []int{1, 2, 3} {
			r, err := NewReader(ctx, src, src.id, WithConcurrency(par), WithExpectedSize(int64(size)))
			if err != nil {
				t.Fatalf("size %d: NewReader: %v", size, err)
			}
			if r.Size() != int64(size) || r.ID() != src.id {
				t.Fatalf("size %d: Size() = %d", size, r.Size())
			}
			check := func(off, n int) {
				t.Helper()
				p := make([]byte, n)
				got, err := r.ReadAt(p, int64(off))
				want := data[min(off, size):min(off+n, size)]
				wantErr := error(nil)
				if len(want) < n {
					wantErr = io.EOF
				}
				if got != len(want) || err != wantErr || !bytes.Equal(p[:got], want) {
					t.Fatalf("size %d: ReadAt(%d bytes at %d) = %d, %v; want %d, %v", size, n, off, got, err, len(want), wantErr)
				}
			}
			check(0, size)
			check(0, size+10)
			check(size, 1)
			check(size+100, 5)
			check(size/2, 0)
			for range 20 {
				off := rng.IntN(size + 1)
				check(off, rng.IntN(size-off+GroupSize))
			}
			for off := 0; off < size; off += GroupSize * (1 + rng.IntN(8)) {
				check(off, GroupSize*(1+rng.IntN(8))) // group-aligned
			}
		}
	}
}

func TestReaderNegativeOffset(t *testing.T) {
	t.Parallel()
	src := newMemSource(t, randBytes(100, 1))
	r, err := NewReader(context.Background(), src, src.id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadAt(make([]byte, 1), -1); err == nil {
		t.Fatal("ReadAt accepted a negative offset")
	}
}

// TestReaderTail checks that NewReader makes one request, and that reads
// inside the last group are served from it.
func TestReaderTail(t *testing.T) {
	t.Parallel()
	data := randBytes(4*GroupSize+500, 3)
	src := newMemSource(t, data)
	r, err := NewReader(context.Background(), src, src.id)
	if err != nil {
		t.Fatal(err)
	}
	if src.calls.Load() != 1 {
		t.Fatalf("NewReader made %d requests", src.calls.Load())
	}
	p := make([]byte, 200)
	if n, err := r.ReadAt(p, int64(len(data)-200)); n != 200 || err != nil || !bytes.Equal(p, data[len(data)-200:]) {
		t.Fatalf("tail read: %d, %v", n, err)
	}
	if src.calls.Load() != 1 {
		t.Fatal("a read within the last group fetched a slice")
	}
}

func TestReaderErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	data := randBytes(5*GroupSize+100, 4)
	src := newMemSource(t, data)

	var wrong storageid.ID
	wrong[0] = 1
	if _, err := NewReader(ctx, src, wrong); !errors.Is(err, errTestNotFound) {
		t.Errorf("unknown id: %v, want the Source's error", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := NewReader(cctx, src, src.id); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if _, err := NewReader(ctx, src, src.id, WithExpectedSize(int64(len(data)+1))); !errors.Is(err, ErrSize) {
		t.Errorf("wrong expected size: %v, want ErrSize", err)
	}
	if _, err := NewReader(ctx, src, src.id, WithConcurrency(0)); err == nil {
		t.Error("WithConcurrency(0) accepted")
	}
	r, err := NewReader(ctx, src, src.id)
	if err != nil {
		t.Fatal(err)
	}
	p := bytes.Repeat([]byte{0xAA}, 100)
	if n, err := r.ReadAtContext(cctx, p, 0); n != 0 || !errors.Is(err, context.Canceled) || !isZero(p) {
		t.Errorf("cancelled read: %d, %v", n, err)
	}
}

// anySource serves the slices of one blob for every id, so that a wrong
// root reaches the verifier.
type anySource struct{ *memSource }

func (a anySource) Slice(ctx context.Context, _ storageid.ID, off, n uint64) (io.ReadCloser, error) {
	return a.memSource.Slice(ctx, a.id, off, n)
}

// TestTamper changes slices in every way a store or network could, and
// checks that each read fails with ErrVerify or ErrSize and leaves the
// destination cleared.
func TestTamper(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, size := range []int{GroupSize + 1, 5*GroupSize + 100, 3<<20 + 77} {
		data := randBytes(size, uint64(size))
		ranges := [][2]int{{0, 10}, {GroupSize - 3, 7}, {0, size}, {size - 5000, 5000}, {GroupSize, 2 * GroupSize}}
		if size > 2<<20 {
			ranges = append(ranges, [2]int{1 << 20, 1 << 20}, [2]int{12345, 2 << 20})
		}
		tampers := []struct {
			name string
			fn   func(enc []byte) []byte
			want error
		}{
			{"group byte", func(enc []byte) []byte { return flip(enc, len(enc)-1) }, ErrVerify},
			{"first group byte", func(enc []byte) []byte { return flip(enc, len(enc)-min(len(enc)-headerSize, 2*GroupSize)) }, ErrVerify},
			{"parent byte", func(enc []byte) []byte { return flip(enc, headerSize+3) }, ErrVerify},
			{"size header", func(enc []byte) []byte { return flip(enc, 2) }, ErrSize},
			{"size header high", func(enc []byte) []byte { return flip(enc, 7) }, ErrSize},
			{"other size", func(enc []byte) []byte {
				binary.LittleEndian.PutUint64(enc, uint64(size+GroupSize))
				return enc
			}, ErrSize},
			{"truncated by one", func(enc []byte) []byte { return enc[:len(enc)-1] }, ErrVerify},
			{"truncated by half", func(enc []byte) []byte { return enc[:len(enc)/2] }, ErrVerify},
			{"header only", func(enc []byte) []byte { return enc[:headerSize] }, ErrVerify},
			{"short header", func(enc []byte) []byte { return enc[:3] }, ErrVerify},
			{"empty", func(enc []byte) []byte { return nil }, ErrVerify},
			{"appended byte", func(enc []byte) []byte { return append(enc, 0) }, ErrVerify},
			{"appended group", func(enc []byte) []byte { return append(enc, make([]byte, GroupSize)...) }, ErrVerify},
		}
		for _, tc := range tampers {
			for _, rg := range ranges {
				rg[1] = min(rg[1], size-rg[0])
				src := newMemSource(t, data)
				r, err := NewReader(ctx, src, src.id)
				if err != nil {
					t.Fatal(err)
				}
				src.tamper = func(_, _ uint64, enc []byte) []byte { return tc.fn(enc) }
				p := bytes.Repeat([]byte{0xAA}, rg[1])
				n, err := r.ReadAt(p, int64(rg[0]))
				// A range within the last group is served from NewReader's
				// verified copy, without a fetch.
				if int64(rg[0]) >= r.Size()-int64(len(r.tail)) {
					if err != nil || !bytes.Equal(p, data[rg[0]:rg[0]+rg[1]]) {
						t.Errorf("size %d %s [%d,+%d): tail read %v", size, tc.name, rg[0], rg[1], err)
					}
					continue
				}
				if n != 0 || !errors.Is(err, tc.want) {
					t.Errorf("size %d %s [%d,+%d): ReadAt = %d, %v; want %v", size, tc.name, rg[0], rg[1], n, err, tc.want)
				}
				if !isZero(p) {
					t.Errorf("size %d %s [%d,+%d): destination not cleared", size, tc.name, rg[0], rg[1])
				}
			}
			// The same at NewReader, whose size is not yet known: any
			// change fails verification.
			src := newMemSource(t, data)
			src.tamper = func(_, _ uint64, enc []byte) []byte { return tc.fn(enc) }
			if _, err := NewReader(ctx, src, src.id); !errors.Is(err, ErrVerify) {
				t.Errorf("size %d %s: NewReader = %v, want ErrVerify", size, tc.name, err)
			}
			if err := Verify(ctx, src, src.id); !errors.Is(err, ErrVerify) {
				t.Errorf("size %d %s: Verify = %v, want ErrVerify", size, tc.name, err)
			}
		}

		// Tampered store contents.
		src := newMemSource(t, data)
		src.data = flip(data, size/2)
		if err := Verify(ctx, src, src.id); !errors.Is(err, ErrVerify) {
			t.Errorf("size %d: Verify of tampered data = %v", size, err)
		}
		src = newMemSource(t, data)
		src.outboard = flip(src.outboard, len(src.outboard)-1)
		if err := Verify(ctx, src, src.id); !errors.Is(err, ErrVerify) {
			t.Errorf("size %d: Verify of a tampered outboard = %v", size, err)
		}

		// A wrong root.
		src = newMemSource(t, data)
		wrong := src.id
		wrong[31] ^= 1
		if _, err := NewReader(ctx, anySource{src}, wrong); !errors.Is(err, ErrVerify) {
			t.Errorf("size %d: NewReader with a wrong root = %v", size, err)
		}
		if err := Verify(ctx, anySource{src}, wrong); !errors.Is(err, ErrVerify) {
			t.Errorf("size %d: Verify with a wrong root = %v", size, err)
		}
	}
}

// TestTamperEveryByte flips each byte of a slice in turn.
func TestTamperEveryByte(t *testing.T) {
	t.Parallel()
	data := randBytes(4*GroupSize+10, 8)
	id, ob := encode(t, data)
	for _, rg := range [][2]uint64{{0, uint64(len(data))}, {GroupSize + 1, GroupSize}, {tailOffset, 1}} {
		enc := extract(t, data, ob, rg[0], rg[1])
		tail := rg[0] == tailOffset
		// Without a proven size (tail), any change fails verification; with
		// one (as in Reader.ReadAt), a change of the header fails ErrSize.
		known := int64(len(data))
		if tail {
			known = -1
		}
		for i := range enc {
			if i >= 1024 && i < len(enc)-1024 && i%61 != 0 {
				continue
			}
			dst := bytes.Repeat([]byte{0xAA}, int(min(rg[1], uint64(len(data)))))
			enc[i] ^= 0x80
			_, err := decodeSlice(bytes.NewReader(enc), id, known, tail, rg[0], dst)
			enc[i] ^= 0x80
			if !(errors.Is(err, ErrVerify) || (i < headerSize && errors.Is(err, ErrSize))) || !isZero(dst) {
				t.Fatalf("range %v, byte %d flipped: %v", rg, i, err)
			}
		}
	}
}

// TestNoAllocationByClaimedSize feeds slices claiming huge sizes.
func TestNoAllocationByClaimedSize(t *testing.T) {
	data := randBytes(3*GroupSize, 1)
	id, _ := encode(t, data)
	for _, claim := range []uint64{1 << 62, math.MaxInt64, 1 << 63, math.MaxUint64} {
		enc := binary.LittleEndian.AppendUint64(nil, claim)
		enc = append(enc, randBytes(40*pairSize+GroupSize, claim)...)
		for _, tail := range []bool{true, false} {
			dst := make([]byte, 100)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := decodeSlice(bytes.NewReader(enc), id, -1, tail, 1<<40, dst)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrVerify) {
				t.Errorf("claim %d: %v", claim, err)
			}
			if d := after.TotalAlloc - before.TotalAlloc; d > 256<<10 {
				t.Errorf("claim %d: decoding allocated %d bytes", claim, d)
			}
		}
	}
}

func TestReaderConcurrent(t *testing.T) {
	t.Parallel()
	data := randBytes(2<<20+333, 10)
	src := newMemSource(t, data)
	r, err := NewReader(context.Background(), src, src.id)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 0))
			for range 20 {
				off := rng.IntN(len(data))
				n := rng.IntN(300 << 10)
				p := make([]byte, n)
				k, err := r.ReadAt(p, int64(off))
				if (err != nil && err != io.EOF) || !bytes.Equal(p[:k], data[off:min(off+n, len(data))]) {
					t.Errorf("ReadAt(%d, %d): %d, %v", off, n, k, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestVerify(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sizes := []int{0, 1, GroupSize, 5*GroupSize + 1, bulkMax - 1, bulkMax, bulkMax + 1}
	if !testing.Short() || isCI() {
		sizes = append(sizes, 2*bulkMax+3*GroupSize+5, 5*bulkMax)
	}
	for _, size := range sizes {
		data := randBytes(size, uint64(size)+11)
		src := newMemSource(t, data)
		if err := Verify(ctx, src, src.id, WithExpectedSize(int64(size))); err != nil {
			t.Errorf("size %d: Verify: %v", size, err)
		}
		if err := Verify(ctx, src, src.id, WithExpectedSize(int64(size)+1)); !errors.Is(err, ErrSize) {
			t.Errorf("size %d: Verify with a wrong expected size: %v", size, err)
		}
		if size > 0 {
			bad := newMemSource(t, data)
			bad.data = flip(data, size-1)
			if err := Verify(ctx, bad, bad.id); !errors.Is(err, ErrVerify) {
				t.Errorf("size %d: Verify of a changed last byte: %v", size, err)
			}
		}
	}
	src := newMemSource(t, randBytes(100, 1))
	var other storageid.ID
	if err := Verify(ctx, src, other); !errors.Is(err, errTestNotFound) {
		t.Errorf("unknown id: %v", err)
	}
}

// TestVerifyBoundedMemory checks that Verify does not hold the object.
func TestVerifyBoundedMemory(t *testing.T) {
	slow(t)
	data := randBytes(64<<20, 12)
	src := newMemSource(t, data)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if err := Verify(context.Background(), src, src.id); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if d := after.TotalAlloc - before.TotalAlloc; d > bulkMax+(1<<20) {
		t.Errorf("verifying 64 MiB allocated %d bytes", d)
	}
}

func TestVerifyReader(t *testing.T) {
	t.Parallel()
	data := randBytes(100000, 13)
	id := storageid.Sum(data)
	if err := VerifyReader(bytes.NewReader(data), id); err != nil {
		t.Fatal(err)
	}
	if err := VerifyReader(bytes.NewReader(data[1:]), id); !errors.Is(err, ErrVerify) {
		t.Fatalf("VerifyReader of other bytes: %v", err)
	}
}

// TestReaderAtTail: a range that starts before the last group and reaches
// into it fetches only the groups before it (the last group is NewReader's
// verified copy), and the bytes are the object's; a damaged fetch still
// fails and clears the whole destination, the copied tail included.
func TestReaderAtTail(t *testing.T) {
	ctx := context.Background()
	for _, size := range []int{2*GroupSize + 1, 3*GroupSize - 7, 5 * GroupSize} {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(i*7 + i>>11)
		}
		src := newMemSource(t, data)
		r, err := NewReader(ctx, src, src.id)
		if err != nil {
			t.Fatal(err)
		}
		tailStart := r.Size() - int64(len(r.tail))
		var asked [][2]uint64
		src.tamper = func(off, n uint64, enc []byte) []byte {
			asked = append(asked, [2]uint64{off, n})
			return enc
		}
		for _, off := range []int64{tailStart - 1, tailStart - GroupSize - 3, 0} {
			p := make([]byte, r.Size()-off+5)
			asked = asked[:0]
			n, err := r.ReadAt(p, off)
			if n != int(r.Size()-off) || err != io.EOF || !bytes.Equal(p[:n], data[off:]) {
				t.Fatalf("size %d: ReadAt at %d = %d, %v", size, off, n, err)
			}
			if len(asked) != 1 || asked[0][0] != uint64(off) || asked[0][0]+asked[0][1] != uint64(tailStart) {
				t.Errorf("size %d: ReadAt at %d asked for %v; want [%d, %d)", size, off, asked, off, tailStart)
			}
		}
		src.tamper = func(_, _ uint64, enc []byte) []byte {
			enc = bytes.Clone(enc)
			enc[len(enc)-1] ^= 1
			return enc
		}
		p := bytes.Repeat([]byte{0xAA}, int(r.Size()-tailStart+1))
		if n, err := r.ReadAt(p, tailStart-1); n != 0 || !errors.Is(err, ErrVerify) || !isZero(p) {
			t.Errorf("size %d: damaged ReadAt = %d, %v, cleared %v", size, n, err, isZero(p))
		}
	}
}
