package keyring

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// access says how an operation opens the ring file.
type access int

const (
	accessRead   access = iota // O_RDONLY, shared lock
	accessWrite                // O_RDWR, exclusive lock
	accessCreate               // O_RDWR|O_CREATE, exclusive lock, an empty file allowed
)

// withDB opens the ring file for one operation: it opens the file, locks it
// (shared for accessRead, exclusive otherwise), checks its bbolt meta and
// freelist pages under the lock, hands the same open file to bbolt, runs fn,
// and closes the database, which releases the lock. fn gets the open file
// too, for scrub. A panic or a memory fault inside bbolt becomes ErrFile.
func (r *Ring) withDB(ctx context.Context, a access, fn func(*bolt.DB, *os.File) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	flag := os.O_RDONLY | noBlock
	switch a {
	case accessWrite:
		flag = os.O_RDWR | noBlock
	case accessCreate:
		flag = os.O_RDWR | os.O_CREATE | noBlock
	}
	f, err := os.OpenFile(r.path, flag, 0o600)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s: %w", ErrNoRing, r.path, fs.ErrNotExist)
	}
	if err != nil {
		return fmt.Errorf("keyring: %w", err)
	}
	if err := lockFile(ctx, f, a != accessRead, r.cfg.lockTimeout); err != nil {
		f.Close()
		if errors.Is(err, ErrBusy) {
			return fmt.Errorf("%w: %s: locked for more than %v", ErrBusy, r.path, r.cfg.lockTimeout)
		}
		return fmt.Errorf("keyring: %s: %w", r.path, err)
	}
	if err := precheck(f, a == accessCreate); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", r.path, err)
	}
	var db *bolt.DB
	err = guard(func() error {
		var err error
		db, err = bolt.Open(r.path, 0o600, &bolt.Options{
			ReadOnly: a == accessRead,
			Timeout:  r.cfg.lockTimeout,
			OpenFile: func(string, int, os.FileMode) (*os.File, error) { return f, nil },
		})
		return err
	})
	if err != nil {
		f.Close() // bbolt closes f when it fails cleanly; a second Close is harmless
		return boltErr(r.path, err)
	}
	err = guard(func() error { return fn(db, f) })
	cerr := guard(db.Close)
	if err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return boltErr(r.path, err)
	}
	return nil
}

// guard runs fn, turning a panic, or a memory fault in the mapped file
// (debug.SetPanicOnFault), into ErrFile: bbolt trusts its pages.
func guard(fn func() error) (err error) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: bbolt failed: %v", ErrFile, p)
		}
	}()
	return fn()
}

// boltErr classifies an error from bbolt.
func boltErr(path string, err error) error {
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return fmt.Errorf("%w: %s", ErrBusy, path)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum),
		errors.Is(err, berrors.ErrVersionMismatch), errors.Is(err, berrors.ErrInvalidMapping):
		return fmt.Errorf("%w: %s: %w", ErrFile, path, err)
	}
	for _, s := range []error{ErrWrongKEK, ErrMaster, ErrUnwrap, ErrFile, ErrLegacyFormat, ErrNoRing,
		ErrReadOnly, ErrBusy, ErrConflict, ErrScrub, ErrKEK, ErrNotFound, ErrNoRecord, ErrRecord, ErrRecordSize, context.Canceled, context.DeadlineExceeded, errStale} {
		if errors.Is(err, s) {
			return err // already says what and where
		}
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("keyring: %w", err)
	}
	return fmt.Errorf("keyring: %s: %w", path, err)
}

// The bbolt file format (version 2), as far as precheck reads it. Integers
// are in the machine's byte order, as bbolt writes them.
const (
	boltMagic        = 0xED0CDAED
	boltVersion      = 2
	pageHeaderSize   = 16 // id u64, flags u16, count u16, overflow u32
	metaSize         = 64 // magic, version, pageSize, flags u32; root, sequence, freelist, pgid, txid u64
	metaSumOffset    = pageHeaderSize + 56
	freelistFlag     = 0x10
	noFreelist       = ^uint64(0)
	minPageSize      = 1 << 10
	maxPageSize      = 1 << 16
	firstDataPageID  = 2
	legacyProbeBytes = 64
)

type boltMeta struct {
	pageSize                   uint64
	root, freelist, pgid, txid uint64
}

// readMeta decodes and validates the meta of a page held in b (magic,
// version and checksum, as bbolt does), and reports whether it is valid.
func readMeta(b []byte) (boltMeta, bool) {
	if len(b) < pageHeaderSize+metaSize {
		return boltMeta{}, false
	}
	ne := binary.NativeEndian
	m := b[pageHeaderSize:]
	if ne.Uint32(m[0:]) != boltMagic || ne.Uint32(m[4:]) != boltVersion {
		return boltMeta{}, false
	}
	h := fnv.New64a()
	h.Write(b[pageHeaderSize:metaSumOffset])
	if h.Sum64() != ne.Uint64(b[metaSumOffset:]) {
		return boltMeta{}, false
	}
	return boltMeta{
		pageSize: uint64(ne.Uint32(m[8:])),
		root:     ne.Uint64(m[16:]),
		freelist: ne.Uint64(m[32:]),
		pgid:     ne.Uint64(m[40:]),
		txid:     ne.Uint64(m[48:]),
	}, true
}

