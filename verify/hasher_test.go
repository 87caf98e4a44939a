package verify

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"lukechampine.com/blake3"
	"lukechampine.com/blake3/bao"

	"github.com/sovm/sop-pme/storageid"
)

// testSizes are blob sizes around every group and tree boundary that
// matters, plus random ones.
func testSizes(t testing.TB) []int {
	sizes := []int{
		0, 1, 63, 64, 65, 1023, 1024, 1025, 2048, 16383, 16384, 16385,
		32767, 32768, 32769, 3*16384 + 7, 4 * 16384, 4*16384 + 1,
		17 * 16384, parallelMin - 1, parallelMin, parallelMin + 16385,
		1<<20 + 1,
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 6 {
		sizes = append(sizes, rng.IntN(3<<20))
	}
	return sizes
}

// baoOutboard returns lukechampine's outboard encoding of data with 16 KiB
// groups, without its 8-byte size prefix, and the root.
func baoOutboard(data []byte) ([]byte, storageid.ID) {
	ob, root := bao.EncodeBuf(data, 4, true)
	return ob[8:], root
}

func TestHasherMatchesBao(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	for _, size := range testSizes(t) {
		data := randBytes(size, uint64(size))
		wantOB, wantRoot := baoOutboard(data)
		if sum := storageid.ID(blake3.Sum256(data)); wantRoot != sum {
			t.Fatalf("size %d: bao root differs from blake3.Sum256", size)
		}
		for trial := range 3 {
			var h Hasher
			rest := data
			for len(rest) > 0 {
				var k int
				switch trial {
				case 0:
					k = len(rest) // one write
				case 1:
					k = 1 + rng.IntN(min(len(rest), 40000))
				default:
					k = 1 + rng.IntN(min(len(rest), 3*GroupSize)) // small and group-sized writes
					if rng.IntN(2) == 0 {
						k = min(len(rest), GroupSize*(1+rng.IntN(4)))
					}
				}
				if n, err := h.Write(rest[:k]); n != k || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
				rest = rest[k:]
			}
			root, n := h.Sum()
			if root != wantRoot || n != uint64(size) {
				t.Errorf("size %d trial %d: Sum = %s, %d; want %s", size, trial, root, n, wantRoot)
			}
			var ob bytes.Buffer
			if err := h.WriteOutboard(&ob); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(ob.Bytes(), wantOB) {
				t.Errorf("size %d trial %d: outboard differs from bao.Encode's", size, trial)
			}
			if uint64(ob.Len()) != OutboardSize(uint64(size)) {
				t.Errorf("size %d: outboard has %d bytes, OutboardSize says %d", size, ob.Len(), OutboardSize(uint64(size)))
			}
		}
	}
}

// TestHasherSumKeepsState checks that Sum and WriteOutboard can be called
// mid-stream.
func TestHasherSumKeepsState(t *testing.T) {
	t.Parallel()
	data := randBytes(5*GroupSize+99, 9)
	var h Hasher
	for i, cut := range []int{0, 100, GroupSize, 2*GroupSize + 5, len(data)} {
		prev := 0
		if i > 0 {
			prev = []int{0, 100, GroupSize, 2*GroupSize + 5, len(data)}[i-1]
		}
		h.Write(data[prev:cut])
		root, n := h.Sum()
		if want := storageid.Sum(data[:cut]); root != want || n != uint64(cut) {
			t.Errorf("after %d bytes: Sum = %s, %d; want %s", cut, root, n, want)
		}
		var ob bytes.Buffer
		h.WriteOutboard(&ob)
		if want, _ := baoOutboard(data[:cut]); !bytes.Equal(ob.Bytes(), want) {
			t.Errorf("after %d bytes: outboard differs", cut)
		}
	}
}

type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	if w.n < len(p) {
		k := w.n
		w.n = 0
		return k, errFail
	}
	w.n -= len(p)
	return len(p), nil
}

func TestWriteOutboardError(t *testing.T) {
	t.Parallel()
	var h Hasher
	h.Write(randBytes(4<<20, 1))
	if err := h.WriteOutboard(&failWriter{n: 1000}); err != errFail {
		t.Fatalf("WriteOutboard to a failing writer = %v", err)
	}
}
