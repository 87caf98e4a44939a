//go:build iroh

package iroh

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/internal/testkit/residue"
	"github.com/sovm/sop-pme/storageid"
)

// piecesIn returns the files under dir that hold a 64-byte piece of data
// (residue.Files): every regular file, the iroh-blobs database included.
func piecesIn(t testing.TB, dir string, data []byte) []string {
	t.Helper()
	hits, err := residue.Files(dir, data)
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

func openDeletable(t testing.TB, dir string) *Store {
	t.Helper()
	s, err := Open(testCtx(t), dir, WithDelete())
	if err != nil {
		t.Fatalf("Open(%s, WithDelete): %v", dir, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// TestDelete: a deleted object is no longer read, listed or served, and no
// file of the store holds its bytes (a blob over 16 KiB, with a data file
// and an outboard, and one under, which iroh-blobs would keep inline in its
// database by default); other objects stay; deleting is idempotent, and a
// store not opened WithDelete refuses it.
func TestDelete(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := openDeletable(t, t.TempDir())
	bigData := randBytes(900, 300<<10)
	smallData := randBytes(901, 3000)
	keepData := randBytes(902, 40<<10)
	var big, small, keep storageid.ID
	for _, x := range []struct {
		id   *storageid.ID
		data []byte
	}{{&big, bigData}, {&small, smallData}, {&keep, keepData}} {
		id, err := s.ImportBytes(ctx, x.data)
		if err != nil {
			t.Fatal(err)
		}
		*x.id = id
	}
	objs, err := s.Objects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []storageid.ID{big, small, keep}
	slices.SortFunc(want, func(a, b storageid.ID) int { return bytes.Compare(a[:], b[:]) })
	if !slices.Equal(objs, want) {
		t.Fatalf("Objects = %v, want %v", objs, want)
	}
	for _, d := range [][]byte{bigData, smallData} {
		if hits := piecesIn(t, s.IrohDir(), d); len(hits) == 0 {
			t.Fatal("the test cannot see an object's bytes in the store before Delete")
		}
	}
	// Served with an allow-list to one node, and every blob to another.
	addr, err := s.ServeOn(ctx, "", []storageid.ID{big, small, keep})
	if err != nil {
		t.Fatal(err)
	}
	r := openStore(t, t.TempDir())
	if _, err := r.Fetch(ctx, addr, big, 0, 1); err != nil {
		t.Fatalf("fetch before Delete: %v", err)
	}
	all := openDeletable(t, t.TempDir())
	if _, err := all.ImportBytes(ctx, bigData); err != nil {
		t.Fatal(err)
	}
	addrAll, err := all.Serve(ctx)
	if err != nil {
		t.Fatal(err)
	}

	if err := s.Delete(ctx, big, small); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	for _, id := range []storageid.ID{big, small} {
		if _, err := s.Slice(ctx, id, 0, 1); !errors.Is(err, blobs.ErrNotFound) {
			t.Errorf("Slice of a deleted object: %v, want blobs.ErrNotFound", err)
		}
		if _, err := s.Size(ctx, id); !errors.Is(err, blobs.ErrNotFound) {
			t.Errorf("Size of a deleted object: %v, want blobs.ErrNotFound", err)
		}
	}
	if hits := piecesIn(t, s.IrohDir(), bigData); len(hits) > 0 {
		t.Errorf("files holding the deleted object over 16 KiB: %v", hits)
	}
	if hits := piecesIn(t, s.IrohDir(), smallData); len(hits) > 0 {
		t.Errorf("files holding the deleted object under 16 KiB: %v", hits)
	}
	if got := readAll(t)(s.Slice(ctx, keep, 0, uint64(len(keepData)))); !bytes.Equal(got, wantSlice(t, keepData, 0, uint64(len(keepData)))) {
		t.Error("the object kept no longer reads")
	}
	if objs, err := s.Objects(ctx); err != nil || !slices.Equal(objs, []storageid.ID{keep}) {
		t.Errorf("Objects after Delete = %v, %v; want [%s]", objs, err, keep)
	}
	// Not served any more (a part the remote did not fetch before).
	if _, err := openStore(t, t.TempDir()).Fetch(ctx, addr, small, 0, 1); !errors.Is(err, blobs.ErrNotFound) {
		t.Errorf("fetch of a deleted object: %v, want blobs.ErrNotFound", err)
	}
	if _, err := r.Fetch(ctx, addr, keep, 0, 1); err != nil {
		t.Errorf("fetch of the object kept: %v", err)
	}

	// Idempotent, and an id never held is no error.
	if err := s.Delete(ctx, big, small); err != nil {
		t.Errorf("Delete again: %v", err)
	}
	if err := s.Delete(ctx, storageid.Sum([]byte("never imported"))); err != nil {
		t.Errorf("Delete of an absent id: %v", err)
	}
	if err := s.Delete(ctx); err != nil {
		t.Errorf("Delete of nothing: %v", err)
	}
	past, cancel := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer cancel()
	if err := s.Delete(past, keep); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Delete past its deadline: %v, want context.DeadlineExceeded", err)
	}

	// A node serving every blob stops serving a deleted one.
	if _, err := openStore(t, t.TempDir()).Fetch(ctx, addrAll, big, 0, 1); err != nil {
		t.Fatalf("fetch from the node serving all, before Delete: %v", err)
	}
	if err := all.Delete(ctx, big); err != nil {
		t.Fatal(err)
	}
	if _, err := openStore(t, t.TempDir()).Fetch(ctx, addrAll, big, 1<<40, 1); !errors.Is(err, blobs.ErrNotFound) {
		t.Errorf("fetch from the node serving all, after Delete: %v, want blobs.ErrNotFound", err)
	}

	// A deleted object can be imported again.
	if _, err := s.ImportBytes(ctx, smallData); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t)(s.Slice(ctx, small, 0, 1)); len(got) == 0 {
		t.Error("an object imported again does not read")
	}

	// Without WithDelete: refused, and the object stays.
	plain := openStore(t, t.TempDir())
	id, err := plain.ImportBytes(ctx, smallData)
	if err != nil {
		t.Fatal(err)
	}
	if err := plain.Delete(ctx, id); !isCode(err, CodeInvalid) {
		t.Errorf("Delete on a store opened without WithDelete: %v, want CodeInvalid", err)
	}
	if _, err := plain.Size(ctx, id); err != nil {
		t.Errorf("the object after a refused Delete: %v", err)
	}
}

// TestDeleteKeepsPartial: a blob fetched in part into a store opened
// WithDelete (untagged, as in a fetch cache) survives the collection that
// Delete runs, so that a fetch resumes from it.
func TestDeleteKeepsPartial(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	a := openStore(t, t.TempDir())
	data := randBytes(910, 200<<10)
	id, err := a.ImportBytes(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	addr, err := a.Serve(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b := openDeletable(t, t.TempDir())
	if _, err := b.Fetch(ctx, addr, id, 0, group); err != nil {
		t.Fatal(err)
	}
	other, err := b.ImportBytes(ctx, randBytes(911, 1000))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, other); err != nil {
		t.Fatal(err)
	}
	n, err := b.Fetch(ctx, addr, id, 0, group)
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("fetch of a group held before Delete read %d bytes, want 0 (the partial blob was collected)", n)
	}
	if got := readAll(t)(b.Slice(ctx, id, 0, group)); !bytes.Equal(got, wantSlice(t, data, 0, group)) {
		t.Error("the partial blob does not read after Delete")
	}
}
