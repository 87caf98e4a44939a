package verify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/sovm/sop-pme/storageid"
)

// A Reader reads ranges of one object through verified slices from a
// Source: every byte it returns has been checked against the object's
// storage_id first (SOP-PME-1 Section 11.10), and its size was proven when
// the Reader was made.
//
// A Reader is safe for concurrent use. Reading ranges through it verifies
// those ranges only; it never makes the object count as verified (use
// Verify).
type Reader struct {
	src  Source
	id   storageid.ID
	size uint64
	par  int

	// The object's last group, verified by NewReader: the bytes
	// [tailStart, size).
	tail      []byte
	tailStart uint64
}

// decoders holds the decoders of every Reader: a decoder is large (a group
// and a bulk subtree's parent pairs), and a Reader made for a few reads would
// otherwise allocate and clear one of its own.
var decoders sync.Pool // *decoder

var _ io.ReaderAt = (*Reader)(nil)

var errNilSlice = errors.New("verify: Source returned no slice and no error")

// NewReader returns a Reader for the object src holds under id. It fetches
// and verifies the object's last group, which proves the object's size:
// a slice of a range at or after the end of an object holds its last group
// (bao-tree semantics), and the last group verifies against id only with the
// object's true size (Sections 11.8 and 11.10: the length is never taken on
// trust). The verified last group is kept: ranges within it are served
// without another fetch, and a range that reaches into it fetches only the
// groups before it.
//
// Errors match ErrVerify, ErrSize or the Source's errors (such as
// blobs.ErrNotFound), or are ctx's error.
func NewReader(ctx context.Context, src Source, id storageid.ID, opts ...Option) (*Reader, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r := &Reader{src: src, id: id, par: cfg.par}
	rc, err := src.Slice(ctx, id, tailOffset, 1)
	if err == nil && rc == nil {
		err = errNilSlice
	}
	if err != nil {
		return nil, fmt.Errorf("verify: fetching the last group of %s: %w", id, err)
	}
	defer rc.Close()
	d := r.getDecoder(rc)
	defer r.putDecoder(d)
	size, err := d.readHeader()
	if err != nil {
		return nil, fmt.Errorf("verify: last group of %s: %w", id, err)
	}
	d.selectRange(size, tailOffset, 1)
	d.keepLast = true
	if err := d.decode(&id); err != nil {
		return nil, fmt.Errorf("verify: last group of %s: %w", id, err)
	}
	if err := cfg.checkExpected(id, size); err != nil {
		return nil, err
	}
	r.size = size
	r.tail = d.last
	r.tailStart = size - uint64(len(d.last))
	return r, nil
}

func (r *Reader) getDecoder(rc io.Reader) *decoder {
	d, _ := decoders.Get().(*decoder)
	if d == nil {
		d = new(decoder)
	}
	d.reset(rc)
	d.par = r.par
	return d
}

func (r *Reader) putDecoder(d *decoder) {
	d.reset(nil)
	decoders.Put(d)
}

// Size returns the object's size in bytes, as proven by NewReader.
func (r *Reader) Size() int64 {
	return int64(r.size)
}

// ID returns the object's storage_id.
func (r *Reader) ID() storageid.ID {
	return r.id
}

// Plan tells the Reader's Source, if it is a Planner, which ranges are
// about to be read, in order (see Planner); otherwise it does nothing. The
// ranges are clipped to the object, and those in the verified last group,
// which the Reader serves itself, are left out. It returns at once; what
// it starts ends with ctx.
func (r *Reader) Plan(ctx context.Context, ranges []Range) {
	p, ok := r.src.(Planner)
	if !ok || len(ranges) == 0 {
		return
	}
	out := make([]Range, 0, len(ranges))
	for _, g := range ranges {
		if g.N == 0 || g.Off >= r.tailStart {
			continue
		}
		end := g.Off + g.N
		if end < g.Off || end > r.tailStart {
			end = r.tailStart // as ReadAtContext asks
		}
		out = append(out, Range{g.Off, end - g.Off})
	}
	if len(out) > 0 {
		p.Plan(ctx, r.id, out)
	}
}

// ReadAt reads len(p) bytes of the object at off, as ReadAtContext with
// context.Background().
func (r *Reader) ReadAt(p []byte, off int64) (int, error) {
	return r.ReadAtContext(context.Background(), p, off)
}

// ReadAtContext reads len(p) bytes of the object starting at byte off into
// p, with the semantics of io.ReaderAt: at or after the end it returns 0,
// io.EOF; a range that crosses the end returns the bytes up to the end and
// io.EOF; an empty p returns 0, nil.
//
// It fetches the slice of the groups covering the range from the Source,
// verifies it against the storage_id, and copies only the requested bytes.
// The slice must claim the size NewReader proved, or ReadAtContext fails
// with ErrSize. On any error, p is cleared and the count is 0: no unverified
// byte is ever left in p. Errors match ErrVerify, ErrSize or the Source's
// errors, or are ctx's error.
func (r *Reader) ReadAtContext(ctx context.Context, p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("verify: negative offset %d", off)
	}
	if len(p) == 0 {
		return 0, nil
	}
	start := uint64(off)
	if start >= r.size {
		return 0, io.EOF
	}
	n := min(uint64(len(p)), r.size-start)
	if start >= r.tailStart {
		copy(p, r.tail[start-r.tailStart:])
	} else {
		// The part in the last group is NewReader's verified copy: only
		// the groups before it are fetched (and hashed) again.
		head := min(n, r.tailStart-start)
		if err := r.fetch(ctx, p[:head], start); err != nil {
			clear(p)
			return 0, err
		}
		copy(p[head:n], r.tail)
	}
	if n < uint64(len(p)) {
		return int(n), io.EOF
	}
	return int(n), nil
}

// fetch fills p with the verified bytes at off, which all exist.
func (r *Reader) fetch(ctx context.Context, p []byte, off uint64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	n := uint64(len(p))
	rc, err := r.src.Slice(ctx, r.id, off, n)
	if err == nil && rc == nil {
		err = errNilSlice
	}
	if err != nil {
		return fmt.Errorf("verify: fetching [%d, %d) of %s: %w", off, off+n, r.id, err)
	}
	defer rc.Close()
	d := r.getDecoder(rc)
	defer r.putDecoder(d)
	size, err := d.readHeader()
	if err != nil {
		return fmt.Errorf("verify: [%d, %d) of %s: %w", off, off+n, r.id, err)
	}
	if size != r.size {
		return fmt.Errorf("%w: slice of %s claims %d bytes, the object has %d", ErrSize, r.id, size, r.size)
	}
	d.selectRange(size, off, n)
	d.dst, d.dstOff = p, off
	if err := d.decode(&r.id); err != nil {
		return fmt.Errorf("verify: [%d, %d) of %s: %w", off, off+n, r.id, err)
	}
	return nil
}
