package blobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
)

const (
	dataExt     = ".data"
	outboardExt = ".obao4"

	// tempPrefix starts the name of every temporary file; no final name
	// (64 hex digits and an extension) can start with it.
	tempPrefix = ".tmp-"
)

// A Dir is the embedded pure-Go blob store: a directory holding, for each
// object, <storage_id in hex>.data (its exact bytes) and
// <storage_id in hex>.obao4 (its pre-order BAO outboard with 16 KiB groups,
// byte-identical to the file iroh-blobs' FsStore keeps, without a size
// prefix). See SOP-PME-1 Sections 11.7 and 11.10.
//
// A Dir implements Store, and verify.Source from those two files; it never
// returns object bytes except inside a slice for verify to check.
//
// Only ciphertext is ever written to a Dir by this library: the writer
// imports finished SOP-PME-1 objects, whose bytes are PME-encrypted.
//
// A Dir is safe for concurrent use by multiple goroutines, including
// concurrent imports of the same bytes. A directory must be used by one
// process at a time: OpenDir removes the temporary files of imports that
// did not finish.
type Dir struct {
	path string

	mu    sync.Mutex
	locks map[storageid.ID]*idLock // serialises the commits of each object

	hooks hooks // test hooks; zero in production
}

// hooks lets tests inject failures (see export_test.go).
type hooks struct {
	// wrapTemp wraps the writer of an import's temporary data file.
	wrapTemp func(io.Writer) io.Writer
	// fail, if set, is called at each step of Commit; an error it returns
	// fails that step.
	fail func(step string) error
}

type idLock struct {
	mu   sync.Mutex
	refs int
}

var (
	_ Store         = (*Dir)(nil)
	_ verify.Source = (*Dir)(nil)
)

// OpenDir opens the store in directory path, creating the directory if it
// is missing, and removes the temporary files that imports interrupted by a
// crash left behind.
func OpenDir(path string) (*Dir, error) {
	if err := os.MkdirAll(path, 0o700); err != nil {
		return nil, fmt.Errorf("blobs: opening store: %w", err)
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, fmt.Errorf("blobs: opening store: %w", err)
	}
	names := make(map[string]bool, len(entries))
	for _, e := range entries {
		names[e.Name()] = true
	}
	for _, e := range entries {
		// Stray temporary files, and outboards whose data never got its
		// name (a crash between the two renames of Commit).
		name := e.Name()
		stray := strings.HasPrefix(name, tempPrefix) ||
			(strings.HasSuffix(name, outboardExt) && !names[strings.TrimSuffix(name, outboardExt)+dataExt])
		if stray {
			if err := os.Remove(filepath.Join(path, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("blobs: removing a stray file: %w", err)
			}
		}
	}
	return &Dir{path: path, locks: make(map[storageid.ID]*idLock)}, nil
}

func (d *Dir) dataPath(id storageid.ID) string {
	return filepath.Join(d.path, id.String()+dataExt)
}

func (d *Dir) outboardPath(id storageid.ID) string {
	return filepath.Join(d.path, id.String()+outboardExt)
}

// lockID serialises the commits of one object within the process.
func (d *Dir) lockID(id storageid.ID) func() {
	d.mu.Lock()
	l := d.locks[id]
	if l == nil {
		l = new(idLock)
		d.locks[id] = l
	}
	l.refs++
	d.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		d.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(d.locks, id)
		}
		d.mu.Unlock()
	}
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
func (d *Dir) Create(ctx context.Context) (Pending, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(d.path, tempPrefix+"*"+dataExt)
	if err != nil {
		return nil, fmt.Errorf("blobs: creating a temporary file: %w", err)
	}
	p := &pending{d: d, data: f, w: f}
	if d.hooks.wrapTemp != nil {
		p.w = d.hooks.wrapTemp(f)
	}
	return p, nil
}

// pending is an import into a Dir.
type pending struct {
	d *Dir

	mu       sync.Mutex
	data     *os.File  // the temporary data file
	outboard *os.File  // the temporary outboard file, once Commit made it
	w        io.Writer // writes to data
	h        verify.Hasher
	err      error  // the first write error: sticky
	closed   string // "committed" or "aborted" once closed

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
	n, err := p.w.Write(b)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	if err != nil {
		p.err = fmt.Errorf("blobs: writing object: %w", err)
		return n, p.err
	}
	p.h.Write(b)
	return n, nil
}

