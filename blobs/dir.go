package blobs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

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

// readMarker reports whether path is a directory holding a valid marker
// file. A directory without one is not an error; a missing path, a path
// that is not a directory, and a marker of an unknown layout are, matching
// ErrNoStore.
func readMarker(path string) (bool, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("%w: %w", ErrNoStore, err)
	} else if err != nil {
		return false, fmt.Errorf("blobs: opening a store: %w", err)
	}
	if !fi.IsDir() {
		return false, fmt.Errorf("%w: %s is not a directory", ErrNoStore, path)
	}
	f, _, err := openRegular(filepath.Join(path, markerName))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	} else if errors.Is(err, ErrNotRegular) {
		return false, fmt.Errorf("%w: %w", ErrNoStore, err)
	} else if err != nil {
		return false, fmt.Errorf("blobs: opening a store: %w", err)
	}
	defer f.Close()
	b := make([]byte, len(markerLine))
	if _, err := io.ReadFull(f, b); err != nil || string(b) != markerLine {
		return false, fmt.Errorf("%w: %s: %s does not hold %q: an unknown layout", ErrNoStore, path, markerName, strings.TrimSpace(markerLine))
	}
	return true, nil
}

// scanStore reports whether the directory holds an object file, and
// whether it holds any file other than object files and this package's
// temporary and lock files. With firstObject it stops at the first object
// file.
func scanStore(path string, firstObject bool) (objects, others bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return false, false, fmt.Errorf("blobs: opening a store: %w", err)
	}
	defer f.Close()
	for {
		entries, err := f.ReadDir(256)
		for _, e := range entries {
			name := e.Name()
			switch {
			case isObjectName(name, dataExt) || isObjectName(name, outboardExt):
				objects = true
				if firstObject {
					return true, others, nil
				}
			case strings.HasPrefix(name, tempPrefix), strings.HasPrefix(name, objectLockPrefix):
			case name == markerName:
				// Another process's CreateDir marked the directory since
				// this one looked: it is a store.
			default:
				others = true
			}
		}
		if err == io.EOF {
			return objects, others, nil
		}
		if err != nil {
			return false, false, fmt.Errorf("blobs: reading a store: %w", err)
		}
	}
}

// parseObjectName returns the storage_id that names the object file name,
// <storage_id in 64 lowercase hex digits><ext>.
func parseObjectName(name, ext string) (storageid.ID, bool) {
	stem, ok := strings.CutSuffix(name, ext)
	if !ok || len(stem) != 2*storageid.Size {
		return storageid.ID{}, false
	}
	id, err := storageid.Parse(stem)
	if err != nil || id.String() != stem {
		return storageid.ID{}, false
	}
	return id, true
}

func isObjectName(name, ext string) bool {
	_, ok := parseObjectName(name, ext)
	return ok
}

// writeMarker writes the marker file atomically: a temporary file, synced,
// renamed, and the directory synced.
func (d *Dir) writeMarker() (err error) {
	token, owner, err := d.newOwner()
	if err != nil {
		return fmt.Errorf("blobs: marking the store: %w", err)
	}
	tmp := d.tempPath(token, markerExt)
	defer func() {
		if err != nil {
			os.Remove(tmp)
			err = fmt.Errorf("blobs: marking the store: %w", err)
		}
		owner.release()
	}()
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(markerLine)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(d.path, markerName)); err != nil {
		return err
	}
	return syncDir(d.path)
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

// newOwner picks a random token for temporary files and takes the lock
// that owns them, .tmp-<token>.lock. The caller creates the temporary files
// only after this, and removes them before it releases the lock.
func (d *Dir) newOwner() (string, *fileLock, error) {
	for range 4 {
		var b [16]byte
		rand.Read(b[:])
		token := hex.EncodeToString(b[:])
		l, ok, err := tryLockFile(d.tempPath(token, lockExt), true)
		if err != nil {
			return "", nil, err
		}
		if ok {
			return token, l, nil
		}
		// A Sweep took the new lock file between its creation and our
		// lock, and removed it: take another token.
	}
	return "", nil, errors.New("blobs: cannot take the lock of a temporary file")
}

// lockObject serialises, within the process and across processes, the
// changes to object id: Commit, Delete and the sweeping of its outboard.
// It waits for another holder until ctx is done.
func (d *Dir) lockObject(ctx context.Context, id storageid.ID) (func(), error) {
	unlock, err := d.lockID(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("locking object %s: %w", id, err)
	}
	l, err := lockFile(ctx, d.objectLockPath(id))
	if err != nil {
		unlock()
		return nil, fmt.Errorf("locking object %s: %w", id, err)
	}
	return func() {
		l.release()
		unlock()
	}, nil
}

