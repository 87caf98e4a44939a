//go:build iroh

package iroh

import (
	"errors"
	"testing"

	"github.com/sovm/sop-pme/blobs"
)

// TestPendingErrClosed checks the blobs.Pending contract: "After Commit
// (successful or not) or Abort, Write and Commit fail with an error matching
// ErrClosed." The iroh pending returns plain errors.New values instead.
func TestPendingErrClosed(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := openStore(t, t.TempDir())

	p, err := s.Create(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Write([]byte("x")); !errors.Is(err, blobs.ErrClosed) {
		t.Errorf("Write after Commit = %v, want an error matching blobs.ErrClosed", err)
	}
	if _, err := p.Commit(ctx); !errors.Is(err, blobs.ErrClosed) {
		t.Errorf("Commit after Commit = %v, want an error matching blobs.ErrClosed", err)
	}

	q, err := s.Create(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Abort(); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Write([]byte("x")); !errors.Is(err, blobs.ErrClosed) {
		t.Errorf("Write after Abort = %v, want an error matching blobs.ErrClosed", err)
	}
	if _, err := q.Commit(ctx); !errors.Is(err, blobs.ErrClosed) {
		t.Errorf("Commit after Abort = %v, want an error matching blobs.ErrClosed", err)
	}
}

// TestSizeOfPartialBlobUnverified: Store.Size is documented as "proven
// by verifying its last chunk". For a partial blob whose size iroh-blobs has
// not validated (B fetched only the first group from A), sop_iroh_verified_size
// maps its group range through chunk_ranges(groups, None), where
// (u64::MAX-1)*16 and u64::MAX*16 both saturate to u64::MAX: the chunk range
// is empty, export_bao sends only its Size item (the size header the remote
// claimed), and Size returns it with nothing verified.
func TestSizeOfPartialBlobUnverified(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	a := openStore(t, t.TempDir())
	b := openStore(t, t.TempDir())
	data := randBytes(900, 1<<20+17)
	id, err := a.ImportBytes(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	addr, err := a.Serve(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// B fetches group 0 only: this does not prove the size.
	if _, err := b.Fetch(ctx, addr, id, 0, 1); err != nil {
		t.Fatal(err)
	}
	// B cannot export (so cannot have verified) the last group.
	if rc, err := b.Slice(ctx, id, uint64(len(data))-1, 1); err == nil {
		rc.Close()
		t.Fatal("B holds the last group after fetching group 0: the precondition of this test does not hold")
	}
	sz, err := b.Size(ctx, id)
	if err == nil {
		t.Fatalf("Size of a blob whose last chunk B does not hold = %d, nil; want an error (nothing was verified: the size is the remote's claim)", sz)
	}
}
