package blobs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
)

func list(t *testing.T, d *blobs.Dir) map[storageid.ID]uint64 {
	t.Helper()
	got := map[storageid.ID]uint64{}
	for b, err := range d.List(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		if _, dup := got[b.ID]; dup {
			t.Fatalf("List reports %s twice", b.ID)
		}
		got[b.ID] = b.Size
	}
	return got
}

// List reports the committed objects and their sizes, and nothing else:
// not the temporary files of an import in progress, not a commit stopped
// between its two renames, not lock files or the marker.
func TestList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, path := openDir(t)
	if got := list(t, d); len(got) != 0 {
		t.Fatalf("List of an empty store = %v", got)
	}
	want := map[storageid.ID]uint64{}
	for i, size := range []int{0, 1, verify.GroupSize + 1, 300 * 1024} {
		id, err := importBytes(ctx, d, randBytes(size, uint64(i)))
		if err != nil {
			t.Fatal(err)
		}
		want[id] = uint64(size)
	}
	// An import in progress, and one stopped between its two renames.
	live, _ := d.Create(ctx)
	defer live.Abort()
	live.Write([]byte("in progress"))
	paused, resume := make(chan struct{}), make(chan struct{})
	blobs.SetTestHooks(d, nil, func(step string) error {
		if step == "rename-data" {
			close(paused)
			<-resume
		}
		return nil
	})
	half := storageid.Sum([]byte("half committed"))
	done := make(chan error, 1)
	go func() {
		_, err := importBytes(ctx, d, []byte("half committed"))
		done <- err
	}()
	select {
	case <-paused:
	case <-time.After(lineTimeout):
		t.Fatal("the commit did not reach its second rename")
	}
	if _, err := os.Stat(filepath.Join(path, half.String()+".obao4")); err != nil {
		t.Fatalf("the half-committed object has no outboard yet: %v", err)
	}
	if got := list(t, d); !mapsEqual(got, want) {
		t.Fatalf("List = %v, want %v", got, want)
	}
	close(resume)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want[half] = uint64(len("half committed"))
	if got := list(t, d); !mapsEqual(got, want) {
		t.Fatalf("List after the commit = %v, want %v", got, want)
	}

	// Stopping early, and a done context.
	n := 0
	for range d.List(ctx) {
		n++
		break
	}
	if n != 1 {
		t.Fatalf("break after one: %d", n)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	var errs []error
	for b, err := range d.List(cctx) {
		if err == nil {
			t.Fatalf("List with a done context reported %s", b.ID)
		}
		errs = append(errs, err)
	}
	if len(errs) != 1 || !errors.Is(errs[0], context.Canceled) {
		t.Fatalf("List with a done context: %v", errs)
	}
}