// lockID serialises the changes to one object within the process (so that
// goroutines wait on a channel rather than poll the file lock), until ctx
// is done.
func (d *Dir) lockID(ctx context.Context, id storageid.ID) (func(), error) {
	d.mu.Lock()
	l := d.locks[id]
	if l == nil {
		l = &idLock{ch: make(chan struct{}, 1)}
		d.locks[id] = l
	}
	l.refs++
	d.mu.Unlock()
	drop := func() {
		d.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(d.locks, id)
		}
		d.mu.Unlock()
	}
	select {
	case l.ch <- struct{}{}:
	case <-ctx.Done():
		drop()
		return nil, ctx.Err()
	}
	return func() {
		<-l.ch
		drop()
	}, nil
}

func (d *Dir) step(name string) error {
	if d.hooks.fail != nil {
		return d.hooks.fail(name)
	}
	return nil
}

// Create begins an import. The bytes written to the returned Pending go to a
// temporary file in the directory, hashed as they pass (one pass); Commit
// makes them an object. ctx bounds only the creation. The caller must Commit
// or Abort; Abort after Commit does nothing, so `defer p.Abort()` is safe.
// The temporary files stay the process's own until then: no other process
// removes them (see [Dir]). In a read-only Dir, Create fails with an error
// matching ErrReadOnly.
func (d *Dir) Create(ctx context.Context) (Pending, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if d.readOnly {
		return nil, fmt.Errorf("blobs: create: %w", ErrReadOnly)
	}
	token, owner, err := d.newOwner()
	if err != nil {
		return nil, fmt.Errorf("blobs: creating a temporary file: %w", err)
	}
	f, err := os.OpenFile(d.tempPath(token, dataExt), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		owner.release()
		return nil, fmt.Errorf("blobs: creating a temporary file: %w", err)
	}
	p := &pending{d: d, token: token, owner: owner, data: f, w: f}
	if d.hooks.wrapTemp != nil {
		p.w = d.hooks.wrapTemp(f)
	}
	return p, nil
}

// pending is an import into a Dir.
type pending struct {
	d     *Dir
	token string    // names the temporary files
	owner *fileLock // owns them, until they are removed or renamed

	mu       sync.Mutex
	data     *os.File  // the temporary data file
	outboard *os.File  // the temporary outboard file, once Commit made it
	w        io.Writer // writes to data
	h        verify.Hasher
	err      error  // the first write error: sticky
	closed   string // "committed" or "aborted" once closed

	// Writeback: written bytes have gone to data; those before flushed
	// were handed to startWriteback, by at most one goroutine at a time
	// (wbBusy), which wb counts.
	written, flushed int64
	wbBusy, wbOff    atomic.Bool
	wb               sync.WaitGroup

	// Set once a temporary file has its final name.
	dataRenamed, outboardRenamed bool
}

// Write implements io.Writer. A failed write makes Commit fail.
func (p *pending) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed != "" {
		return 0, fmt.Errorf("%w: object %s", ErrClosed, p.closed)
	}
	if p.err != nil {
		return 0, p.err
	}
	// A large write is hashed on another goroutine while it goes to the
	// file: the two passes over b overlap. A failed write fails Commit, so
	// what the hasher saw of it does not matter.
	var hashed chan struct{}
	if len(b) >= parallelHashMin {
		hashed = make(chan struct{})
		go func() {
			defer close(hashed)
			p.h.Write(b)
		}()
	}
	n, err := p.w.Write(b)
	if hashed != nil {
		<-hashed
	} else {
		p.h.Write(b)
	}
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	if err != nil {
		p.err = fmt.Errorf("blobs: writing object: %w", err)
		return n, p.err
	}
	p.written += int64(n)
	if p.written-p.flushed >= writebackEvery {
		p.writeback()
	}
	return n, nil
}

// parallelHashMin is the write size from which Write hashes and writes at
// once.
const parallelHashMin = 64 << 10

// writebackEvery is how many written bytes make Write ask the kernel to
// start writing them to the device (see startWriteback): the disk then
// works while the object is still being sealed, and the commit's fsync
// waits only for the last few MiB instead of the whole object (on a
// 33 MB object here, 1.2 ms instead of 11). Databases do the same
// (RocksDB's bytes_per_sync, PostgreSQL's backend_flush_after).
const writebackEvery = 4 << 20

