package verify

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/sovm/sop-pme/storageid"
)

// TestLargeSubtrees exercises subtrees larger than bulkMax (the node
// path above bulk), reads straddling bulkMax boundaries, and Verify, on a blob
// of just over 2×bulkMax.
func TestLargeSubtrees(t *testing.T) {
	t.Parallel()
	if testing.Short() && os.Getenv("CI") == "" {
		t.Skip("-short, not under CI: large")
	}
	ctx := context.Background()
	size := 2*bulkMax + 3*GroupSize + 5
	data := randBytes(size, 99)
	src := newMemSource(t, data)
	r, err := NewReader(ctx, src, src.id, WithConcurrency(2))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range [][2]int{
		{0, size}, {bulkMax - 7, 20}, {bulkMax - GroupSize, 2 * GroupSize}, {1, bulkMax},
		{bulkMax, bulkMax}, {2*bulkMax - 1, 3*GroupSize + 6}, {size - GroupSize - 1, 2},
	} {
		p := make([]byte, c[1])
		n, err := r.ReadAt(p, int64(c[0]))
		want := data[c[0]:min(c[0]+c[1], size)]
		if (err != nil && err != io.EOF) || !bytes.Equal(p[:n], want) {
			t.Fatalf("ReadAt(%d, %d) = %d, %v", c[0], c[1], n, err)
		}
	}
	if err := Verify(ctx, src, src.id); err != nil {
		t.Fatal(err)
	}
	// One flipped byte deep in the second bulk subtree fails Verify.
	src.tamper = func(off, n uint64, enc []byte) []byte {
		enc = bytes.Clone(enc)
		enc[len(enc)-GroupSize*2] ^= 1
		return enc
	}
	if err := Verify(ctx, src, src.id); !errors.Is(err, ErrVerify) {
		t.Fatalf("tampered Verify = %v", err)
	}
}

// stalled is a Source whose slices return no bytes and no error, forever:
// a broken store. Reads through it fail instead of spinning.
type stalled struct{}

func (stalled) Slice(ctx context.Context, id storageid.ID, off, n uint64) (io.ReadCloser, error) {
	return io.NopCloser(zeroReader{}), nil
}

type zeroReader struct{}

func (zeroReader) Read([]byte) (int, error) { return 0, nil }

func TestStalledSource(t *testing.T) {
	t.Parallel()
	_, err := NewReader(context.Background(), stalled{}, storageid.Sum(nil))
	if !errors.Is(err, io.ErrNoProgress) {
		t.Fatalf("NewReader over a stalled source: %v, want io.ErrNoProgress", err)
	}
}
