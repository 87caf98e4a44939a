package keyring_test

import (
	"context"
	"crypto/rand"
	"errors"
	"path/filepath"
	"testing"

	"github.com/sovm/sop-pme/keyring"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/storageid"
)

func randomID(t *testing.T) storageid.ID {
	t.Helper()
	var id storageid.ID
	if _, err := rand.Read(id[:]); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestAdd checks that Add adds what is missing, keeps what is held and
// equal, and refuses, whole, a batch that would replace a DEK.
func TestAdd(t *testing.T) {
	ctx := context.Background()
	r := createRing(t, filepath.Join(t.TempDir(), "ring"), keyring.NewKEK())
	a, b, c := randomID(t), randomID(t), randomID(t)
	da, db, dc := pme.NewDEK(), pme.NewDEK(), pme.NewDEK()
	if err := r.Put(ctx, a, da); err != nil {
		t.Fatal(err)
	}
	n, err := r.Add(ctx, []keyring.Entry{{ID: a, DEK: da}, {ID: b, DEK: db}, {ID: b, DEK: db}})
	if err != nil || n != 1 {
		t.Fatalf("add: %d, %v; want 1 added", n, err)
	}
	// Again: nothing added, nothing changed.
	if n, err := r.Add(ctx, []keyring.Entry{{ID: a, DEK: da}, {ID: b, DEK: db}}); err != nil || n != 0 {
		t.Fatalf("add again: %d, %v; want 0", n, err)
	}
	// A different DEK for a: refused, and c is not added either.
	_, err = r.Add(ctx, []keyring.Entry{{ID: c, DEK: dc}, {ID: a, DEK: pme.NewDEK()}})
	if !errors.Is(err, keyring.ErrConflict) {
		t.Fatalf("conflicting add: %v, want ErrConflict", err)
	}
	// Two different DEKs for one id in one batch: refused.
	if _, err := r.Add(ctx, []keyring.Entry{{ID: c, DEK: dc}, {ID: c, DEK: pme.NewDEK()}}); !errors.Is(err, keyring.ErrConflict) {
		t.Fatalf("add of two DEKs for one id: %v, want ErrConflict", err)
	}
	if got := ringLen(t, r); got != 2 {
		t.Fatalf("%d DEKs after refused adds, want 2", got)
	}
	for id, want := range map[storageid.ID]pme.DEK{a: da, b: db} {
		if got, err := r.ResolveDEK(ctx, id); err != nil || !got.Equal(want) {
			t.Fatalf("%s: %v (or a different DEK)", id, err)
		}
	}
	if _, err := r.Add(ctx, []keyring.Entry{{ID: c}}); !errors.Is(err, pme.ErrNoKey) {
		t.Fatalf("add of the zero DEK: %v", err)
	}
}