// precheck validates, before bbolt maps the file, what bbolt would trust
// when it opens it: a valid meta page, a page size, page numbers inside the
// file, and a freelist whose count fits its pages (bbolt allocates by that
// count). It reads a few pages, whatever the size of the ring. It also
// recognises a version-1 JSON ring.
func precheck(f *os.File, allowEmpty bool) error {
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("keyring: %w", err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%w: not a regular file", ErrFile)
	}
	size := st.Size()
	if size == 0 {
		if allowEmpty {
			return nil // bbolt initialises an empty file
		}
		return fmt.Errorf("%w: empty file", ErrFile)
	}
	page0 := make([]byte, 4096)
	n, err := f.ReadAt(page0, 0)
	if err != nil && err != io.EOF {
		return fmt.Errorf("keyring: %w", err)
	}
	page0 = page0[:n]
	if t := bytes.TrimLeft(page0[:min(n, legacyProbeBytes)], " \t\r\n"); len(t) > 0 && t[0] == '{' {
		return ErrLegacyFormat
	}
	// The page size, found as bbolt finds it: from the first meta page, or
	// else from the second one at the offsets a page size can take.
	var ps uint64
	if m, ok := readMeta(page0); ok {
		ps = m.pageSize
	} else {
		buf := make([]byte, pageHeaderSize+metaSize)
		for off := int64(minPageSize); off <= maxPageSize && off < size-minPageSize; off *= 2 {
			if _, err := f.ReadAt(buf, off); err != nil {
				break
			}
			if m, ok := readMeta(buf); ok {
				ps = m.pageSize
				break
			}
		}
	}
	if ps < minPageSize || ps > maxPageSize || ps&(ps-1) != 0 || uint64(size) < 2*ps {
		return fmt.Errorf("%w: no valid bbolt meta page", ErrFile)
	}
	// The meta bbolt will use: the valid one with the higher txid.
	var best boltMeta
	found := false
	buf := make([]byte, pageHeaderSize+metaSize)
	for i := range uint64(2) {
		if _, err := f.ReadAt(buf, int64(i*ps)); err != nil {
			continue
		}
		if m, ok := readMeta(buf); ok && m.pageSize == ps && (!found || m.txid > best.txid) {
			best, found = m, true
		}
	}
	if !found {
		return fmt.Errorf("%w: no valid bbolt meta page", ErrFile)
	}
	m := best
	if m.pgid < firstDataPageID || m.pgid > uint64(size)/ps {
		return fmt.Errorf("%w: %d pages recorded in a file of %d bytes", ErrFile, m.pgid, size)
	}
	if m.root < firstDataPageID || m.root >= m.pgid {
		return fmt.Errorf("%w: root page %d of %d", ErrFile, m.root, m.pgid)
	}
	if m.freelist == noFreelist {
		return nil
	}
	if m.freelist < firstDataPageID || m.freelist >= m.pgid {
		return fmt.Errorf("%w: freelist page %d of %d", ErrFile, m.freelist, m.pgid)
	}
	hdr := make([]byte, pageHeaderSize+8)
	if _, err := f.ReadAt(hdr, int64(m.freelist*ps)); err != nil {
		return fmt.Errorf("%w: freelist page: %v", ErrFile, err)
	}
	ne := binary.NativeEndian
	id, flags, count, overflow := ne.Uint64(hdr), ne.Uint16(hdr[8:]), uint64(ne.Uint16(hdr[10:])), uint64(ne.Uint32(hdr[12:]))
	if id != m.freelist || flags != freelistFlag || m.freelist+overflow >= m.pgid {
		return fmt.Errorf("%w: freelist page %d", ErrFile, m.freelist)
	}
	room := ((overflow+1)*ps - pageHeaderSize) / 8
	if count == 0xFFFF { // the count is the first element
		count = ne.Uint64(hdr[pageHeaderSize:])
		room--
	}
	if count > room || count > m.pgid {
		return fmt.Errorf("%w: freelist of %d pages", ErrFile, count)
	}
	// Every free page is a data page inside the file. The list is read in
	// pieces, so that a long one costs no large buffer.
	skip := uint64(0)
	if ne.Uint16(hdr[10:]) == 0xFFFF {
		skip = 1
	}
	off := int64(m.freelist*ps) + pageHeaderSize + int64(8*skip)
	chunk := make([]byte, 8*512)
	for left := count; left > 0; {
		k := min(left, 512)
		if _, err := f.ReadAt(chunk[:8*k], off); err != nil {
			return fmt.Errorf("%w: freelist page: %v", ErrFile, err)
		}
		for j := range k {
			if p := ne.Uint64(chunk[8*j:]); p < firstDataPageID || p >= m.pgid {
				return fmt.Errorf("%w: free page %d of %d", ErrFile, p, m.pgid)
			}
		}
		left -= k
		off += int64(8 * k)
	}
	return nil
}

// syncDir makes a new directory entry durable.
func syncDir(path string) error {
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("keyring: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("keyring: %w", err)
	}
	return nil
}
