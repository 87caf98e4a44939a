package blobs_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
)

// openFDs counts the process's open file descriptors on files in dir
// (other tests' Dirs may close theirs at any time, when the garbage
// collector finds them).
func openFDs(t *testing.T, dir string) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	n := 0
	for _, e := range es {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && strings.HasPrefix(target, dir+string(filepath.Separator)) {
			n++
		}
	}
	return n
}

// TestHeldFiles: the Dir keeps the files of the objects it sliced last
// open (at most maxHeld objects, two files each) and no more, slices of a held
// object open nothing, and Close closes them.
func TestHeldFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, dir := openDir(t)
	const objects = blobs.MaxHeld + 8
	ids := make([]storageid.ID, objects)
	datas := make([][]byte, objects)
	for i := range ids {
		datas[i] = randBytes(3*verify.GroupSize+i, uint64(i))
		id, err := importBytes(ctx, d, datas[i])
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	base := openFDs(t, dir) // 0, but for the lock files of a Dir, if any
	got, err := readRange(ctx, d, ids[0], 100, 20000)
	if err != nil || !bytes.Equal(got, datas[0][100:20100]) {
		t.Fatalf("read: %v", err)
	}
	if n := openFDs(t, dir) - base; n != 2 {
		t.Fatalf("%d files open after slicing one object; want its 2", n)
	}
	for range 10 {
		if _, err := readRange(ctx, d, ids[0], 0, 3*verify.GroupSize); err != nil {
			t.Fatal(err)
		}
	}
	if n := openFDs(t, dir) - base; n != 2 {
		t.Fatalf("%d files open after slicing one object 11 times; want 2", n)
	}
	for i := range ids {
		got, err := readRange(ctx, d, ids[i], 0, len(datas[i]))
		if err != nil || !bytes.Equal(got, datas[i]) {
			t.Fatalf("object %d: %v", i, err)
		}
	}
	if n := openFDs(t, dir) - base; n != 2*blobs.MaxHeld {
		t.Errorf("%d files open after slicing %d objects; want %d (%d objects)", n, objects, 2*blobs.MaxHeld, blobs.MaxHeld)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if n := openFDs(t, dir) - base; n != 0 {
		t.Errorf("%d files open after Close; want none", n)
	}
	// The Dir stays usable.
	if got, err := readRange(ctx, d, ids[5], 0, len(datas[5])); err != nil || !bytes.Equal(got, datas[5]) {
		t.Fatalf("read after Close: %v", err)
	}
	d.Close()
}
