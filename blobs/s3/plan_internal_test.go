package s3

import (
	"bytes"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/sovm/sop-pme/verify"
)

// TestPlanRuns: the runs a plan fetches hold every pair its ranges need,
// in increasing order without overlap, and read through gaps only within
// the slack (or fetch the whole outboard when it fits); chainedAll accepts
// them as fetched from the Hasher's outboard, and refuses them with any
// reachable pair's byte flipped.
func TestPlanRuns(t *testing.T) {
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:], 9)
	rng := rand.NewChaCha8(seed)
	r := rand.New(rand.NewPCG(3, 4))
	for _, size := range []uint64{3*verify.GroupSize + 7, 1000*verify.GroupSize + 1, 4 << 20} {
		data := make([]byte, size)
		rng.Read(data)
		var h verify.Hasher
		h.Write(data)
		id, _ := h.Sum()
		var obuf bytes.Buffer
		if err := h.WriteOutboard(&obuf); err != nil {
			t.Fatal(err)
		}
		ob := obuf.Bytes()
		obSize := uint64(len(ob))
		total := numGroups(size)
		for trial := range 50 {
			var groups []span
			for range 1 + r.IntN(8) {
				g0 := r.Uint64N(total)
				groups = append(groups, span{g0, 1 + r.Uint64N(min(total-g0, 20))})
			}
			slack := r.Uint64N(obSize + 1)
			runs := planRuns(size, obSize, groups, slack, nil)
			var needed []span
			var neededBytes uint64
			for _, g := range groups {
				for _, n := range neededPairs(size, g.off, g.off+g.n) {
					needed = append(needed, n)
					neededBytes += n.n
				}
			}
			if len(needed) == 0 {
				if runs != nil {
					t.Fatalf("size %d trial %d: runs %v for no pairs", size, trial, runs)
				}
				continue
			}
			var fetched uint64
			for i, x := range runs {
				if i > 0 && x.off <= runs[i-1].off+runs[i-1].n {
					t.Fatalf("size %d trial %d: runs %v overlap or touch", size, trial, runs)
				}
				if x.off+x.n > obSize {
					t.Fatalf("size %d trial %d: run %v beyond the outboard", size, trial, x)
				}
				fetched += x.n
			}
			for _, n := range needed {
				covered := false
				for _, x := range runs {
					covered = covered || (x.off <= n.off && n.off+n.n <= x.off+x.n)
				}
				if !covered {
					t.Fatalf("size %d trial %d: needed %v not in runs %v", size, trial, n, runs)
				}
			}
			if fetched > neededBytes && fetched > slack {
				t.Fatalf("size %d trial %d: %d bytes fetched, slack %d, needed %d", size, trial, fetched, slack, neededBytes)
			}
			segs := make([]segment, len(runs))
			for i, x := range runs {
				segs[i] = segment{x.off, bytes.Clone(ob[x.off : x.off+x.n])}
			}
			if !chainedAll(id, size, &sparse{segs: segs}) {
				t.Fatalf("size %d trial %d: the Hasher's pairs do not chain", size, trial)
			}
			// A flipped byte in a needed pair: every needed pair is
			// reachable (its ancestors are needed too).
			n := needed[r.IntN(len(needed))]
			at := n.off + r.Uint64N(n.n)
			for i, x := range runs {
				if x.off <= at && at < x.off+x.n {
					segs[i].b[at-x.off] ^= 1
				}
			}
			if chainedAll(id, size, &sparse{segs: segs}) {
				t.Fatalf("size %d trial %d: a flipped byte at %d of the outboard chained", size, trial, at)
			}
		}
	}
}

// TestPieces: the spool of a small import reads back as what was written,
// at every offset and across pieces, empty writes included.
func TestPieces(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var ps pieces
	var want []byte
	for range 40 {
		b := make([]byte, r.IntN(3)*r.IntN(5000))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		ps.add(b)
		want = append(want, b...)
	}
	for range 2000 {
		off := r.IntN(len(want) + 10)
		p := make([]byte, r.IntN(9000))
		n, err := ps.ReadAt(p, int64(off))
		end := min(len(want), off+len(p))
		if off >= len(want) {
			end = off
		}
		if n != end-off || !bytes.Equal(p[:n], want[off:end]) {
			t.Fatalf("ReadAt(%d bytes, %d) = %d, %v", len(p), off, n, err)
		}
		if (n < len(p)) != (err == io.EOF) {
			t.Fatalf("ReadAt(%d bytes, %d) = %d, %v", len(p), off, n, err)
		}
	}
}
