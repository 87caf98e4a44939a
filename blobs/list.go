package blobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"

	"github.com/sovm/sop-pme/storageid"
)

// A Blob is an object held by a store.
type Blob struct {
	ID   storageid.ID // its storage_id
	Size uint64       // its size in bytes
}

// List returns the objects that the store holds, with their sizes, in the
// directory's order (not sorted). It reads the directory in batches, so its
// memory does not grow with the store.
//
// List reports an object once its .data file is visible, and Commit makes it
// visible last, after the outboard: List never reports an object whose
// commit is still in progress, nor temporary files. An object deleted or
// committed while List runs may or may not be reported. The size is that of
// the .data file, which verify.Verify checks against the storage_id; List
// itself reads no object bytes.
//
// The iteration stops at the first error, which it yields with a zero Blob;
// it stops with ctx.Err() once ctx is done. List works in a read-only Dir.
func (d *Dir) List(ctx context.Context) iter.Seq2[Blob, error] {
	return func(yield func(Blob, error) bool) {
		f, err := os.Open(d.path)
		if err != nil {
			yield(Blob{}, fmt.Errorf("blobs: list: %w", err))
			return
		}
		defer f.Close()
		for {
			if err := ctx.Err(); err != nil {
				yield(Blob{}, err)
				return
			}
			entries, rerr := f.ReadDir(256)
			for _, e := range entries {
				id, ok := parseObjectName(e.Name(), dataExt)
				if !ok {
					continue
				}
				fi, err := e.Info()
				if errors.Is(err, fs.ErrNotExist) {
					continue // deleted meanwhile
				} else if err != nil {
					yield(Blob{}, fmt.Errorf("blobs: list: %w", err))
					return
				}
				if !fi.Mode().IsRegular() {
					continue
				}
				if !yield(Blob{ID: id, Size: uint64(fi.Size())}, nil) {
					return
				}
			}
			if rerr == io.EOF {
				return
			}
			if rerr != nil {
				yield(Blob{}, fmt.Errorf("blobs: list: %w", rerr))
				return
			}
		}
	}
}

// Delete removes object id from the store: its .data file first, then its
// outboard, each removal made durable (the directory fsynced) before the
// next, so that a visible .data file always has its outboard, even after a
// crash. It holds the object's lock across processes (see [Dir]), so a
// Commit of the same object in any process happens wholly before or wholly
// after it; ctx bounds the wait for that lock.
//
// Delete returns an error matching ErrNotFound if the store does not hold
// id; it then still removes an outboard left without its data. In a
// read-only Dir it fails with an error matching ErrReadOnly.
//
// A process reading the object meanwhile never gets wrong bytes: on Unix a
// file it has open stays readable after its removal, and every byte it
// reads is verified anyway. But a later slice (a verify.Reader asks for
// one per ReadAt) gets an error matching ErrNotFound from then on, in this
// process or another: [Dir.Slice] checks the names at each slice, even of
// files it holds open.
//
// Delete removes the files; it does not overwrite them. Making the
// ciphertext unreadable for good is forgetting its DEK.
func (d *Dir) Delete(ctx context.Context, id storageid.ID) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d.readOnly {
		return fmt.Errorf("blobs: delete %s: %w", id, ErrReadOnly)
	}
	fail := func(step string, err error) error {
		return fmt.Errorf("blobs: delete %s: %s: %w", id, step, err)
	}
	unlock, err := d.lockObject(ctx, id)
	if err != nil {
		return fail("waiting for a commit or delete", err)
	}
	defer unlock()

	err = d.step("delete-data")
	if err == nil {
		err = os.Remove(d.dataPath(id))
	}
	found := err == nil
	d.held.forget(id)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fail("removing data", err)
	}
	if found {
		err = d.step("sync-dir-data")
		if err == nil {
			err = syncDir(d.path)
		}
		if err != nil {
			return fail("syncing directory", err)
		}
	}
	err = d.step("delete-outboard")
	if err == nil {
		err = os.Remove(d.outboardPath(id))
	}
	if err == nil {
		err = syncDir(d.path)
	} else if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	if err != nil {
		return fail("removing outboard", err)
	}
	if !found {
		return fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return nil
}
