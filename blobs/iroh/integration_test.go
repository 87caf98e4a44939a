//go:build iroh

package iroh

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
)

// TestSameAsDirStore checks that the iroh store and the pure-Go directory
// store agree: the same storage_id and byte-identical slices.
func TestSameAsDirStore(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := openStore(t, t.TempDir())
	d, err := blobs.CreateDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range sizes {
		data := randBytes(uint64(700+i), n)
		var ids [2]storageid.ID
		for k, st := range []blobs.Store{s, d} {
			p, err := st.Create(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Write(data); err != nil {
				t.Fatal(err)
			}
			if ids[k], err = p.Commit(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if ids[0] != ids[1] || ids[0] != storageid.Sum(data) {
			t.Fatalf("size %d: iroh id %v, directory store id %v", n, ids[0], ids[1])
		}
		for _, r := range rangesFor(n) {
			got := readAll(t)(s.Slice(ctx, ids[0], r[0], r[1]))
			want := readAll(t)(d.Slice(ctx, ids[1], r[0], r[1]))
			if !bytes.Equal(got, want) {
				t.Fatalf("size %d, range %v: iroh and directory store slices differ", n, r)
			}
		}
	}
}

// TestVerifyReader reads through package verify from the iroh store, local
// and remote, as the reader does.
func TestVerifyReader(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	dirA := t.TempDir()
	a := openStore(t, dirA)
	b := openStore(t, t.TempDir())
	data := randBytes(800, 3<<20+5)
	id, err := a.ImportBytes(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	if err := verify.Verify(ctx, a, id); err != nil {
		t.Fatalf("verify.Verify over the iroh store: %v", err)
	}

	addr, err := a.Serve(ctx)
	if err != nil {
		t.Fatal(err)
	}
	remote := b.Remote(addr)
	for _, src := range []verify.Source{a, remote} {
		r, err := verify.NewReader(ctx, src, id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Size() != int64(len(data)) {
			t.Fatalf("Size = %d", r.Size())
		}
		for _, rg := range [][2]int{{0, 100}, {1 << 20, 70000}, {len(data) - 10, 10}, {12345, 1 << 20}} {
			p := make([]byte, rg[1])
			if _, err := r.ReadAt(p, int64(rg[0])); err != nil && err != io.EOF {
				t.Fatal(err)
			}
			if !bytes.Equal(p, data[rg[0]:rg[0]+rg[1]]) {
				t.Fatalf("ReadAt(%d, %d) differs", rg[0], rg[1])
			}
		}
	}
	// The projection above touched about 1.1 MiB of the 3 MiB object.
	t.Logf("remote reads received %d bytes of a %d-byte object", remote.BytesReceived(), len(data))
	if got := remote.BytesReceived(); got > 3<<19 {
		t.Fatalf("remote reads received %d bytes, more than the ranges need", got)
	}

	// A damaged store: verified reads touching the damage fail closed.
	const bad = 2<<20 + 77
	a = corrupt(t, dirA, a, id, bad)
	if err := verify.Verify(ctx, a, id); err == nil {
		t.Fatal("verify.Verify passed a corrupted object")
	}
	r, err := verify.NewReader(ctx, a, id)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 100)
	if n, err := r.ReadAt(p, bad-50); err == nil || n != 0 || !bytes.Equal(p, make([]byte, 100)) {
		t.Fatalf("ReadAt over the damage = %d, %v", n, err)
	} else if !errors.Is(err, ErrCorrupt) {
		t.Logf("ReadAt over the damage: %v", err)
	}
	if _, err := r.ReadAt(p, 0); err != nil {
		t.Fatalf("ReadAt away from the damage: %v", err)
	}
}