// Commit implements Pending. The sequence is: fsync the data file; write
// and fsync the outboard file; rename the outboard to its final name and
// fsync the directory; rename the data and fsync the directory again (so
// that a visible .data file always has its outboard, even after a crash).
// If the store already holds the object intact (verified against its
// storage_id), the temporary file is discarded and the storage_id returned;
// a damaged copy is replaced. On any error, including ctx being done, no
// object becomes visible and the temporary files are removed.
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
	unlock := d.lockID(id)
	defer unlock()

	dataFinal, obFinal := d.dataPath(id), d.outboardPath(id)
	if fi, err := os.Stat(dataFinal); err == nil && fi.Mode().IsRegular() && uint64(fi.Size()) == size {
		// Already held, if the copy held is intact: a copy damaged in place
		// is replaced by these bytes, never trusted for its name and size.
		if verify.Verify(ctx, d, id, verify.WithExpectedSize(int64(size))) == nil {
			return id, nil
		}
	}

	fail := func(step string, err error) (storageid.ID, error) {
		return storageid.ID{}, fmt.Errorf("blobs: commit: %s: %w", step, err)
	}
	if err := d.step("sync-data"); err != nil {
		return fail("syncing data", err)
	}
	if err := p.data.Sync(); err != nil {
		return fail("syncing data", err)
	}
	ob, err := os.CreateTemp(d.path, tempPrefix+"*"+outboardExt)
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
	if err := ctx.Err(); err != nil {
		return fail("before publishing", err)
	}

	err = d.step("rename-outboard")
	if err == nil {
		err = os.Rename(ob.Name(), obFinal)
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
		os.Remove(obFinal)
		return fail("syncing directory", err)
	}
	err = d.step("rename-data")
	if err == nil {
		err = os.Rename(p.data.Name(), dataFinal)
	}
	if err != nil {
		os.Remove(obFinal)
		return fail("publishing data", err)
	}
	p.dataRenamed = true
	err = d.step("sync-dir")
	if err == nil {
		err = syncDir(d.path)
	}
	if err != nil {
		os.Remove(dataFinal)
		os.Remove(obFinal)
		return fail("syncing directory", err)
	}
	return id, nil
}

// removeTemps closes and removes the temporary files that remain.
func (p *pending) removeTemps() error {
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
// ErrNotFound if the store does not hold id. The returned reader produces the
// slice lazily (see verify.ExtractSlice) and fails once ctx is done; closing
// it closes the files.
func (d *Dir) Slice(ctx context.Context, id storageid.ID, off, n uint64) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	df, err := os.Open(d.dataPath(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	} else if err != nil {
		return nil, fmt.Errorf("blobs: opening %s: %w", id, err)
	}
	of, err := os.Open(d.outboardPath(id))
	if err != nil {
		df.Close()
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s has no outboard", ErrNotFound, id)
		}
		return nil, fmt.Errorf("blobs: opening the outboard of %s: %w", id, err)
	}
	fi, err := df.Stat()
	if err != nil {
		df.Close()
		of.Close()
		return nil, fmt.Errorf("blobs: %s: %w", id, err)
	}
	r, err := verify.ExtractSlice(df, of, uint64(fi.Size()), off, n)
	if err != nil {
		df.Close()
		of.Close()
		return nil, fmt.Errorf("blobs: slice of %s: %w", id, err)
	}
	return &sliceFiles{ctx: ctx, r: r, data: df, outboard: of}, nil
}

// sliceFiles is a slice being read from a Dir's files.
type sliceFiles struct {
	ctx            context.Context
	r              io.Reader
	data, outboard *os.File
}

func (s *sliceFiles) Read(p []byte) (int, error) {
	if err := s.ctx.Err(); err != nil {
		return 0, err
	}
	return s.r.Read(p)
}

func (s *sliceFiles) Close() error {
	return errors.Join(s.data.Close(), s.outboard.Close())
}
