package keyring_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ring.json")
	kek := keyring.NewKEK()
	r, err := keyring.Open(path, kek)
	if err != nil {
		t.Fatal(err)
	}
	objs := ids(5)
	deks := map[storageid.ID]pme.DEK{}
	for _, id := range objs {
		deks[id] = pme.NewDEK()
		if err := r.Put(ctx, id, deks[id]); err != nil {
			t.Fatal(err)
		}
	}
	r2, err := keyring.Open(path, kek)
	if err != nil {
		t.Fatal(err)
	}
	if r2.Len() != 5 {
		t.Fatalf("reopened ring holds %d keys", r2.Len())
	}
	for _, id := range objs {
		got, err := r2.ResolveDEK(ctx, id)
		if err != nil || !got.Equal(deks[id]) {
			t.Fatalf("%s: %v", id, err)
		}
	}
	_, err = r2.ResolveDEK(ctx, storageid.Sum([]byte("unknown")))
	if !errors.Is(err, keyring.ErrNotFound) || !errors.Is(err, reader.ErrNoKey) {
		t.Fatalf("unknown id: %v", err)
	}
	// The file holds no DEK in the clear.
	raw, _ := os.ReadFile(path)
	for _, d := range deks {
		k := d.Bytes()
		if strings.Contains(string(raw), fmt.Sprintf("%x", k)) || strings.Contains(string(raw), string(k)) {
			t.Fatal("ring file holds a raw DEK")
		}
	}
	if err := r2.Delete(ctx, objs[0]); err != nil {
		t.Fatal(err)
	}
	r3, _ := keyring.Open(path, kek)
	if _, err := r3.ResolveDEK(ctx, objs[0]); !errors.Is(err, keyring.ErrNotFound) {
		t.Fatalf("deleted key: %v", err)
	}
}

func TestWrongKEK(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ring.json")
	r, _ := keyring.Open(path, keyring.NewKEK())
	r.Put(context.Background(), ids(1)[0], pme.NewDEK())
	if _, err := keyring.Open(path, keyring.NewKEK()); !errors.Is(err, keyring.ErrWrongKEK) {
		t.Fatalf("Open with another KEK: %v", err)
	}
}

// TestMovedRecord moves a wrapped DEK in the file from one storage_id to
// another: it must not unwrap there (the storage_id is associated data).
func TestMovedRecord(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ring.json")
	kek := keyring.NewKEK()
	r, _ := keyring.Open(path, kek)
	a, b := ids(2)[0], ids(2)[1]
	r.Put(ctx, a, pme.NewDEK())
	r.Put(ctx, b, pme.NewDEK())
	var ff map[string]any
	raw, _ := os.ReadFile(path)
	json.Unmarshal(raw, &ff)
	keys := ff["keys"].(map[string]any)
	keys[b.String()] = keys[a.String()]
	raw, _ = json.Marshal(ff)
	os.WriteFile(path, raw, 0o600)
	r2, err := keyring.Open(path, kek)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r2.ResolveDEK(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, err := r2.ResolveDEK(ctx, b); !errors.Is(err, keyring.ErrUnwrap) {
		t.Fatalf("moved record: %v", err)
	}
}

func TestRewrap(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ring.json")
	old, next := keyring.NewKEK(), keyring.NewKEK()
	r, _ := keyring.Open(path, old)
	objs := ids(3)
	deks := make([]pme.DEK, len(objs))
	for i, id := range objs {
		deks[i] = pme.NewDEK()
		r.Put(ctx, id, deks[i])
	}
	before, _ := os.ReadFile(path)
	if err := r.Rewrap(ctx, next); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(path)
	if string(before) == string(after) {
		t.Fatal("rewrap left the file unchanged")
	}
	if _, err := keyring.Open(path, old); !errors.Is(err, keyring.ErrWrongKEK) {
		t.Fatalf("old KEK after rewrap: %v", err)
	}
	r2, err := keyring.Open(path, next)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range objs {
		if got, err := r2.ResolveDEK(ctx, id); err != nil || !got.Equal(deks[i]) {
			t.Fatalf("%s after rewrap: %v", id, err)
		}
	}
	// The live ring works under the new KEK too.
	if got, err := r.ResolveDEK(ctx, objs[0]); err != nil || !got.Equal(deks[0]) {
		t.Fatal(err)
	}
}

// TestPersistFailure: a ring whose directory is gone cannot persist; the
// change is refused and the ring keeps its previous state.
func TestPersistFailure(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "d")
	os.Mkdir(dir, 0o700)
	path := filepath.Join(dir, "ring.json")
	r, _ := keyring.Open(path, keyring.NewKEK())
	id := ids(1)[0]
	os.RemoveAll(dir)
	if err := r.Put(ctx, id, pme.NewDEK()); err == nil {
		t.Fatal("Put succeeded without a directory")
	}
	if r.Len() != 0 {
		t.Fatal("a failed Put changed the ring")
	}
	if err := r.Rewrap(ctx, keyring.NewKEK()); err == nil {
		t.Fatal("Rewrap succeeded without a directory")
	}
}

func TestMalformedFiles(t *testing.T) {
	kek := keyring.NewKEK()
	dir := t.TempDir()
	for name, content := range map[string]string{
		"empty":         "",
		"not json":      "hello",
		"wrong format":  `{"format":"x","check":"","keys":{}}`,
		"unknown field": `{"format":"sop-pme-keyring-v1","check":"","keys":{},"x":1}`,
		"trailing":      `{"format":"sop-pme-keyring-v1","check":"","keys":{}} {}`,
		"bad check":     `{"format":"sop-pme-keyring-v1","check":"!!","keys":{}}`,
	} {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		os.WriteFile(path, []byte(content), 0o600)
		if _, err := keyring.Open(path, kek); !errors.Is(err, keyring.ErrFile) && !errors.Is(err, keyring.ErrWrongKEK) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestKEKPrintsNothing(t *testing.T) {
	k := keyring.NewKEK()
	for _, f := range []string{"%v", "%+v", "%#v", "%s", "%x"} {
		if out := fmt.Sprintf(f, k); !strings.Contains(out, "REDACTED") || strings.Contains(out, fmt.Sprintf("%x", k.Bytes())[:8]) {
			t.Errorf("%s printed %q", f, out)
		}
	}
}

// FuzzOpen feeds arbitrary ring files to Open: it must never panic, and a
// file that opens must round-trip through a Put.
func FuzzOpen(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/fuzz/FuzzOpen/*")
	if len(seeds) == 0 {
		f.Fatal("no seed corpus in testdata/fuzz/FuzzOpen")
	}
	kek, _ := keyring.KEKFromBytes(make([]byte, keyring.KEKSize))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "ring.json")
		os.WriteFile(path, data, 0o600)
		r, err := keyring.Open(path, kek)
		if err != nil {
			return
		}
		for range r.Len() {
		}
	})
}

func TestBadKEK(t *testing.T) {
	if _, err := keyring.KEKFromBytes(make([]byte, 31)); !errors.Is(err, keyring.ErrKEK) {
		t.Fatal(err)
	}
	if _, err := keyring.Open(filepath.Join(t.TempDir(), "r"), keyring.KEK{}); !errors.Is(err, keyring.ErrKEK) {
		t.Fatal(err)
	}
}
