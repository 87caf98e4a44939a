package keyring_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/sovm/sop-pme/keyring"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/storageid"
)

// The tests of this file search the raw bytes of the ring file for what a
// Delete, a Rekey, a Rotate or a replacing Put removed. bbolt never clears
// a page it frees, so before the ring zeroed its free pages, every one of
// them found what it looked for: the wrapped DEK of a deleted storage_id
// (which bbolt can write back without any key), the wrapped ring key that
// the retired KEK opens, and every DEK wrapped under the retired ring key.

// residue reports what the ring file at path holds outside the pages that
// its newest tree uses: the free pages that are not all zero, and whether
// the bytes past the last page bbolt uses are not all zero.
func residue(t testing.TB, path string) (pages []int, tail bool) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, PreLoadFreelist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ps := db.Info().PageSize
	err = db.View(func(tx *bolt.Tx) error {
		for id := 2; ; id++ {
			p, err := tx.Page(id)
			if err != nil {
				return err
			}
			if p == nil {
				break
			}
			if p.Type == "free" && !allZero(raw[id*ps:(id+1)*ps]) {
				pages = append(pages, id)
			}
		}
		tail = !allZero(raw[tx.Size():])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pages, tail
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// fileHolds fails the test if the ring file holds any of needles, naming
// each one it finds and its offset.
func fileHolds(t *testing.T, path, when string, needles map[string][]byte) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for name, n := range needles {
		if i := bytes.Index(raw, n); i >= 0 {
			found++
			if found <= 5 {
				t.Errorf("%s, the file (%d bytes) still holds %s at offset %d", when, len(raw), name, i)
			}
		}
	}
	if found > 0 {
		t.Errorf("%s: %d of %d removed values found in the file", when, found, len(needles))
	}
}

// mustHold checks that the search finds each needle before the change, so
// that a search that finds nothing afterwards means something.
func mustHold(t *testing.T, path string, needles map[string][]byte) {
	t.Helper()
	raw, _ := os.ReadFile(path)
	for name, n := range needles {
		if !bytes.Contains(raw, n) {
			t.Fatalf("before the change, the file does not hold %s: the search proves nothing", name)
		}
	}
}

// fillRing puts n DEKs, some in one batch and some one by one, so that the
// file has a history of freed pages, and returns the ids and DEKs.
func fillRing(t *testing.T, r *keyring.Ring, n int) ([]storageid.ID, []pme.DEK) {
	t.Helper()
	ctx := context.Background()
	objs := ids(n)
	deks := make([]pme.DEK, n)
	var batch []keyring.Entry
	for i, id := range objs {
		deks[i] = pme.NewDEK()
		if i < n/2 {
			batch = append(batch, keyring.Entry{ID: id, DEK: deks[i]})
			continue
		}
		if err := r.Put(ctx, id, deks[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.PutBatch(ctx, batch); err != nil {
		t.Fatal(err)
	}
	return objs, deks
}

// TestDeleteShreds: after Delete, the file holds neither the wrapped DEK
// nor the storage_id, anywhere; no free page holds anything.
func TestDeleteShreds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ring")
	kek := keyring.NewKEK()
	r := createRing(t, path, kek)
	objs, _ := fillRing(t, r, 300)
	vals := dekValues(t, path)
	for _, i := range []int{150, 0, 299} {
		id := objs[i]
		gone := map[string][]byte{"the wrapped DEK of " + id.String(): vals[string(id[:])]}
		mustHold(t, path, gone)
		gone["the storage_id "+id.String()] = id[:]
		if err := r.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
		fileHolds(t, path, "after Delete("+id.String()+")", gone)
	}
	if pages, tail := residue(t, path); len(pages) > 0 || tail {
		t.Errorf("after Delete, free pages %v hold bytes (past the last page: %v)", pages, tail)
	}
	// The other DEKs are untouched.
	if n := ringLen(t, r); n != 297 {
		t.Fatalf("%d DEKs left", n)
	}
}

// TestDeleteNoRollback rolls a copy of the ring file back one transaction by
// changing one byte: the newest meta page fails its checksum, so bbolt opens
// the tree of the transaction before the Delete. That tree must not give the
// deleted DEK back.
func TestDeleteNoRollback(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ring")
	kek := keyring.NewKEK()
	r := createRing(t, path, kek)
	objs, deks := fillRing(t, r, 100)
	id, d := objs[40], deks[40]
	if err := r.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The meta pages: page 0 and page 1; the page size is in the meta,
	// the txid at offset 16+48 of each.
	ne := binary.NativeEndian
	ps := int(ne.Uint32(raw[16+8:]))
	newest := 0
	if ne.Uint64(raw[ps+16+48:]) > ne.Uint64(raw[16+48:]) {
		newest = 1
	}
	raw[newest*ps+16+56] ^= 0xff // the checksum
	rolled := filepath.Join(t.TempDir(), "rolled")
	if err := os.WriteFile(rolled, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	ro, err := keyring.Open(ctx, rolled, kek, keyring.WithReadOnly())
	if err != nil {
		t.Logf("the rolled-back file does not open: %v", err)
		return
	}
	got, err := ro.ResolveDEK(ctx, id)
	if err == nil && got.Equal(d) {
		t.Fatal("the file rolled back one transaction gives the deleted DEK back")
	}
	t.Logf("the deleted DEK from the rolled-back file: %v", err)
}

// TestRekeyShreds: after Rekey, the file holds neither the wrapped ring
// key that the old master opens nor any DEK wrapped under the old ring
// key; no window of the file opens under the retired KEK. After Rotate,
// the same holds for the ring key wrapped under the retired master.
func TestRekeyShreds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ring")
	k1, k2, k3 := keyring.NewKEK(), keyring.NewKEK(), keyring.NewKEK()
	r := createRing(t, path, k1)
	fillRing(t, r, 300)
	old := map[string][]byte{"the wrapped ring key": ringKeyOf(t, path)}
	for k, v := range dekValues(t, path) {
		old["the old wrapping of the DEK of "+storageid.ID([]byte(k)).String()] = v
	}
	mustHold(t, path, old)
	if n := opensUnder(t, path, k1, len(old["the wrapped ring key"])); n == 0 {
		t.Fatal("the retired KEK opens no window of the file before the re-key: the search proves nothing")
	}
	if err := r.Rekey(ctx, k2); err != nil {
		t.Fatal(err)
	}
	fileHolds(t, path, "after Rekey", old)
	if n := opensUnder(t, path, k1, len(old["the wrapped ring key"])); n > 0 {
		t.Errorf("after Rekey, the retired KEK opens %d windows of the file", n)
	}
	if pages, tail := residue(t, path); len(pages) > 0 || tail {
		t.Errorf("after Rekey, free pages %v hold bytes (past the last page: %v)", pages, tail)
	}

	w := map[string][]byte{"the ring key wrapped under the retired master": ringKeyOf(t, path)}
	if err := r.Rotate(ctx, k3); err != nil {
		t.Fatal(err)
	}
	fileHolds(t, path, "after Rotate", w)
	if n := opensUnder(t, path, k2, len(w["the ring key wrapped under the retired master"])); n > 0 {
		t.Errorf("after Rotate, the retired KEK opens %d windows of the file", n)
	}
	if n := ringLen(t, openRing(t, path, k3)); n != 300 {
		t.Fatalf("%d DEKs after Rekey and Rotate", n)
	}
}

// opensUnder counts the windows of n bytes of the file, at every offset,
// that the KEK opens as a wrapped ring key.
func opensUnder(t *testing.T, path string, kek keyring.KEK, n int) int {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for i := 0; i+n <= len(raw); i++ {
		if raw[i] == 0 && allZero(raw[i:i+n]) {
			continue
		}
		if pt, err := kek.Decrypt(context.Background(), raw[i:i+n]); err == nil {
			found++
			clear(pt)
		}
	}
	return found
}

// TestReplaceShreds: a Put that replaces the DEK held for a storage_id
// leaves no copy of the DEK it replaced.
func TestReplaceShreds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ring")
	kek := keyring.NewKEK()
	r := createRing(t, path, kek)
	objs, _ := fillRing(t, r, 50)
	id := objs[20]
	old := map[string][]byte{"the replaced wrapped DEK": dekValues(t, path)[string(id[:])]}
	mustHold(t, path, old)
	d := pme.NewDEK()
	if err := r.Put(ctx, id, d); err != nil {
		t.Fatal(err)
	}
	fileHolds(t, path, "after a replacing Put", old)
	if got, err := r.ResolveDEK(ctx, id); err != nil || !got.Equal(d) {
		t.Fatalf("the replacing DEK: %v", err)
	}
	if _, err := r.ResolveDEK(ctx, storageid.Sum([]byte("none"))); !errors.Is(err, keyring.ErrNotFound) {
		t.Fatal(err)
	}
}

// BenchmarkShred measures what shredding costs on a ring of 10k DEKs: a
// Delete (which zeroes every free page afterwards), a Put that replaces a
// DEK (the same), a Put of a new storage_id (no scrub), and a Rekey.
func BenchmarkShred(b *testing.B) {
	ctx := context.Background()
	const held = 10_000
	b.Run("Delete/held=10k", func(b *testing.B) {
		r := filledRing(b, held)
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			if i == held {
				b.StopTimer()
				r = filledRing(b, held)
				b.StartTimer()
			}
			id := storageid.Sum(fmt.Appendf(nil, "fill %d", i%held))
			if err := r.Delete(ctx, id); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("PutReplace/held=10k", func(b *testing.B) {
		r := filledRing(b, held)
		d := pme.NewDEK()
		for i := 0; b.Loop(); i++ {
			if err := r.Put(ctx, storageid.Sum(fmt.Appendf(nil, "fill %d", i%held)), d); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("PutNew/held=10k", func(b *testing.B) {
		r := filledRing(b, held)
		d := pme.NewDEK()
		for i := 0; b.Loop(); i++ {
			if err := r.Put(ctx, storageid.Sum(fmt.Appendf(nil, "new %d", i)), d); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Rekey/held=10k", func(b *testing.B) {
		r := filledRing(b, held)
		for b.Loop() {
			if err := r.Rekey(ctx, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