// writeback hands the bytes written since the last call to startWriteback
// on a goroutine of its own, unless the previous one is still running (the
// next call then covers both ranges) or the file system refused.
func (p *pending) writeback() {
	if p.wbOff.Load() || !p.wbBusy.CompareAndSwap(false, true) {
		return
	}
	f, off, n := p.data, p.flushed, p.written-p.flushed
	p.flushed = p.written
	p.wb.Go(func() {
		defer p.wbBusy.Store(false)
		if startWriteback(f, off, n) != nil {
			p.wbOff.Store(true)
		}
	})
}

// Commit implements Pending. It holds the object's lock across processes
// (see [Dir]) from the check below to the last rename. The sequence is:
// fsync the data file; write and fsync the outboard file; rename the
// outboard to its final name and fsync the directory; rename the data and
// fsync the directory again (so that a visible .data file always has its
// outboard, even after a crash). If the store already holds the object
// intact (verified against its storage_id), the temporary file is
// discarded and the storage_id returned; a damaged copy is replaced. On any
// error, including ctx being done (while waiting for the object's lock
// too), no object becomes visible and the temporary files are removed.
func (p *pending) Commit(ctx context.Context) (storageid.ID, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed != "" {
		return storageid.ID{}, fmt.Errorf("%w: object %s", ErrClosed, p.closed)
	}
	p.closed = "committed"
	id, err := p.commit(ctx)
	p.removeTemps()
	if err != nil {
		return storageid.ID{}, err
	}
	return id, nil
}

func (p *pending) commit(ctx context.Context) (storageid.ID, error) {
	d := p.d
	if p.err != nil {
		return storageid.ID{}, p.err
	}
	if err := ctx.Err(); err != nil {
		return storageid.ID{}, fmt.Errorf("blobs: commit: %w", err)
	}
	id, size := p.h.Sum()
	fail := func(step string, err error) (storageid.ID, error) {
		return storageid.ID{}, fmt.Errorf("blobs: commit: %s: %w", step, err)
	}
	unlock, err := d.lockObject(ctx, id)
	if err != nil {
		return fail("waiting for another commit or delete", err)
	}
	defer unlock()

	dataFinal, obFinal := d.dataPath(id), d.outboardPath(id)
	if fi, err := os.Lstat(dataFinal); err == nil && fi.Mode().IsRegular() && uint64(fi.Size()) == size {
		// Already held, if the copy held is intact: a copy damaged in place
		// is replaced by these bytes, never trusted for its name and size.
		if verify.Verify(ctx, d, id, verify.WithExpectedSize(int64(size))) == nil {
			return id, nil
		}
	}

	if err := d.step("sync-data"); err != nil {
		return fail("syncing data", err)
	}
	// The data's fsync runs while the outboard is written and synced: the
	// two files are independent until the renames below, which wait for
	// both.
	dataSynced := make(chan error, 1)
	go func() { dataSynced <- p.data.Sync() }()
	obErr := p.writeOutboard()
	if err := <-dataSynced; err != nil {
		return fail("syncing data", err)
	}
	if obErr != nil {
		return storageid.ID{}, obErr
	}
	if err := ctx.Err(); err != nil {
		return fail("before publishing", err)
	}

	err = d.step("rename-outboard")
	if err == nil {
		err = os.Rename(p.outboard.Name(), obFinal)
	}
	if err != nil {
		return fail("publishing outboard", err)
	}
	p.outboardRenamed = true
	// The outboard's name is durable before the data's: after a crash, a
	// visible .data file always has its outboard.
	err = d.step("sync-dir-outboard")
	if err == nil {
		err = syncDir(d.path)
	}
	if err != nil {
		unpublish(dataFinal, obFinal)
		return fail("syncing directory", err)
	}
	err = d.step("rename-data")
	if err == nil {
		err = os.Rename(p.data.Name(), dataFinal)
	}
	if err != nil {
		unpublish(dataFinal, obFinal)
		return fail("publishing data", err)
	}
	p.dataRenamed = true
	d.held.forget(id) // a damaged copy it replaced may be held
	err = d.step("sync-dir")
	if err == nil {
		err = syncDir(d.path)
	}
	if err != nil {
		unpublish(dataFinal, obFinal)
		return fail("syncing directory", err)
	}
	return id, nil
}

