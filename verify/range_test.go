package verify

import (
	"context"
	"errors"
	"testing"
)

// TestRangeError: a failed verification says where, as a *RangeError that
// matches ErrVerify: Verify names the first 16 KiB group whose bytes do not
// match (within a bulk-hashed subtree of up to 8 MiB as well as past one),
// or the first range whose parent pair in the outboard does not; a Reader
// names the group it read. Before, Verify said only "bytes [0, 8388608) do
// not match" for any byte altered in the first 8 MiB.
func TestRangeError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	size := 2*bulkMax + 5*GroupSize + 123 // bulk subtrees, a node above them, a short last group
	data := randBytes(size, 7)
	cases := []struct {
		name   string
		flip   []int // data bytes altered
		pair   int   // parent pair altered in the outboard (-1: none)
		off    uint64
		n      uint64
		proof  bool
		readAt int64 // a ReadAt of one byte here fails with the same range
	}{
		{"first byte", []int{0}, -1, 0, GroupSize, false, 0},
		{"in a bulk subtree", []int{3*GroupSize + 17, 9 * GroupSize}, -1, 3 * GroupSize, GroupSize, false, 3*GroupSize + 1},
		{"second bulk subtree", []int{bulkMax + 40*GroupSize + 5}, -1, bulkMax + 40*GroupSize, GroupSize, false, bulkMax + 40*GroupSize},
		{"past the bulk subtrees", []int{2*bulkMax + 2*GroupSize}, -1, 2*bulkMax + 2*GroupSize, GroupSize, false, 2*bulkMax + 2*GroupSize},
		{"last short group", []int{size - 1}, -1, 2*bulkMax + 5*GroupSize, 123, false, int64(size - 1)},
		{"two, names the first", []int{bulkMax + 3, 5*GroupSize + 1}, -1, 5 * GroupSize, GroupSize, false, 5 * GroupSize},
	}
	// The outboard's parent pairs in pre-order: pair 0 is the root's, pair
	// 1 the root's left child's (the first 16 MiB... of which the first
	// bulk subtree is the left half), and so on down the left edge; the
	// deepest left pair covers groups 0 and 1.
	leftDepth := 0
	for n := uint64(size); n > GroupSize; n = split(n) {
		leftDepth++
	}
	cases = append(cases, struct {
		name   string
		flip   []int
		pair   int
		off    uint64
		n      uint64
		proof  bool
		readAt int64
	}{"a parent pair", nil, leftDepth - 1, 0, 2 * GroupSize, true, 0})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := newMemSource(t, data)
			src.data = append([]byte(nil), data...)
			for _, i := range c.flip {
				src.data[i] ^= 0x20
			}
			if c.pair >= 0 {
				src.outboard = append([]byte(nil), src.outboard...)
				src.outboard[c.pair*pairSize+3] ^= 1
			}
			err := Verify(ctx, src, src.id)
			var re *RangeError
			if !errors.Is(err, ErrVerify) || !errors.As(err, &re) {
				t.Fatalf("Verify: %v, want a *RangeError", err)
			}
			if re.Off != c.off || re.Len != c.n || re.Proof != c.proof {
				t.Errorf("Verify: %+v (%v), want [%d, %d) proof %v", *re, err, c.off, c.off+c.n, c.proof)
			}
			// The same through a Reader (one verified group at a time),
			// once the size is proven by an intact last group.
			if c.off+c.n == uint64(size) {
				return
			}
			r, err := NewReader(ctx, src, src.id)
			if err != nil {
				t.Fatal(err)
			}
			var b [1]byte
			_, err = r.ReadAt(b[:], c.readAt)
			re = nil
			if !errors.As(err, &re) || re.Off > uint64(c.readAt) || re.Off+re.Len <= uint64(c.readAt) {
				t.Errorf("ReadAt(%d): %v, want a *RangeError holding that byte", c.readAt, err)
			}
		})
	}
}
