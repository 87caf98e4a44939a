package verify

import (
	"context"
	"slices"
	"testing"

	"github.com/sovm/sop-pme/storageid"
)

type planSource struct {
	*memSource
	plans [][]Range
}

func (p *planSource) Plan(_ context.Context, _ storageid.ID, ranges []Range) {
	p.plans = append(p.plans, ranges)
}

// TestReaderPlan: Reader.Plan passes the ranges on to a Planner as
// ReadAtContext would ask for them: empty ranges and ranges within the
// verified last group left out, ranges reaching into it clipped to it;
// nothing at all when none is left, or when the Source is no Planner.
func TestReaderPlan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const size = 10*GroupSize + 100
	src := &planSource{memSource: newMemSource(t, randBytes(size, 1))}
	r, err := NewReader(ctx, src, src.id)
	if err != nil {
		t.Fatal(err)
	}
	tail := uint64(10 * GroupSize) // the last group's start
	r.Plan(ctx, []Range{{0, 5}, {7, 0}, {3 * GroupSize, GroupSize}, {tail - 10, 50}, {tail + 1, 5}, {size + 9, 1}, {1<<64 - 10, 20}})
	want := []Range{{0, 5}, {3 * GroupSize, GroupSize}, {tail - 10, 10}}
	if len(src.plans) != 1 || !slices.Equal(src.plans[0], want) {
		t.Fatalf("plans %v, want [%v]", src.plans, want)
	}
	r.Plan(ctx, []Range{{tail, 1}, {5, 0}})
	if len(src.plans) != 1 {
		t.Fatalf("a plan of nothing was passed on: %v", src.plans[1:])
	}
	// A Source that is no Planner: nothing happens.
	r2, err := NewReader(ctx, src.memSource, src.id)
	if err != nil {
		t.Fatal(err)
	}
	r2.Plan(ctx, want)
}