// writeOutboard creates, writes and syncs the temporary outboard file.
func (p *pending) writeOutboard() error {
	d := p.d
	fail := func(step string, err error) error {
		return fmt.Errorf("blobs: commit: %s: %w", step, err)
	}
	ob, err := os.OpenFile(d.tempPath(p.token, outboardExt), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fail("creating outboard", err)
	}
	p.outboard = ob
	if err := d.step("write-outboard"); err != nil {
		return fail("writing outboard", err)
	}
	if err := p.h.WriteOutboard(ob); err != nil {
		return fail("writing outboard", err)
	}
	if err := d.step("sync-outboard"); err != nil {
		return fail("syncing outboard", err)
	}
	if err := ob.Sync(); err != nil {
		return fail("syncing outboard", err)
	}
	return nil
}

// unpublish undoes a failed Commit once its outboard has its final name:
// the data first (ours, or the damaged copy that Commit was replacing,
// which no longer has its own outboard), then the outboard, so that a
// visible .data file keeps its outboard.
func unpublish(dataFinal, obFinal string) {
	os.Remove(dataFinal)
	os.Remove(obFinal)
}

// removeTemps closes and removes the temporary files that remain.
func (p *pending) removeTemps() error {
	p.wb.Wait()
	var errs []error
	for _, t := range []struct {
		f       *os.File
		renamed bool
	}{{p.data, p.dataRenamed}, {p.outboard, p.outboardRenamed}} {
		if t.f == nil {
			continue
		}
		t.f.Close()
		if t.renamed {
			continue
		}
		if err := os.Remove(t.f.Name()); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	p.data, p.outboard = nil, nil
	// The lock goes last: until then no other process removes the files.
	if p.owner != nil {
		errs = append(errs, p.owner.release())
		p.owner = nil
	}
	return errors.Join(errs...)
}

// Abort implements Pending.
func (p *pending) Abort() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed != "" {
		return nil
	}
	p.closed = "aborted"
	if err := p.removeTemps(); err != nil {
		return fmt.Errorf("blobs: abort: %w", err)
	}
	return nil
}

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

// Slice implements verify.Source from the object's .data and .obao4 files;
// the object's size is that of its .data file. It returns an error matching
// ErrNotFound if the store does not hold id, and one matching ErrNotRegular,
// at once, if either name is not a regular file of the directory (a FIFO,
// whose open would block until a writer came, a device, a socket, a
// directory or a symbolic link). The returned reader produces the slice
// lazily (see verify.ExtractSlice) and fails once ctx is done.
//
// The Dir keeps the files of the objects it sliced last open between
// slices (at most 32 objects, 64 files; [Dir.Close] closes them), and
// checks at each slice that the names still refer to the files it holds:
// a slice reads what opening the files afresh would read. Where an open
// file cannot be removed (Windows), a Delete or a repairing Commit by
// another process fails while this Dir holds the object's files; Close
// releases them.
func (d *Dir) Slice(ctx context.Context, id storageid.ID, off, n uint64) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	h, size, err := d.held.acquire(id, d.dataPath(id), d.outboardPath(id))
	if err != nil {
		return nil, err
	}
	r, err := verify.ExtractSlice(h.data, h.outboard, uint64(size), off, n)
	if err != nil {
		d.held.release(h)
		return nil, fmt.Errorf("blobs: slice of %s: %w", id, err)
	}
	return &sliceFiles{ctx: ctx, r: r, d: d, h: h}, nil
}

// sliceFiles is a slice being read from a Dir's files.
type sliceFiles struct {
	ctx  context.Context
	r    io.Reader
	d    *Dir
	h    *held
	once sync.Once
}

func (s *sliceFiles) Read(p []byte) (int, error) {
	if err := s.ctx.Err(); err != nil {
		return 0, err
	}
	return s.r.Read(p)
}

// Close ends the slice; a second Close does nothing.
func (s *sliceFiles) Close() error {
	var err error
	s.once.Do(func() { err = s.d.held.release(s.h) })
	return err
}

// Close closes the files the Dir keeps open between slices (see
// [Dir.Slice]); those of slices still being read close when those slices
// do. The Dir stays usable: a later Slice opens the files again. Closing
// is optional (files a dropped Dir kept open are closed when the garbage
// collector finds them), but a process that opens many Dirs should close
// each.
func (d *Dir) Close() error {
	d.held.closeAll()
	return nil
}
