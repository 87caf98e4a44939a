package blobs

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
)

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
