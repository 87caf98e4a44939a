package hostile

import (
	"math/rand/v2"
	"testing"

	"github.com/sovm/sop-pme/internal/pagebound/deltabp"
)

// TestDBPEncode: what the cases' DELTA_BINARY_PACKED encoder writes reads
// back (deltabp, which TestWalkArrowGo checks against arrow-go).
func TestDBPEncode(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 2, 33, 129, 200, 1000} {
		want := make([]int64, n)
		for i := range want {
			want[i] = int64(rng.Uint64()) >> rng.IntN(64)
		}
		var got []int64
		_, used, err := deltabp.Walk(dbpEncode(want), int64(n), func(v int64) { got = append(got, v) })
		if err != nil || used != len(dbpEncode(want)) {
			t.Fatalf("%d values: %v, %d bytes used", n, err, used)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%d values: value %d is %d, want %d", n, i, got[i], want[i])
			}
		}
	}
}
