package keyring_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/sovm/sop-pme/keyring"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
)

func ids(n int) []storageid.ID {
	out := make([]storageid.ID, n)
	for i := range out {
		out[i] = storageid.Sum([]byte(fmt.Sprint("object ", i)))
	}
	return out
}

func TestPutResolvePersist(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ring")
	kek := keyring.NewKEK()
	r := createRing(t, path, kek)
	objs := ids(5)
	deks := map[storageid.ID]pme.DEK{}
	for _, id := range objs {
		deks[id] = pme.NewDEK()
		if err := r.Put(ctx, id, deks[id]); err != nil {
			t.Fatal(err)
		}
	}
	r2 := openRing(t, path, kek)
	if n := ringLen(t, r2); n != 5 {
		t.Fatalf("reopened ring holds %d keys", n)
	}
	for _, id := range objs {
		got, err := r2.ResolveDEK(ctx, id)
		if err != nil || !got.Equal(deks[id]) {
			t.Fatalf("%s: %v", id, err)
		}
	}
	_, err := r2.ResolveDEK(ctx, storageid.Sum([]byte("unknown")))
	if !errors.Is(err, keyring.ErrNotFound) || !errors.Is(err, reader.ErrNoKey) {
		t.Fatalf("unknown id: %v", err)
	}
	// The file holds no DEK in the clear.
	raw, _ := os.ReadFile(path)
	for _, d := range deks {
		k := d.Bytes()
		if bytes.Contains(raw, k) || bytes.Contains(raw, []byte(hex.EncodeToString(k))) {
			t.Fatal("ring file holds a raw DEK")
		}
	}
	if err := r2.Delete(ctx, objs[0]); err != nil {
		t.Fatal(err)
	}
	if err := r2.Delete(ctx, objs[0]); err != nil {
		t.Fatalf("deleting an absent id: %v", err)
	}
	r3 := openRing(t, path, kek)
	if _, err := r3.ResolveDEK(ctx, objs[0]); !errors.Is(err, keyring.ErrNotFound) {
		t.Fatalf("deleted key: %v", err)
	}
	if n := ringLen(t, r3); n != 4 {
		t.Fatalf("after a delete the ring holds %d keys", n)
	}
	if err := r.Put(ctx, objs[1], pme.DEK{}); !errors.Is(err, pme.ErrNoKey) {
		t.Fatalf("Put of the zero DEK: %v", err)
	}
}

func TestWrongKEK(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ring")
	r := createRing(t, path, keyring.NewKEK())
	r.Put(context.Background(), ids(1)[0], pme.NewDEK())
	_, err := keyring.Open(context.Background(), path, keyring.NewKEK())
	if !errors.Is(err, keyring.ErrWrongKEK) || !errors.Is(err, keyring.ErrMaster) {
		t.Fatalf("Open with another KEK: %v", err)
	}
	_, err = keyring.Open(context.Background(), path, keyring.NewKEK(), keyring.WithCreate())
	if !errors.Is(err, keyring.ErrWrongKEK) {
		t.Fatalf("Open WithCreate of an existing ring with another KEK: %v", err)
	}
}

