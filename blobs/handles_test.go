package blobs_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
)

// readRange reads [off, off+n) of id through a verify.Reader.
func readRange(ctx context.Context, d *blobs.Dir, id storageid.ID, off, n int) ([]byte, error) {
	r, err := verify.NewReader(ctx, d, id)
	if err != nil {
		return nil, err
	}
	p := make([]byte, n)
	if _, err := r.ReadAt(p, int64(off)); err != nil {
		return nil, err
	}
	return p, nil
}

// TestHeldFilesReplaced: a held object whose files another process
// replaced (a damaged copy repaired by renaming good bytes over it) is
// read from the new files, and one it deleted is not found; a slice of a
// held object survives Close until it is read.
func TestHeldFilesReplaced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, path := openDir(t)
	defer d.Close()
	const g = verify.GroupSize
	data := randBytes(5*g+7, 99)
	id, err := importBytes(ctx, d, data)
	if err != nil {
		t.Fatal(err)
	}
	dataPath := filepath.Join(path, id.String()+".data")

	// Damage a copy and put it in place by rename, as another process's
	// tool might: the Dir holds the good file, and must read the bad one.
	if _, err := readRange(ctx, d, id, 0, g); err != nil {
		t.Fatal(err)
	}
	bad := bytes.Clone(data)
	bad[100] ^= 1
	tmp := filepath.Join(t.TempDir(), "x")
	for _, c := range []struct {
		bytes []byte
		ok    bool
	}{{bad, false}, {data, true}} {
		if err := os.WriteFile(tmp, c.bytes, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, dataPath); err != nil {
			t.Fatal(err)
		}
		_, err := readRange(ctx, d, id, 0, g)
		if c.ok && err != nil {
			t.Errorf("read after the good bytes were renamed over the bad: %v", err)
		}
		if !c.ok && !errors.Is(err, verify.ErrVerify) {
			t.Errorf("read after a damaged copy was renamed over the object: %v; want ErrVerify", err)
		}
	}

	// A slice taken before Close reads after it.
	rc, err := d.Slice(ctx, id, 0, g)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	got, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("slice read after Close: %v", err)
	}
	ob, err := os.ReadFile(filepath.Join(path, id.String()+".obao4"))
	if err != nil {
		t.Fatal(err)
	}
	wr, err := verify.ExtractSlice(bytes.NewReader(data), bytes.NewReader(ob), uint64(len(data)), 0, g)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := io.ReadAll(wr); !bytes.Equal(got, want) {
		t.Error("slice read after Close is not the object's slice")
	}
	if err := errors.Join(rc.Close(), rc.Close()); err != nil {
		t.Errorf("Close, Close: %v", err)
	}

	// Deleted by another Dir, as by another process: not found, though
	// held.
	if _, err := readRange(ctx, d, id, 0, g); err != nil {
		t.Fatal(err)
	}
	other := mustOpen(t, path)
	if err := other.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Slice(ctx, id, 0, 1); !errors.Is(err, blobs.ErrNotFound) {
		t.Errorf("slice of an object another Dir deleted: %v; want ErrNotFound", err)
	}
}

// TestHeldFilesConcurrent: slices of many objects from many goroutines,
// with deletes, re-imports and Close among them (run with -race).
func TestHeldFilesConcurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, _ := openDir(t)
	defer d.Close()
	const objects = 40
	datas := make([][]byte, objects)
	ids := make([]storageid.ID, objects)
	for i := range ids {
		datas[i] = randBytes(2*verify.GroupSize+i, uint64(1000+i))
		id, err := importBytes(ctx, d, datas[i])
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 6 {
		wg.Go(func() {
			for k := range 150 {
				i := (w*7 + k*13) % objects
				got, err := readRange(ctx, d, ids[i], 0, len(datas[i]))
				if errors.Is(err, blobs.ErrNotFound) {
					continue // deleted meanwhile
				}
				if err != nil || !bytes.Equal(got, datas[i]) {
					errs <- err
					return
				}
			}
		})
	}
	wg.Go(func() {
		for k := range 60 {
			i := k % 5
			switch k % 3 {
			case 0:
				d.Delete(ctx, ids[i])
			case 1:
				if _, err := importBytes(ctx, d, datas[i]); err != nil {
					errs <- err
					return
				}
			default:
				d.Close()
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent read: %v", err)
	}
}
