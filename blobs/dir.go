package blobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
)

const (
	dataExt     = ".data"
	outboardExt = ".obao4"

	// tempPrefix starts the name of every temporary file: .tmp-<token>.data
	// and .tmp-<token>.obao4 for an import, .tmp-<token>.marker for the
	// marker file, and .tmp-<token>.lock, the lock that their owner holds.
	// No final name (64 hex digits and an extension) can start with it.
	tempPrefix = ".tmp-"
	lockExt    = ".lock"
	markerExt  = ".marker"

	// objectLockPrefix starts the name of an object's lock file,
	// .lock-<storage_id in hex>, which exists while a process holds it.
	objectLockPrefix = ".lock-"

	// markerName is the file that marks a directory as a store, holding
	// markerLine.
	markerName = "SOP-BLOB-STORE"
	markerLine = "sop-pme blobs.Dir 1\n"
)

// A Dir is the embedded pure-Go blob store: a directory holding, for each
// object, <storage_id in hex>.data (its exact bytes) and
// <storage_id in hex>.obao4 (its pre-order BAO outboard with 16 KiB groups,
// byte-identical to the file iroh-blobs' FsStore keeps, without a size
// prefix). See SOP-PME-1 Sections 11.7 and 11.10. A file named
// SOP-BLOB-STORE marks the directory as a store (see [OpenDir]).
//
// A Dir implements Store, and verify.Source from those two files; it never
// returns object bytes except inside a slice for verify to check.
//
// Only ciphertext is ever written to a Dir by this library: the writer
// imports finished SOP-PME-1 objects, whose bytes are PME-encrypted.
//
// # Several goroutines, several processes
//
// A Dir is safe for concurrent use by multiple goroutines, and a store
// directory may be opened by several processes at once (writers, readers
// and the command line), each with its own Dir:
//
//   - An import stages its bytes in temporary files, .tmp-<token>.data and
//     .tmp-<token>.obao4, owned through an exclusive lock on
//     .tmp-<token>.lock that the importing process holds until Commit or
//     Abort. Another process removes a temporary file (in [Dir.Sweep], which
//     a read-write OpenDir runs) only once it can take that lock itself:
//     when the owner finished, or died, since the kernel releases the locks
//     of a process that dies, SIGKILL included. An import in progress is
//     never removed.
//   - Commit, [Dir.Delete], and the removal of an outboard whose data is
//     missing, hold a lock on the object, .lock-<storage_id in hex>, across
//     processes. Concurrent commits of the same object, a commit racing a
//     Delete, and a sweep that finds a commit between its two renames
//     therefore stay correct; and a visible .data file always has its
//     outboard.
//   - A Dir opened with [ReadOnly] never creates, locks, writes or removes
//     anything; it can read a store it has no right to write.
//
// The locks are advisory file locks (flock(2); LockFileEx on Windows, through
// github.com/gofrs/flock): they hold between processes on one machine and
// on local file systems, not necessarily on network file systems. Every
// process writing to a store must use this version of the package or a
// later one: earlier ones removed every temporary file they found on open.
type Dir struct {
	path     string
	readOnly bool

	mu    sync.Mutex
	locks map[storageid.ID]*idLock // serialises the commits of each object within the process

	held heldFiles // files kept open between slices

	hooks hooks // test hooks; zero in production
}

// hooks lets tests inject failures (see export_test.go).
type hooks struct {
	// wrapTemp wraps the writer of an import's temporary data file.
	wrapTemp func(io.Writer) io.Writer
	// fail, if set, is called at each step of Commit and Delete; an error
	// it returns fails that step.
	fail func(step string) error
}

type idLock struct {
	ch   chan struct{} // holds a token while locked
	refs int
}

var (
	_ Store         = (*Dir)(nil)
	_ verify.Source = (*Dir)(nil)
)

// A DirOption configures [OpenDir] and [CreateDir].
type DirOption func(*dirConfig) error

type dirConfig struct {
	readOnly bool
}

// ReadOnly opens a store for reading only. Such a Dir never creates,
// locks, writes or removes a file: Create, Delete and Sweep fail with an
// error matching ErrReadOnly, and opening leaves the temporary files of
// other processes' imports alone. It is what a command that only reads
// (verify, read, check) should use. CreateDir refuses it.
func ReadOnly() DirOption {
	return func(c *dirConfig) error {
		c.readOnly = true
		return nil
	}
}