// editFile runs fn in a bbolt write transaction on the ring file, as an
// attacker with write access to it could.
func editFile(t *testing.T, path string, fn func(tx *bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
}

// TestMovedRecord moves a wrapped DEK in the file from one storage_id to
// another: it must not unwrap there (the storage_id is associated data).
func TestMovedRecord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ring")
	kek := keyring.NewKEK()
	r := createRing(t, path, kek)
	a, b := ids(2)[0], ids(2)[1]
	r.Put(ctx, a, pme.NewDEK())
	r.Put(ctx, b, pme.NewDEK())
	editFile(t, path, func(tx *bolt.Tx) error {
		d := tx.Bucket([]byte("deks"))
		return d.Put(b[:], bytes.Clone(d.Get(a[:])))
	})
	r2 := openRing(t, path, kek)
	if _, err := r2.ResolveDEK(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, err := r2.ResolveDEK(ctx, b); !errors.Is(err, keyring.ErrUnwrap) {
		t.Fatalf("moved record: %v", err)
	}
	// A re-key refuses to carry the damaged record, and changes nothing.
	before, _ := os.ReadFile(path)
	if err := r2.Rekey(ctx, nil); !errors.Is(err, keyring.ErrUnwrap) {
		t.Fatalf("Rekey over a damaged record: %v", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("a failed Rekey changed the file")
	}
	if _, err := r2.ResolveDEK(ctx, a); err != nil {
		t.Fatal(err)
	}
}

// ringKeyOf returns the wrapped ring key in the file.
func ringKeyOf(t *testing.T, path string) []byte {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var w []byte
	db.View(func(tx *bolt.Tx) error {
		w = bytes.Clone(tx.Bucket([]byte("meta")).Get([]byte("ring-key")))
		return nil
	})
	return w
}

func dekValues(t *testing.T, path string) map[string][]byte {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := map[string][]byte{}
	db.View(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("deks")).ForEach(func(k, v []byte) error {
			out[string(k)] = bytes.Clone(v)
			return nil
		})
	})
	return out
}

// TestRotateAndRekey: rotating the master rewrites the one wrapped ring key
// and no DEK; a re-key rewrites every DEK; both keep every DEK resolvable
// under the new master only.
func TestRotateAndRekey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ring")
	k1, k2, k3 := keyring.NewKEK(), keyring.NewKEK(), keyring.NewKEK()
	r := createRing(t, path, k1)
	objs := ids(50)
	deks := make([]pme.DEK, len(objs))
	var batch []keyring.Entry
	for i, id := range objs {
		deks[i] = pme.NewDEK()
		batch = append(batch, keyring.Entry{ID: id, DEK: deks[i]})
	}
	if err := r.PutBatch(ctx, batch); err != nil {
		t.Fatal(err)
	}
	resolveAll := func(r *keyring.Ring) {
		t.Helper()
		for i, id := range objs {
			if got, err := r.ResolveDEK(ctx, id); err != nil || !got.Equal(deks[i]) {
				t.Fatalf("%s: %v", id, err)
			}
		}
	}
	other := openRing(t, path, k1) // a second Ring with the ring key cached

	w0, v0 := ringKeyOf(t, path), dekValues(t, path)
	if err := r.Rotate(ctx, k2); err != nil {
		t.Fatal(err)
	}
	w1, v1 := ringKeyOf(t, path), dekValues(t, path)
	if bytes.Equal(w0, w1) {
		t.Fatal("Rotate left the wrapped ring key as it was")
	}
	for k, v := range v0 {
		if !bytes.Equal(v, v1[k]) {
			t.Fatal("Rotate rewrote a DEK")
		}
	}
	if _, err := keyring.Open(ctx, path, k1); !errors.Is(err, keyring.ErrWrongKEK) {
		t.Fatalf("the old KEK after Rotate: %v", err)
	}
	if err := other.Put(ctx, storageid.Sum([]byte("late")), pme.NewDEK()); !errors.Is(err, keyring.ErrWrongKEK) {
		t.Fatalf("a Put under the retired KEK: %v", err)
	}
	resolveAll(r)
	resolveAll(openRing(t, path, k2))

	if err := r.Rekey(ctx, k3); err != nil {
		t.Fatal(err)
	}
	v2 := dekValues(t, path)
	if len(v2) != len(v0) {
		t.Fatalf("Rekey left %d DEKs of %d", len(v2), len(v0))
	}
	for k, v := range v1 {
		if bytes.Equal(v, v2[k]) {
			t.Fatal("Rekey left a DEK wrapped as it was")
		}
	}
	if _, err := keyring.Open(ctx, path, k2); !errors.Is(err, keyring.ErrWrongKEK) {
		t.Fatalf("the old KEK after Rekey: %v", err)
	}
	resolveAll(r)
	resolveAll(openRing(t, path, k3))
	// Re-key under the same master.
	if err := r.Rekey(ctx, nil); err != nil {
		t.Fatal(err)
	}
	resolveAll(openRing(t, path, k3))
}

