//go:build iroh

package iroh

/*
#include "sop_iroh.h"
*/
import "C"

import (
	"context"
	"errors"
	"io"
	"runtime"
	"slices"
	"sync"

	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
)

// streamBuf is the size of a streamed slice's buffer, used for reads smaller
// than it; larger reads go straight into the caller's buffer.
const streamBuf = 256 << 10

// errReaderClosed is returned by Read after Close.
var errReaderClosed = errors.New("iroh: read from a closed slice")

// An exportReader streams a BAO slice from a cursor of the library
// (sop_iroh_export_open). Each refill is one sop_iroh_export_read call.
type exportReader struct {
	s   *Store
	ctx context.Context
	eb  []byte // the library's error messages

	mu      sync.Mutex
	cur     *C.SopIrohExport // nil once released
	cleanup runtime.Cleanup  // frees cur if the reader is dropped unclosed
	buf     []byte           // allocated at the first read smaller than streamBuf
	r, w    int              // unread bytes: buf[r:w]
	err     error            // sticky: io.EOF, a failure, or errReaderClosed
}

// openExport opens a streaming export of the chunk groups of blob id that
// intersect [off, off+n).
func (s *Store) openExport(ctx context.Context, id storageid.ID, off, n uint64) (io.ReadCloser, error) {
	h, err := s.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer s.release()
	ranges := [2]C.uint64_t{C.uint64_t(off), C.uint64_t(n)}
	var cur *C.SopIrohExport
	eb := errBuf()
	rc := C.sop_iroh_export_open(h, u8(id[:]), &ranges[0], 1, &cur, errPtr(eb), errCap)
	if err := mkErr("export_open", rc, eb); err != nil {
		return nil, err
	}
	e := &exportReader{s: s, ctx: ctx, eb: eb, cur: cur}
	e.cleanup = runtime.AddCleanup(e, closeExport, cur)
	return e, nil
}

func closeExport(cur *C.SopIrohExport) { C.sop_iroh_export_close(cur) }

// readSlice returns the whole BAO slice of the chunk groups of blob id that
// intersect [off, off+n), read from a cursor, for a small range.
func (s *Store) readSlice(ctx context.Context, id storageid.ID, off, n uint64) ([]byte, error) {
	rc, err := s.openExport(ctx, id, off, n)
	if err != nil {
		return nil, err
	}
	e := rc.(*exportReader)
	defer e.Close()
	// The size header, the groups (one more for a range not aligned to them),
	// and at most one parent pair per group plus one per tree level.
	groups := n/verify.GroupSize + 2
	buf := make([]byte, 0, 8+groups*verify.GroupSize+(groups+64)*64)
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, streamBuf)
		}
		k, err := e.fill(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+k]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

func (e *exportReader) Read(p []byte) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.r < e.w {
		n := copy(p, e.buf[e.r:e.w])
		e.r += n
		return n, nil
	}
	if e.err != nil {
		return 0, e.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if len(p) >= streamBuf {
		return e.fill(p)
	}
	if e.buf == nil {
		e.buf = make([]byte, streamBuf)
	}
	n, err := e.fill(e.buf)
	if err != nil {
		return 0, err
	}
	k := copy(p, e.buf[:n])
	e.r, e.w = k, n
	return k, nil
}

// fill reads the next bytes of the encoding into b with one library call. At
// the end of the stream, or on failure, it releases the cursor.
func (e *exportReader) fill(b []byte) (int, error) {
	// The store's read lock keeps Close from running during the call; once
	// the store is closed, the cursor has been cancelled.
	if _, err := e.s.acquire(e.ctx); err != nil {
		e.end(err)
		return 0, err
	}
	var n C.size_t
	rc := C.sop_iroh_export_read(e.cur, u8(b), C.size_t(len(b)), &n, errPtr(e.eb), errCap)
	e.s.release()
	if err := mkErr("export_read", rc, e.eb); err != nil {
		e.end(err)
		return 0, err
	}
	if n == 0 {
		e.end(io.EOF)
		return 0, io.EOF
	}
	return int(n), nil
}

// end records how the stream ended and releases the cursor.
func (e *exportReader) end(err error) {
	e.err = err
	if e.cur != nil {
		e.cleanup.Stop()
		C.sop_iroh_export_close(e.cur)
		e.cur = nil
	}
}

// Close stops the export, if it is still running, and releases it. Reads
// fail afterwards. Calls after the first return nil.
func (e *exportReader) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.end(errReaderClosed)
	e.buf, e.r, e.w = nil, 0, 0
	return nil
}
