package blobs

import (
	"context"
	"errors"
	"io"

	"github.com/sovm/sop-pme/storageid"
)

// ErrNotFound is returned (wrapped) when a store does not hold a blob.
var ErrNotFound = errors.New("blobs: blob not found")

// ErrNoStore is returned (wrapped) when a store is opened where there is
// none: a path that does not exist (the error then also matches
// fs.ErrNotExist), a file that is not a directory, or a directory that is
// not a store.
var ErrNoStore = errors.New("blobs: no store")

// ErrReadOnly is returned (wrapped) by the methods that would change a
// store opened read-only.
var ErrReadOnly = errors.New("blobs: store is read-only")

// ErrNotRegular is returned (wrapped) when a file of a directory store
// that must be a regular file (an object's .data or .obao4, the marker
// file) is something else: a FIFO, a device, a socket, a directory or a
// symbolic link. The store is untrusted, and such a file is refused without
// being read, and without blocking: a FIFO would block an open(2) for ever.
var ErrNotRegular = errors.New("blobs: not a regular file")

// ErrClosed is returned (wrapped) by a Pending's Write and Commit after it
// was committed or aborted.
var ErrClosed = errors.New("blobs: pending object already committed or aborted")

// A Store accepts new objects: step 5 of the writer pipeline, "import into
// iroh-blobs; the returned hash is storage_id" (SOP-PME-1 Section 11.12).
//
// Stores are safe for concurrent use.
type Store interface {
	// Create begins a new object. Bytes written to the returned Pending are
	// staged where no reader can see them, and become a blob only on Commit.
	Create(ctx context.Context) (Pending, error)
}

// A Pending is an object being imported into a Store.
//
// What is written to a Pending is exactly the final object: the writer
// finishes every step of Section 11.12 before it commits, and nothing may be
// changed after Commit, since the storage_id covers the exact bytes.
//
// A Pending is used by one goroutine at a time. After Commit (successful or
// not) or Abort, Write and Commit fail with an error matching ErrClosed. A
// failed Write makes Commit fail.
type Pending interface {
	io.Writer

	// Commit makes the staged bytes a blob and returns its storage_id, the
	// BLAKE3 root hash of those exact bytes. Commit is atomic: on error, or on
	// a crash during Commit, no partial blob becomes visible (the blob is
	// either absent or whole). Committing bytes the
	// store already holds is not an error and returns the same storage_id.
	Commit(ctx context.Context) (storageid.ID, error)

	// Abort discards the staged bytes. It is safe to call after Commit, where
	// it does nothing, and more than once.
	Abort() error
}
