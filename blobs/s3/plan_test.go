package s3_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/sovm/sop-pme/blobs/s3"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
)

// planObject is a 65 MiB object (outboard 260 KiB, over the 256 KiB that
// a slice fetches whole) and 16 ranges of it, 4 MiB apart.
func planObject(t *testing.T, st *s3.Store, seed uint64) ([]byte, storageid.ID, []verify.Range) {
	t.Helper()
	data := randBytes(65<<20, seed)
	id, err := importBytes(context.Background(), st, data)
	if err != nil {
		t.Fatal(err)
	}
	var ranges []verify.Range
	for i := range 16 {
		ranges = append(ranges, verify.Range{Off: uint64(i)<<22 + 1000, N: 100 << 10})
	}
	return data, id, ranges
}

// readPlanned reads ranges through vr in order and reports which failed;
// a range that failed must have failed verification and left nothing in
// the buffer, one that did not must hold the object's bytes.
func readPlanned(t *testing.T, ctx context.Context, vr *verify.Reader, data []byte, ranges []verify.Range) (failed []int) {
	t.Helper()
	for i, r := range ranges {
		p := make([]byte, r.N)
		n, err := vr.ReadAtContext(ctx, p, int64(r.Off))
		if err != nil {
			if !errors.Is(err, verify.ErrVerify) {
				t.Fatalf("range %d: %v, want nil or ErrVerify", i, err)
			}
			if n != 0 || slices.ContainsFunc(p, func(b byte) bool { return b != 0 }) {
				t.Fatalf("range %d failed but released %d bytes", i, n)
			}
			failed = append(failed, i)
			continue
		}
		if !bytes.Equal(p, data[r.Off:r.Off+r.N]) {
			t.Fatalf("range %d: wrong bytes", i)
		}
	}
	return failed
}

// TestPlan: after verify.Reader.Plan, the planned ranges are read with
// one data GET each and no HEAD, their parent pairs with a single GET (the
// whole 260 KiB outboard, which is within the slack of 2 groups a range),
// several data GETs are in flight at once behind a proxy that adds 20 ms
// to every request, and a plan whose reader stops early leaves no request
// open once its context ends.
func TestPlan(t *testing.T) {
	srv := startServer(t)
	ctx := context.Background()
	data, id, ranges := planObject(t, srv.open(t), 1)

	px := startProxy(t, srv.endpoint)
	px.delay.Store(int64(20 * time.Millisecond))
	st, err := s3.Open(ctx, storeURL(px.url), creds())
	if err != nil {
		t.Fatal(err)
	}
	opened := px.counts() // Open's HEAD of the bucket
	vr, err := verify.NewReader(ctx, st, id)
	if err != nil {
		t.Fatal(err)
	}
	if c := px.counts().sub(opened); c.heads != 0 || c.dataGets != 1 {
		t.Fatalf("NewReader: %d HEADs, %d data GETs; want 0 and 1 (the size from the suffix GET)", c.heads, c.dataGets)
	}
	pctx, cancel := context.WithCancel(ctx)
	before := px.counts()
	px.maxDataInFlight.Store(0)
	vr.Plan(pctx, ranges)
	if failed := readPlanned(t, pctx, vr, data, ranges); len(failed) > 0 {
		t.Fatalf("ranges %v failed", failed)
	}
	c := px.counts().sub(before)
	cancel()
	t.Logf("planned reads: %d data GETs, %d outboard GETs (%d bytes), %d HEADs, most data GETs in flight %d",
		c.dataGets, c.obGets, c.obBytes, c.heads, px.maxDataInFlight.Load())
	if c.dataGets != int64(len(ranges)) || c.obGets != 1 || c.heads != 0 || c.other != 0 {
		t.Errorf("%d data GETs, %d outboard GETs, %d HEADs, %d other; want %d, 1, 0, 0", c.dataGets, c.obGets, c.heads, c.other, len(ranges))
	}
	if m := px.maxDataInFlight.Load(); m < 4 {
		t.Errorf("at most %d data GETs in flight; want at least 4 (8 planned ahead)", m)
	}

	// A reader that stops after two ranges: the GETs sent ahead end with
	// its context.
	pctx, cancel = context.WithCancel(ctx)
	vr.Plan(pctx, ranges)
	readPlanned(t, pctx, vr, data, ranges[:2])
	cancel()
	deadline := time.Now().Add(10 * time.Second)
	for px.inFlight.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := px.inFlight.Load(); n > 0 {
		t.Fatalf("%d requests still open 10 s after the plan's context ended", n)
	}
}

// TestPlanLyingServer: what a plan fetches ahead is verified like every
// slice. A flipped data byte in a range fetched ahead fails that range
// alone, with ErrVerify and nothing released; a flipped parent pair in
// the outboard makes the plan's pairs not chain to the storage_id, so the
// plan keeps none, and the reads that need that pair fail while the others
// (through pairs the store had kept) succeed.
func TestPlanLyingServer(t *testing.T) {
	srv := startServer(t)
	ctx := context.Background()
	st := srv.open(t)
	data, id, ranges := planObject(t, st, 2)
	vr, err := verify.NewReader(ctx, srv.open(t), id)
	if err != nil {
		t.Fatal(err)
	}
	// A data byte of range 5.
	flipByte(t, srv.path(id.String()+".data"), int64(ranges[5].Off+777))
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	vr.Plan(pctx, ranges)
	if failed := readPlanned(t, pctx, vr, data, ranges); !slices.Equal(failed, []int{5}) {
		t.Fatalf("ranges %v failed, want [5]", failed)
	}
	flipByte(t, srv.path(id.String()+".data"), int64(ranges[5].Off+777)) // repaired

	// The pair of the root's left child, on the path of every range but
	// the last MiB's: the pairs a fresh store learnt proving the size (the
	// root's, the right spine's) are kept, and the plan's do not chain.
	const leftChild = 64
	flipByte(t, srv.path(id.String()+".obao4"), leftChild+3)
	vr, err = verify.NewReader(ctx, srv.open(t), id)
	if err != nil {
		t.Fatal(err)
	}
	tail := verify.Range{Off: 64<<20 + 5, N: 1000} // in the last MiB: the right spine only
	pctx2, cancel2 := context.WithCancel(ctx)
	defer cancel2()
	all := append(slices.Clone(ranges), tail)
	vr.Plan(pctx2, all)
	failed := readPlanned(t, pctx2, vr, data, all)
	if want := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}; !slices.Equal(failed, want) {
		t.Fatalf("ranges %v failed, want %v (all but the last MiB's)", failed, want)
	}
}
