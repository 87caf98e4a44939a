//go:build iroh

package iroh

/*
#cgo CFLAGS: -I${SRCDIR}/ffi
#cgo LDFLAGS: ${SRCDIR}/lib/libsop_iroh.a -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
#include <stdlib.h>
#include "sop_iroh.h"
*/
import "C"

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
	"unsafe"

	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
)

// abiVersion is the ABI this package is written against. Calling
// C.sop_iroh_abi_v6 makes a library of another ABI version fail to link.
const abiVersion = 6

const (
	irohDir    = "iroh"    // the iroh-blobs FsStore, under the store directory
	stagingDir = "staging" // Pending objects, under the store directory
	tagPrefix  = "sop-pme/"
	errCap     = 1024

	// DefaultFetchTimeout bounds a remote fetch whose context has no deadline.
	DefaultFetchTimeout = 60 * time.Second

	// DefaultDeleteTimeout bounds a Delete whose context has no deadline.
	DefaultDeleteTimeout = 2 * time.Minute

	// DefaultResolveTimeout bounds a Resolve whose context has no deadline.
	DefaultResolveTimeout = 20 * time.Second
)

var (
	_ blobs.Store   = (*Store)(nil)
	_ verify.Source = (*Store)(nil)
	_ verify.Source = (*Remote)(nil)
)

// A Store is an iroh-blobs file-system store. It is safe for concurrent use.
// Close it when done; there is no finalizer.
type Store struct {
	dir string

	mu     sync.RWMutex // write-locked only by Close
	h      *C.SopIrohStore
	closed bool

	fetchTimeout time.Duration
}

// An Option configures Open.
type Option func(*config) error

type config struct {
	fetchTimeout time.Duration
	deletable    bool
}

// WithDelete opens the store so that [Store.Delete] can delete objects
// from it: iroh-blobs' garbage collection is turned on, to run only when
// Delete asks, and then removes every complete blob that no tag holds
// (objects imported into this store are tagged; blobs fetched into it from
// another node by [Remote.Slice] or [Store.Fetch] are not, and go once
// complete, while partial ones are kept), and the store keeps every blob's
// data and outboard in files of their own, none inline in its database,
// whose freed pages would keep the bytes of a deleted blob until reused. Do
// not use it for a store that caches fetched blobs.
//
// Blobs of up to 16 KiB written before by an Open without WithDelete stay
// inline in the database, and their bytes may stay in its freed pages after
// Delete.
func WithDelete() Option {
	return func(c *config) error {
		c.deletable = true
		return nil
	}
}

// WithFetchTimeout sets the time limit of a remote fetch whose context has no
// deadline (default DefaultFetchTimeout).
func WithFetchTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return errors.New("iroh: fetch timeout must be positive")
		}
		c.fetchTimeout = d
		return nil
	}
}

func errBuf() []byte { return make([]byte, errCap) }

func errPtr(b []byte) *C.char { return (*C.char)(unsafe.Pointer(&b[0])) }

func mkErr(op string, rc C.int32_t, buf []byte) error {
	if rc == 0 {
		return nil
	}
	msg := buf
	if i := bytes.IndexByte(msg, 0); i >= 0 {
		msg = msg[:i]
	}
	return &Error{Op: op, Code: Code(rc), Msg: string(msg)}
}

func u8(b []byte) *C.uint8_t {
	if len(b) == 0 {
		return nil
	}
	return (*C.uint8_t)(unsafe.Pointer(&b[0]))
}

// Open opens the store in directory dir, creating it if needed. The
// iroh-blobs store lives in dir/iroh, objects being written are staged in
// dir/staging. Only one process may have a store open at a time; Open fails
// if another has it.
func Open(ctx context.Context, dir string, opts ...Option) (*Store, error) {
	cfg := config{fetchTimeout: DefaultFetchTimeout}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if v := C.sop_iroh_abi_v6(); v != abiVersion {
		return nil, fmt.Errorf("iroh: library ABI version %d, want %d", v, abiVersion)
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("iroh: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, stagingDir), 0o700); err != nil {
		return nil, fmt.Errorf("iroh: %w", err)
	}
	root := []byte(filepath.Join(dir, irohDir))
	if err := os.MkdirAll(string(root), 0o700); err != nil {
		return nil, fmt.Errorf("iroh: %w", err)
	}
	var flags C.uint32_t
	if cfg.deletable {
		flags |= C.SOP_IROH_OPEN_DELETE
	}
	var h *C.SopIrohStore
	eb := errBuf()
	rc := C.sop_iroh_store_open(u8(root), C.size_t(len(root)), flags, &h, errPtr(eb), errCap)
	if err := mkErr("open", rc, eb); err != nil {
		return nil, err
	}
	// Objects left staged by a process that stopped before Commit or Abort.
	// The iroh-blobs store is open, so no other process has this directory.
	if stale, err := filepath.Glob(filepath.Join(dir, stagingDir, "pending-*")); err == nil {
		for _, f := range stale {
			os.Remove(f)
		}
	}
	return &Store{dir: dir, h: h, fetchTimeout: cfg.fetchTimeout}, nil
}

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.dir }

