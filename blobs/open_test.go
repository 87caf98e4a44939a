package blobs_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
)

// OpenDir never creates anything: a missing path is an error that says so,
// and is left missing.
func TestOpenMissing(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	path := filepath.Join(parent, "typo", "store")
	for _, opts := range [][]blobs.DirOption{nil, {blobs.ReadOnly()}} {
		_, err := blobs.OpenDir(path, opts...)
		if !errors.Is(err, blobs.ErrNoStore) || !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("OpenDir of a missing path = %v, want ErrNoStore and fs.ErrNotExist", err)
		}
	}
	if got := files(t, parent); len(got) != 0 {
		t.Fatalf("OpenDir of a missing path created %q", got)
	}
}

// A directory that is not a store is refused and left as it was; a store
// written before the marker file existed is still opened.
func TestOpenNotAStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	empty := t.TempDir()
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "notes.txt"), []byte("x"), 0o600)
	os.WriteFile(filepath.Join(other, ".tmp-x.data"), []byte("x"), 0o600)
	os.WriteFile(filepath.Join(other, "ab.obao4"), []byte("x"), 0o600) // not a storage_id
	file := filepath.Join(other, "notes.txt")
	for _, path := range []string{empty, other, file} {
		before := files(t, filepath.Dir(path))
		for _, opts := range [][]blobs.DirOption{nil, {blobs.ReadOnly()}} {
			if _, err := blobs.OpenDir(path, opts...); !errors.Is(err, blobs.ErrNoStore) {
				t.Errorf("OpenDir(%s) = %v, want ErrNoStore", path, err)
			}
		}
		if after := files(t, filepath.Dir(path)); !slices.Equal(before, after) {
			t.Errorf("OpenDir(%s) changed %q to %q", path, before, after)
		}
	}
	if _, err := blobs.CreateDir(other); !errors.Is(err, blobs.ErrNoStore) {
		t.Errorf("CreateDir of a directory holding other files = %v, want ErrNoStore", err)
	}
	if _, err := blobs.CreateDir(file); err == nil {
		t.Errorf("CreateDir of a file succeeded")
	}

	// A marker of another layout.
	d, path := openDir(t)
	id, _ := importBytes(ctx, d, randBytes(100, 1))
	os.WriteFile(filepath.Join(path, "SOP-BLOB-STORE"), []byte("sop-pme blobs.Dir 2\n"), 0o600)
	if _, err := blobs.OpenDir(path); !errors.Is(err, blobs.ErrNoStore) {
		t.Errorf("OpenDir with an unknown layout = %v, want ErrNoStore", err)
	}

	// A store without the marker: the objects and the files the command
	// line kept beside them.
	os.Remove(filepath.Join(path, "SOP-BLOB-STORE"))
	os.WriteFile(filepath.Join(path, "keyring.json"), []byte("{}"), 0o600)
	for _, opts := range [][]blobs.DirOption{nil, {blobs.ReadOnly()}} {
		old, err := blobs.OpenDir(path, opts...)
		if err != nil {
			t.Fatalf("OpenDir of a store without marker: %v", err)
		}
		if err := verify.Verify(ctx, old, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(path, "SOP-BLOB-STORE")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("OpenDir marked the store: %v", err)
	}
	if _, err := blobs.CreateDir(path); err != nil {
		t.Fatalf("CreateDir of a store without marker: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(path, "SOP-BLOB-STORE")); err != nil || string(b) != "sop-pme blobs.Dir 1\n" {
		t.Fatalf("CreateDir did not mark the store: %q, %v", b, err)
	}
}

func TestCreateDir(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "a", "store")
	if _, err := blobs.CreateDir(path, blobs.ReadOnly()); !errors.Is(err, blobs.ErrReadOnly) {
		t.Fatalf("CreateDir(ReadOnly) = %v, want ErrReadOnly", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("CreateDir(ReadOnly) created the directory: %v", err)
	}
	d, err := blobs.CreateDir(path)
	if err != nil {
		t.Fatal(err)
	}
	id, err := importBytes(ctx, d, randBytes(1000, 2))
	if err != nil {
		t.Fatal(err)
	}
	// Creating it again opens it.
	d2, err := blobs.CreateDir(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := verify.Verify(ctx, d2, id); err != nil {
		t.Fatal(err)
	}
	wantFiles(t, path, id)
}

// A read-only Dir reads, and refuses every change.
func TestReadOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, path := openDir(t)
	id, err := importBytes(ctx, d, randBytes(50000, 3))
	if err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(path, ".tmp-gone.data") // its owner is gone
	os.WriteFile(stale, []byte("x"), 0o600)
	before := files(t, path)

	ro, err := blobs.OpenDir(path, blobs.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ro.Create(ctx); !errors.Is(err, blobs.ErrReadOnly) {
		t.Errorf("Create = %v, want ErrReadOnly", err)
	}
	if err := ro.Delete(ctx, id); !errors.Is(err, blobs.ErrReadOnly) {
		t.Errorf("Delete = %v, want ErrReadOnly", err)
	}
	if err := ro.Sweep(ctx); !errors.Is(err, blobs.ErrReadOnly) {
		t.Errorf("Sweep = %v, want ErrReadOnly", err)
	}
	if err := verify.Verify(ctx, ro, id); err != nil {
		t.Errorf("Verify: %v", err)
	}
	var listed []storageid.ID
	for b, err := range ro.List(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		listed = append(listed, b.ID)
	}
	if !slices.Equal(listed, []storageid.ID{id}) {
		t.Errorf("List = %v", listed)
	}
	if after := files(t, path); !slices.Equal(before, after) {
		t.Errorf("a read-only Dir changed %q to %q", before, after)
	}
	if _, err := blobs.OpenDir(path); err != nil {
		t.Fatal(err)
	}
	wantFiles(t, path, id)
}

// TestCreateDirRace: processes (here goroutines, each with a Dir of its
// own) that create the same new store at once all succeed. Before, one
// could see the marker another had just written and refuse the directory
// as "neither empty nor a store".
func TestCreateDirRace(t *testing.T) {
	t.Parallel()
	for trial := range 50 {
		dir := filepath.Join(t.TempDir(), "store")
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = blobs.CreateDir(dir)
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("trial %d, creator %d: %v", trial, i, err)
			}
		}
	}
}