// TestPutAfterRekeyElsewhere: a Ring whose cached ring key was replaced by
// another Ring's re-key must wrap under the new ring key. Had it wrapped
// under the stale one, the DEK would not resolve, and the next re-key would
// fail.
func TestPutAfterRekeyElsewhere(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ring")
	kek := keyring.NewKEK()
	a := createRing(t, path, kek)
	b := openRing(t, path, kek)
	if err := b.Rekey(ctx, nil); err != nil {
		t.Fatal(err)
	}
	id, d := storageid.Sum([]byte("x")), pme.NewDEK()
	if err := a.Put(ctx, id, d); err != nil {
		t.Fatal(err)
	}
	if got, err := openRing(t, path, kek).ResolveDEK(ctx, id); err != nil || !got.Equal(d) {
		t.Fatalf("a DEK put after a re-key elsewhere: %v", err)
	}
	if err := b.Rekey(ctx, nil); err != nil {
		t.Fatalf("re-key after it: %v", err)
	}
}

// TestPutRacesRekey puts from goroutines through two Rings while a third
// Ring and a child process re-key the ring again and again.
func TestPutRacesRekey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ring")
	kek := keyring.NewKEK()
	createRing(t, path, kek)
	var a acked
	var wg sync.WaitGroup
	for g := range 2 {
		r := openRing(t, path, kek)
		wg.Go(func() { putMany(t, r, fmt.Sprint("racing ", g, " "), 40, &a) })
	}
	rk := openRing(t, path, kek)
	wg.Go(func() {
		for range 10 {
			if err := rk.Rekey(ctx, nil); err != nil {
				t.Errorf("rekey: %v", err)
				return
			}
		}
	})
	// Another Ring puts DEKs and deletes them again meanwhile.
	var gone []storageid.ID
	del := openRing(t, path, kek)
	wg.Go(func() {
		for i := range 20 {
			id := storageid.Sum([]byte(fmt.Sprint("deleted ", i)))
			if err := del.Put(ctx, id, pme.NewDEK()); err != nil {
				t.Errorf("put: %v", err)
				return
			}
			if err := del.Delete(ctx, id); err != nil {
				t.Errorf("delete: %v", err)
				return
			}
			gone = append(gone, id)
		}
	})
	children := runChildren(t, path, kek, 10, "rekey", "put")
	wg.Wait()
	for id, d := range children.deks {
		a.add(id, d)
	}
	a.check(t, path, kek)
	r := openRing(t, path, kek)
	for _, id := range gone {
		if _, err := r.ResolveDEK(ctx, id); !errors.Is(err, keyring.ErrNotFound) {
			t.Fatalf("a deleted DEK: %v", err)
		}
	}
	if len(gone) != 20 {
		t.Fatalf("%d deletions", len(gone))
	}
}

func TestOpenDoesNotCreate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "ring")
	for _, opts := range [][]keyring.Option{nil, {keyring.WithReadOnly()}} {
		_, err := keyring.Open(ctx, path, keyring.NewKEK(), opts...)
		if !errors.Is(err, keyring.ErrNoRing) || !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Open of a missing file: %v", err)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("Open created %v", ents)
	}
	if _, err := keyring.Open(ctx, path, keyring.NewKEK(), keyring.WithCreate(), keyring.WithReadOnly()); err == nil {
		t.Fatal("WithCreate and WithReadOnly together were accepted")
	}
	if _, err := keyring.Open(ctx, path, keyring.KEK{}, keyring.WithCreate()); !errors.Is(err, keyring.ErrKEK) {
		t.Fatalf("the zero KEK: %v", err)
	}
	if _, err := keyring.Open(ctx, path, nil, keyring.WithCreate()); !errors.Is(err, keyring.ErrKEK) {
		t.Fatalf("no master: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("a refused Open created %v", ents)
	}
	createRing(t, path, keyring.NewKEK())
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("created ring: %v, mode %v", err, st.Mode())
	}
	// An empty file (a creation cut short) is not a ring, but WithCreate
	// makes one in it.
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o600)
	if _, err := keyring.Open(ctx, empty, keyring.NewKEK()); !errors.Is(err, keyring.ErrFile) {
		t.Fatalf("an empty file: %v", err)
	}
	kek := keyring.NewKEK()
	createRing(t, empty, kek).Put(ctx, ids(1)[0], pme.NewDEK())
	if n := ringLen(t, openRing(t, empty, kek)); n != 1 {
		t.Fatalf("the ring made in an empty file holds %d DEKs", n)
	}
}

func TestReadOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ring")
	kek := keyring.NewKEK()
	id, d := ids(1)[0], pme.NewDEK()
	createRing(t, path, kek).Put(ctx, id, d)
	before, _ := os.ReadFile(path)
	ro, err := keyring.Open(ctx, path, kek, keyring.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ro.ResolveDEK(ctx, id); err != nil || !got.Equal(d) {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"Put":    ro.Put(ctx, ids(2)[1], pme.NewDEK()),
		"Delete": ro.Delete(ctx, id),
		"Rekey":  ro.Rekey(ctx, nil),
		"Rotate": ro.Rotate(ctx, keyring.NewKEK()),
	} {
		if !errors.Is(err, keyring.ErrReadOnly) {
			t.Errorf("%s on a read-only ring: %v", name, err)
		}
	}
	if _, err := ro.ImportV1(ctx, "testdata/v1/ring.json", keyring.NewKEK()); err == nil {
		t.Error("ImportV1 into a read-only ring succeeded")
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("a read-only ring changed the file")
	}
	// Readers share the lock: many resolve at once, from several Rings.
	var wg sync.WaitGroup
	for range 4 {
		r, err := keyring.Open(ctx, path, kek, keyring.WithReadOnly())
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			wg.Go(func() {
				for range 20 {
					if _, err := r.ResolveDEK(ctx, id); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
}

// TestLockTimeout holds the file's exclusive lock elsewhere: a write waits
// for the lock timeout and fails with ErrBusy, changing nothing; a context
// ends the wait too.
func TestLockTimeout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ring")
	kek := keyring.NewKEK()
	createRing(t, path, kek)
	r, err := keyring.Open(ctx, path, kek, keyring.WithLockTimeout(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, nil) // holds the exclusive lock while open
	if err != nil {
		t.Fatal(err)
	}
	id := ids(1)[0]
	if err := r.Put(ctx, id, pme.NewDEK()); !errors.Is(err, keyring.ErrBusy) {
		t.Fatalf("Put on a locked file: %v", err)
	}
	if _, err := r.ResolveDEK(ctx, id); !errors.Is(err, keyring.ErrBusy) {
		t.Fatalf("ResolveDEK on a locked file: %v", err)
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	if _, err := keyring.Open(ctx, path, kek, keyring.WithLockTimeout(100*time.Millisecond)); !errors.Is(err, keyring.ErrBusy) {
		t.Fatalf("Open of a locked file: %v", err)
	}
	if err := r.Put(cctx, id, pme.NewDEK()); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Put with an expiring context: %v", err)
	}
	db.Close()
	if err := r.Put(ctx, id, pme.NewDEK()); err != nil {
		t.Fatalf("Put after the lock was released: %v", err)
	}
	if n := ringLen(t, r); n != 1 {
		t.Fatalf("the ring holds %d DEKs", n)
	}
}

func TestBadOptions(t *testing.T) {
	t.Parallel()
	if _, err := keyring.Open(context.Background(), "x", keyring.NewKEK(), keyring.WithLockTimeout(0)); err == nil {
		t.Fatal("a zero lock timeout was accepted")
	}
	if _, err := keyring.KEKFromBytes(make([]byte, 31)); !errors.Is(err, keyring.ErrKEK) {
		t.Fatal(err)
	}
}