// IrohDir returns the directory of the iroh-blobs store inside Dir.
func (s *Store) IrohDir() string { return filepath.Join(s.dir, irohDir) }

// Close stops serving, closes the endpoint and shuts the iroh-blobs store
// down cleanly. Slices still open are cancelled: their next Read fails with
// ErrClosed (they still need their Close). Calls after the first return nil.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	eb := errBuf()
	rc := C.sop_iroh_store_close(s.h, errPtr(eb), errCap)
	s.h = nil
	return mkErr("close", rc, eb)
}

// acquire read-locks the store for one library call.
func (s *Store) acquire(ctx context.Context) (*C.SopIrohStore, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return nil, ErrClosed
	}
	return s.h, nil
}

func (s *Store) release() { s.mu.RUnlock() }

func (s *Store) importBytes(ctx context.Context, b []byte, tag []byte, expect *storageid.ID) (storageid.ID, error) {
	h, err := s.acquire(ctx)
	if err != nil {
		return storageid.ID{}, err
	}
	defer s.release()
	var out storageid.ID
	var exp *C.uint8_t
	if expect != nil {
		exp = u8(expect[:])
	}
	eb := errBuf()
	rc := C.sop_iroh_import_bytes(h, u8(b), C.size_t(len(b)), u8(tag), C.size_t(len(tag)),
		exp, u8(out[:]), errPtr(eb), errCap)
	return out, mkErr("import_bytes", rc, eb)
}

func (s *Store) importPath(ctx context.Context, path string, tag []byte, expect *storageid.ID) (storageid.ID, error) {
	h, err := s.acquire(ctx)
	if err != nil {
		return storageid.ID{}, err
	}
	defer s.release()
	path, err = filepath.Abs(path)
	if err != nil {
		return storageid.ID{}, fmt.Errorf("iroh: %w", err)
	}
	p := []byte(path)
	var out storageid.ID
	var exp *C.uint8_t
	if expect != nil {
		exp = u8(expect[:])
	}
	eb := errBuf()
	rc := C.sop_iroh_import_path(h, u8(p), C.size_t(len(p)), u8(tag), C.size_t(len(tag)),
		exp, u8(out[:]), errPtr(eb), errCap)
	return out, mkErr("import_path", rc, eb)
}

func tagFor(id storageid.ID) []byte { return []byte(tagPrefix + id.String()) }

// Objects returns the storage_ids of the objects imported into the store
// (those its tags "sop-pme/<storage_id>" hold), in order; not the blobs
// fetched into it from another node.
func (s *Store) Objects(ctx context.Context) ([]storageid.ID, error) {
	h, err := s.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer s.release()
	p := []byte(tagPrefix)
	var ptr *C.uint8_t
	var ln C.size_t
	eb := errBuf()
	rc := C.sop_iroh_tagged(h, u8(p), C.size_t(len(p)), &ptr, &ln, errPtr(eb), errCap)
	if err := mkErr("tagged", rc, eb); err != nil {
		return nil, err
	}
	defer C.sop_iroh_free(ptr, ln)
	b := goBytes(ptr, ln)
	if len(b)%len(storageid.ID{}) != 0 {
		return nil, &Error{Op: "tagged", Code: CodeInternal, Msg: fmt.Sprintf("%d bytes of hashes", len(b))}
	}
	ids := make([]storageid.ID, len(b)/len(storageid.ID{}))
	for i := range ids {
		copy(ids[i][:], b[i*len(storageid.ID{}):])
	}
	return ids, nil
}

// Delete deletes the objects ids from a store opened [WithDelete] (else it
// fails with CodeInvalid): they stop being served at once, then their tags
// are deleted and iroh-blobs' garbage collection runs, which removes their
// data and outboard files (and every other complete blob that no tag
// holds), and Delete waits for it to end (until ctx's deadline, or
// DefaultDeleteTimeout without one, else ErrTimeout; a ctx cancelled
// without a deadline is seen only at the end) and checks that none is left
// (CodeIO if one is). An id the
// store does not hold is no error, so Delete can be repeated. It takes
// some tens of milliseconds, for one id or many: the collection starts at
// the next 20 ms tick of iroh-blobs' GC task, and is seen to end at the
// tick after it.
//
// The bytes are removed from the files under IrohDir; the file system may
// keep them in freed blocks (a deleted file is not overwritten), and a
// fetch already under way may still finish.
func (s *Store) Delete(ctx context.Context, ids ...storageid.ID) error {
	timeout := DefaultDeleteTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
		if timeout <= 0 {
			return context.DeadlineExceeded
		}
	}
	ms := max(uint64(timeout.Milliseconds()), 1)
	h, err := s.acquire(ctx)
	if err != nil {
		return err
	}
	defer s.release()
	hashes := make([]byte, 0, 32*len(ids))
	for _, id := range ids {
		hashes = append(hashes, id[:]...)
	}
	eb := errBuf()
	rc := C.sop_iroh_delete(h, u8(hashes), C.size_t(len(ids)), C.uint64_t(ms), errPtr(eb), errCap)
	return mkErr("delete", rc, eb)
}

