package verify

import (
	"bytes"
	"errors"
	"io"
	"math"
	"runtime"
	"testing"

	"lukechampine.com/blake3/bao"
)

var errFail = errors.New("test: injected failure")

// sliceRanges returns byte ranges to test on a blob of size bytes.
func sliceRanges(size uint64) [][2]uint64 {
	g := uint64(GroupSize)
	rs := [][2]uint64{
		{0, 1}, {0, g}, {0, size + 1}, {0, math.MaxUint64}, {size, 1},
		{size + 5, 100}, {math.MaxInt64, 1}, {math.MaxUint64, math.MaxUint64},
		{g, g}, {g - 1, 2}, {g + 1, 3 * g}, {2 * g, 5 * g}, {3 * g, 64 * g},
		{size / 2, 1}, {size / 3, size / 3}, {size - min(size, 1), 1},
	}
	if size > 0 {
		rs = append(rs, [2]uint64{size - 1, 1}, [2]uint64{0, size})
	}
	return rs
}

// baoSlice returns bao.ExtractSlice's encoding of the groups a Source selects
// for [off, off+n).
func baoSlice(t *testing.T, data, outboard []byte, off, n uint64) []byte {
	t.Helper()
	size := uint64(len(data))
	g0, g1 := selectGroups(size, off, n)
	start, end := g0*GroupSize, min(g1*GroupSize, size)
	prefixed := append(le64(size), outboard...)
	var buf bytes.Buffer
	// bao needs 0 < off+len ≤ size: ask for the selected groups exactly.
	length := max(end-start, 1)
	if err := bao.ExtractSlice(&buf, bytes.NewReader(data[start:end]), bytes.NewReader(prefixed), 4, start, length); err != nil && size > 0 {
		t.Fatalf("bao.ExtractSlice(%d, %d): %v", start, length, err)
	}
	if size == 0 {
		return le64(0)
	}
	return buf.Bytes()
}

func le64(v uint64) []byte {
	var b [8]byte
	for i := range b {
		b[i] = byte(v >> (8 * i))
	}
	return b[:]
}

func TestExtractSliceMatchesBao(t *testing.T) {
	t.Parallel()
	for _, size := range testSizes(t) {
		data := randBytes(size, uint64(size)+1)
		id, ob := encode(t, data)
		for _, r := range sliceRanges(uint64(size)) {
			off, n := r[0], r[1]
			if n == 0 {
				continue
			}
			enc := extract(t, data, ob, off, n)
			if want := baoSlice(t, data, ob, off, n); !bytes.Equal(enc, want) {
				t.Fatalf("size %d [%d,+%d): slice (%d bytes) differs from bao's (%d bytes)", size, off, n, len(enc), len(want))
			}
			g0, g1 := selectGroups(uint64(size), off, n)
			start, end := g0*GroupSize, min(g1*GroupSize, uint64(size))
			if size > 0 {
				got, ok := bao.VerifySlice(enc, 4, start, end-start, id)
				if !ok || !bytes.Equal(got, data[start:end]) {
					t.Fatalf("size %d [%d,+%d): bao.VerifySlice rejects the slice", size, off, n)
				}
			}
			// Our decoder, for the whole selected groups.
			dst := make([]byte, end-start)
			if start < uint64(size) || size == 0 {
				if _, err := decodeSlice(bytes.NewReader(enc), id, int64(size), false, start, dst); err != nil || !bytes.Equal(dst, data[start:end]) {
					t.Fatalf("size %d [%d,+%d): decode: %v", size, off, n, err)
				}
			}
		}
	}
}

func TestExtractSliceErrors(t *testing.T) {
	t.Parallel()
	data := randBytes(3*GroupSize+5, 1)
	_, ob := encode(t, data)
	if _, err := ExtractSlice(bytes.NewReader(data), bytes.NewReader(ob), uint64(len(data)), 0, 0); err == nil {
		t.Error("ExtractSlice accepted n == 0")
	}
	if _, err := ExtractSlice(bytes.NewReader(data), bytes.NewReader(ob), 1<<63, 0, 1); err == nil {
		t.Error("ExtractSlice accepted a size of 2^63")
	}
	// A short outboard or data makes the reader fail, not hang or panic.
	for _, c := range []struct {
		name     string
		data, ob []byte
	}{
		{"short outboard", data, ob[:len(ob)-1]},
		{"no outboard", data, nil},
		{"short data", data[:len(data)-1], ob},
	} {
		r, err := ExtractSlice(bytes.NewReader(c.data), bytes.NewReader(c.ob), uint64(len(data)), 0, uint64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadAll(r); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("%s: read error %v, want io.ErrUnexpectedEOF", c.name, err)
		}
	}
}

// TestExtractSliceStreams checks that a slice of a whole blob is produced
// with memory independent of its size.
func TestExtractSliceStreams(t *testing.T) {
	slow(t)
	data := randBytes(64<<20, 2)
	_, ob := encode(t, data)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r, err := ExtractSlice(bytes.NewReader(data), bytes.NewReader(ob), uint64(len(data)), 0, uint64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.CopyBuffer(io.Discard, r, make([]byte, 32<<10))
	if err != nil || uint64(n) != headerSize+uint64(len(ob))+uint64(len(data)) {
		t.Fatalf("copied %d bytes, %v", n, err)
	}
	runtime.ReadMemStats(&after)
	if d := after.TotalAlloc - before.TotalAlloc; d > 1<<20 {
		t.Errorf("extracting a 64 MiB slice allocated %d bytes", d)
	}
}