func mapsEqual(a, b map[storageid.ID]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// List reads a large directory in batches, and reports each object once.
// (List reads names and sizes only, so the files here are written
// directly, not imported.)
func TestListMany(t *testing.T) {
	t.Parallel()
	d, path := openDir(t)
	want := map[storageid.ID]uint64{}
	for i := range 1000 {
		data := randBytes(i%50, uint64(1000+i))
		id := storageid.Sum(append(data, byte(i), byte(i>>8)))
		for _, ext := range []string{".data", ".obao4"} {
			if err := os.WriteFile(filepath.Join(path, id.String()+ext), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		want[id] = uint64(len(data))
	}
	if got := list(t, d); !mapsEqual(got, want) {
		t.Fatalf("List reported %d objects, want %d", len(got), len(want))
	}
}

func TestDelete(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, path := openDir(t)
	keep, _ := importBytes(ctx, d, randBytes(1000, 1))
	id, err := importBytes(ctx, d, randBytes(3*verify.GroupSize, 2))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	wantFiles(t, path, keep)
	if _, err := d.Slice(ctx, id, 0, 1); !errors.Is(err, blobs.ErrNotFound) {
		t.Errorf("Slice after Delete = %v", err)
	}
	if err := d.Delete(ctx, id); !errors.Is(err, blobs.ErrNotFound) {
		t.Errorf("second Delete = %v, want ErrNotFound", err)
	}
	if got := list(t, d); len(got) != 1 || got[keep] != 1000 {
		t.Errorf("List after Delete = %v", got)
	}

	// An outboard left without its data: not found, and removed.
	os.WriteFile(filepath.Join(path, id.String()+".obao4"), []byte("x"), 0o600)
	if err := d.Delete(ctx, id); !errors.Is(err, blobs.ErrNotFound) {
		t.Errorf("Delete of an outboard without data = %v, want ErrNotFound", err)
	}
	wantFiles(t, path, keep)

	// Imported again after its Delete.
	if again, err := importBytes(ctx, d, randBytes(3*verify.GroupSize, 2)); err != nil || again != id {
		t.Fatalf("import after Delete: %s, %v", again, err)
	}
	if err := verify.Verify(ctx, d, id); err != nil {
		t.Fatal(err)
	}
}

// A Delete that fails at any step never leaves a .data file without its
// outboard; what it leaves is removed by a later Delete or Sweep.
func TestDeleteStepFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, step := range blobs.DeleteSteps {
		d, path := openDir(t)
		id, err := importBytes(ctx, d, randBytes(2*verify.GroupSize, 3))
		if err != nil {
			t.Fatal(err)
		}
		blobs.SetTestHooks(d, nil, func(s string) error {
			if s == step {
				return errInjected
			}
			return nil
		})
		if err := d.Delete(ctx, id); !errors.Is(err, errInjected) {
			t.Fatalf("failure at %s: Delete = %v", step, err)
		}
		blobs.SetTestHooks(d, nil, nil)
		_, dataErr := os.Stat(filepath.Join(path, id.String()+".data"))
		_, obErr := os.Stat(filepath.Join(path, id.String()+".obao4"))
		if dataErr == nil && obErr != nil {
			t.Fatalf("failure at %s left the data without its outboard", step)
		}
		if dataErr == nil {
			wantFiles(t, path, id) // failed before removing anything
			if err := verify.Verify(ctx, d, id); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := d.Sweep(ctx); err != nil {
			t.Fatal(err)
		}
		wantFiles(t, path)
	}
}

// A Delete waiting for the object's lock gives up when its context is
// done.
func TestDeleteContext(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, path := openDir(t)
	paused, resume := make(chan struct{}), make(chan struct{})
	blobs.SetTestHooks(d, nil, func(step string) error {
		if step == "sync-data" {
			close(paused)
			<-resume
		}
		return nil
	})
	data := randBytes(1000, 4)
	done := make(chan error, 1)
	go func() {
		_, err := importBytes(ctx, d, data)
		done <- err
	}()
	<-paused
	for _, other := range []*blobs.Dir{d, mustOpen(t, path)} { // this Dir, and another
		tctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		err := other.Delete(tctx, storageid.Sum(data))
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Delete during a Commit of the object = %v, want DeadlineExceeded", err)
		}
	}
	close(resume)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := d.Delete(ctx, storageid.Sum(data)); err != nil {
		t.Fatal(err)
	}
	wantFiles(t, path)
}

func mustOpen(t *testing.T, path string, opts ...blobs.DirOption) *blobs.Dir {
	t.Helper()
	d, err := blobs.OpenDir(path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Deleting an object while it is read: a slice already open reads to its
// end, and a verify.Reader, which asks for a slice for each read, then
// finds no object.
func TestDeleteWhileReading(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, path := openDir(t)
	data := randBytes(4*verify.GroupSize, 5)
	id, _ := importBytes(ctx, d, data)
	ro := mustOpen(t, path, blobs.ReadOnly())
	r, err := verify.NewReader(ctx, ro, id)
	if err != nil {
		t.Fatal(err)
	}
	readSlice := func() io.ReadCloser {
		rc, err := ro.Slice(ctx, id, 0, uint64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rc.Close() })
		return rc
	}
	want, err := io.ReadAll(readSlice())
	if err != nil {
		t.Fatal(err)
	}
	rc := readSlice()
	if err := d.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(rc); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("reading a slice opened before Delete: %d bytes (want %d), %v", len(got), len(want), err)
	}
	if _, err := r.ReadAt(make([]byte, 10), 0); !errors.Is(err, blobs.ErrNotFound) {
		t.Fatalf("ReadAt after Delete = %v, want ErrNotFound", err)
	}
}

func ExampleDir_List() {
	ctx := context.Background()
	path, _ := os.MkdirTemp("", "blobs-example")
	defer os.RemoveAll(path)
	store, _ := blobs.CreateDir(path)
	for _, s := range []string{"first object", "second object"} {
		p, _ := store.Create(ctx)
		p.Write([]byte(s))
		p.Commit(ctx)
	}

	var objects []blobs.Blob
	for b, err := range store.List(ctx) {
		if err != nil {
			fmt.Println(err)
			return
		}
		objects = append(objects, b)
	}
	// List follows the directory's order: sort for a stable listing.
	slices.SortFunc(objects, func(a, b blobs.Blob) int { return int(a.Size) - int(b.Size) })
	for _, b := range objects {
		fmt.Println(b.ID, b.Size)
	}
	// Output:
	// a71b66fff05c764dcb7083a42ae3ef633fc516e07c3b95134e7398d8c57e229a 12
	// 874b5fd498ba1b455b36c3d927fffd8c99897d6de912b28d484635e5fe2d0857 13
}

func ExampleDir_Delete() {
	ctx := context.Background()
	path, _ := os.MkdirTemp("", "blobs-example")
	defer os.RemoveAll(path)
	store, _ := blobs.CreateDir(path)
	p, _ := store.Create(ctx)
	p.Write([]byte("an object"))
	id, _ := p.Commit(ctx)

	fmt.Println(store.Delete(ctx, id))
	err := store.Delete(ctx, id)
	fmt.Println(errors.Is(err, blobs.ErrNotFound))
	err = verify.Verify(ctx, store, id)
	fmt.Println(errors.Is(err, blobs.ErrNotFound))

	// A read-only store refuses it.
	ro, _ := blobs.OpenDir(path, blobs.ReadOnly())
	fmt.Println(errors.Is(ro.Delete(ctx, id), blobs.ErrReadOnly))
	// Output:
	// <nil>
	// true
	// true
	// true
}

func ExampleOpenDir() {
	parent, _ := os.MkdirTemp("", "blobs-example")
	defer os.RemoveAll(parent)

	// Opening never creates a store: a mistyped path is an error.
	_, err := blobs.OpenDir(filepath.Join(parent, "stroe"), blobs.ReadOnly())
	fmt.Println(errors.Is(err, blobs.ErrNoStore), errors.Is(err, os.ErrNotExist))

	// CreateDir makes one; OpenDir opens it, here for reading only.
	blobs.CreateDir(filepath.Join(parent, "store"))
	_, err = blobs.OpenDir(filepath.Join(parent, "store"), blobs.ReadOnly())
	fmt.Println(err)
	// Output:
	// true true
	// <nil>
}