// ImportBytes imports b as a blob and returns its storage_id, the hash
// iroh-blobs computed for it, after checking that it equals storageid.Sum(b).
// The blob is kept under the named tag "sop-pme/<storage_id>".
func (s *Store) ImportBytes(ctx context.Context, b []byte) (storageid.ID, error) {
	want := storageid.Sum(b)
	return s.importBytes(ctx, b, tagFor(want), &want)
}

// ImportFile imports a copy of the file at path and returns its storage_id,
// the hash iroh-blobs computed for it, after checking it against the
// storage_id computed here over the file. The file must not change while it
// is imported. The blob is kept under the named tag "sop-pme/<storage_id>".
func (s *Store) ImportFile(ctx context.Context, path string) (storageid.ID, error) {
	f, err := os.Open(path)
	if err != nil {
		return storageid.ID{}, fmt.Errorf("iroh: %w", err)
	}
	want, _, err := storageid.SumReader(f)
	f.Close()
	if err != nil {
		return storageid.ID{}, err
	}
	return s.importPath(ctx, path, tagFor(want), &want)
}

// exportBao returns the BAO slice of the chunk groups intersecting
// [off, off+n), from sop_iroh_export_bao in one call.
func (s *Store) exportBao(ctx context.Context, id storageid.ID, off, n uint64) ([]byte, error) {
	h, err := s.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer s.release()
	ranges := [2]C.uint64_t{C.uint64_t(off), C.uint64_t(n)}
	var ptr *C.uint8_t
	var ln C.size_t
	eb := errBuf()
	rc := C.sop_iroh_export_bao(h, u8(id[:]), &ranges[0], 1, &ptr, &ln, errPtr(eb), errCap)
	if err := mkErr("export_bao", rc, eb); err != nil {
		return nil, err
	}
	defer C.sop_iroh_free(ptr, ln)
	return goBytes(ptr, ln), nil
}

// goBytes copies n bytes at p, memory of the library, into Go memory.
func goBytes(p *C.uint8_t, n C.size_t) []byte {
	b := make([]byte, int(n))
	if n > 0 {
		copy(b, unsafe.Slice((*byte)(unsafe.Pointer(p)), int(n)))
	}
	return b
}

// Slice reads ranges of up to smallSlice bytes whole before returning, with
// one call to sop_iroh_export_bao up to oneCallSlice bytes and from a cursor
// beyond (faster from about 512 KiB, twice as fast at 1 MiB:
// BenchmarkSliceSizes), and streams larger ranges.
const (
	oneCallSlice = 256 << 10
	smallSlice   = 1 << 20
)

// Slice implements verify.Source with iroh-blobs' export_bao, which verifies
// the data and outboard it reads against id. A range at or past the end of
// the blob selects its last 16 KiB group.
//
// A range of at most 1 MiB is read whole before Slice returns, so any
// failure is reported by Slice. A larger one is streamed: the reader pulls
// the encoding from the library as it is read, with memory bounded whatever
// the range's size (about 1 MiB read ahead in the library, a 256 KiB buffer
// here), and data failing verification is reported by the Read that reaches
// it, as an error matching ErrCorrupt; the stream never ends short without
// an error. Its reads fail once ctx is done or the store is closed. Close
// the reader when done, at any point: Close stops the export.
func (s *Store) Slice(ctx context.Context, id storageid.ID, off, n uint64) (io.ReadCloser, error) {
	if n == 0 {
		return nil, errors.New("iroh: empty range")
	}
	var b []byte
	var err error
	switch {
	case n > smallSlice:
		return s.openExport(ctx, id, off, n)
	case n <= oneCallSlice:
		b, err = s.exportBao(ctx, id, off, n)
	default:
		b, err = s.readSlice(ctx, id, off, n)
	}
	if err != nil {
		return nil, err
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

// Size returns the size of blob id, proven by verifying its last group. A
// store that holds only part of a blob, without its last group, does not
// know the size: Size then fails with an error matching blobs.ErrNotFound.
func (s *Store) Size(ctx context.Context, id storageid.ID) (uint64, error) {
	h, err := s.acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer s.release()
	var size C.uint64_t
	eb := errBuf()
	rc := C.sop_iroh_verified_size(h, u8(id[:]), &size, errPtr(eb), errCap)
	return uint64(size), mkErr("verified_size", rc, eb)
}