func newDirConfig(opts []DirOption) (dirConfig, error) {
	var c dirConfig
	for _, o := range opts {
		if err := o(&c); err != nil {
			return dirConfig{}, err
		}
	}
	return c, nil
}

// OpenDir opens the existing store in directory path. It never creates
// anything: a path that does not exist gives an error matching both
// ErrNoStore and fs.ErrNotExist, so that a mistyped path does not become a
// new, empty store. Use CreateDir to make a store.
//
// A directory is a store if it holds the marker file SOP-BLOB-STORE that
// CreateDir writes. A directory without one is accepted only if it holds at
// least one object file (<storage_id in hex>.data or .obao4), as the stores
// written before the marker existed do; any other directory is refused with
// an error matching ErrNoStore, so that a store is never opened, and swept,
// in some unrelated directory.
//
// In read-write mode (the default), OpenDir runs Sweep, which removes the
// temporary files of imports whose process finished or died, and nothing
// that belongs to a live process. With ReadOnly it removes nothing.
func OpenDir(path string, opts ...DirOption) (*Dir, error) {
	cfg, err := newDirConfig(opts)
	if err != nil {
		return nil, err
	}
	marked, err := readMarker(path)
	if err != nil {
		return nil, err
	}
	if !marked {
		objects, _, err := scanStore(path, true)
		if err != nil {
			return nil, err
		}
		if !objects {
			return nil, fmt.Errorf("%w: %s has no %s file and holds no object (CreateDir makes a store)", ErrNoStore, path, markerName)
		}
	}
	return openDir(path, cfg)
}

// CreateDir creates a store in directory path, with its parents, and opens
// it read-write. If path is already a store, CreateDir opens it, and marks
// it if it lacked the marker file. It makes a store of an existing
// directory only if the directory is empty; otherwise it fails with an
// error matching ErrNoStore. ReadOnly is refused (ErrReadOnly).
func CreateDir(path string, opts ...DirOption) (*Dir, error) {
	cfg, err := newDirConfig(opts)
	if err != nil {
		return nil, err
	}
	if cfg.readOnly {
		return nil, fmt.Errorf("blobs: creating a store: %w", ErrReadOnly)
	}
	_, statErr := os.Stat(path)
	if err := os.MkdirAll(path, 0o700); err != nil {
		return nil, fmt.Errorf("blobs: creating a store: %w", err)
	}
	if errors.Is(statErr, fs.ErrNotExist) {
		// The new directory's name is durable before anything is put in it.
		if err := syncDir(filepath.Dir(filepath.Clean(path))); err != nil {
			return nil, fmt.Errorf("blobs: creating a store: %w", err)
		}
	}
	marked, err := readMarker(path)
	if err != nil {
		return nil, err
	}
	d := &Dir{path: path, locks: make(map[storageid.ID]*idLock)}
	if !marked {
		objects, others, err := scanStore(path, false)
		if err != nil {
			return nil, err
		}
		if !objects && others {
			return nil, fmt.Errorf("%w: %s is neither empty nor a store", ErrNoStore, path)
		}
		if err := d.writeMarker(); err != nil {
			return nil, err
		}
	}
	return openDir(path, cfg)
}

func openDir(path string, cfg dirConfig) (*Dir, error) {
	d := &Dir{path: path, readOnly: cfg.readOnly, locks: make(map[storageid.ID]*idLock)}
	if !d.readOnly {
		if err := d.Sweep(context.Background()); err != nil {
			return nil, fmt.Errorf("blobs: opening %s: %w", path, err)
		}
	}
	return d, nil
}

func (d *Dir) dataPath(id storageid.ID) string {
	return filepath.Join(d.path, id.String()+dataExt)
}

func (d *Dir) outboardPath(id storageid.ID) string {
	return filepath.Join(d.path, id.String()+outboardExt)
}

func (d *Dir) objectLockPath(id storageid.ID) string {
	return filepath.Join(d.path, objectLockPrefix+id.String())
}

func (d *Dir) tempPath(token, ext string) string {
	return filepath.Join(d.path, tempPrefix+token+ext)
}

// syncDir makes the names in directory path durable: an fsync of the
// directory, after a file in it was created, renamed or removed.
func syncDir(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
