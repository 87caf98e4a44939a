package verify

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"

	"lukechampine.com/blake3/guts"

	"github.com/sovm/sop-pme/storageid"
)

// A decoder checks one slice encoding, read from r, against a root hash and
// places the verified bytes. It is the only code in the package that turns
// proof material into object bytes.
//
// Nothing read from r is trusted: the claimed size only determines which
// bytes are expected next, and no allocation depends on it. A decoder is
// reused across slices (see Reader); reset prepares it for the next one.
type decoder struct {
	r       io.Reader
	ctx     context.Context // checked between subtrees; may be nil
	par     int             // goroutines for hashing a subtree
	scratch [GroupSize]byte // a group that is not placed directly
	pair    [pairSize]byte
	pairs   [bulkMax / GroupSize * pairSize]byte // the parent pairs of a bulk subtree

	size   uint64 // the size the slice claims, at most maxSize
	g0, g1 uint64 // the groups the slice selects

	// Placement. With discard false, the bytes [dstOff, dstOff+len(dst)) of
	// the blob go to dst, and every subtree of at most bulkMax bytes wholly
	// inside that range is read and hashed there in one piece. With discard
	// true (Verify), nothing is kept, and subtrees of up to len(dst) ≤
	// bulkMax bytes are read and hashed in dst.
	dst     []byte
	dstOff  uint64
	discard bool

	// With keepLast, the verified bytes of the blob's last group are copied
	// to last.
	keepLast bool
	last     []byte
}

// verifyError returns an error matching ErrVerify with a detail for humans.
func verifyError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrVerify, fmt.Sprintf(format, args...))
}

// reset prepares d for a new slice read from r.
// progressReader fails a Source's reader that returns no bytes and no error
// too many times in a row, instead of letting io.ReadFull spin on it.
type progressReader struct{ r io.Reader }

func (p progressReader) Read(b []byte) (int, error) {
	for range 100 {
		if n, err := p.r.Read(b); n != 0 || err != nil || len(b) == 0 {
			return n, err
		}
	}
	return 0, io.ErrNoProgress
}

func (d *decoder) reset(r io.Reader) {
	d.r = progressReader{r}
	d.ctx = nil
	d.size, d.g0, d.g1 = 0, 0, 0
	d.dst, d.dstOff, d.discard = nil, 0, false
	d.keepLast, d.last = false, nil
}

// readFull fills b from the slice; a slice that ends early fails
// verification, and other read errors pass through.
func (d *decoder) readFull(b []byte) error {
	if _, err := io.ReadFull(d.r, b); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return fmt.Errorf("%w: slice truncated: %w", ErrVerify, io.ErrUnexpectedEOF)
		}
		return fmt.Errorf("verify: reading slice: %w", err)
	}
	return nil
}

// readHeader reads the size the slice claims. It is not yet proven.
func (d *decoder) readHeader() (uint64, error) {
	hdr := d.pair[:headerSize]
	if err := d.readFull(hdr); err != nil {
		return 0, err
	}
	size := binary.LittleEndian.Uint64(hdr)
	if size > maxSize {
		return 0, verifyError("slice claims a size of %d bytes, more than 2^63-1", size)
	}
	return size, nil
}

// selectRange makes the slice's expected content the groups that a Source
// selects for [off, off+n) in a blob of size bytes (the claimed size).
func (d *decoder) selectRange(size, off, n uint64) {
	d.size = size
	d.g0, d.g1 = selectGroups(size, off, n)
}

// decode verifies the rest of the slice against root: the tree from the
// root down to the selected groups, then the end of the stream. On error,
// dst may hold unverified bytes; the caller clears it.
func (d *decoder) decode(root *storageid.ID) error {
	cv := cvFromBytes(root[:])
	if err := d.node(&cv, 0, d.size, guts.FlagRoot); err != nil {
		return err
	}
	switch n, err := io.ReadFull(d.r, d.pair[:1]); {
	case n > 0:
		return verifyError("trailing bytes after the slice")
	case err != io.EOF:
		return fmt.Errorf("verify: reading slice: %w", err)
	}
	return nil
}

// node verifies the subtree [start, start+length) against its chaining value
// cv, already verified, and places its selected bytes. flags is
// guts.FlagRoot for the root, else 0.
func (d *decoder) node(cv *[8]uint32, start, length uint64, flags uint32) error {
	first := start / GroupSize
	end := first + numGroups(length)
	if end <= d.g0 || first >= d.g1 {
		return nil // not in the slice
	}
	if first >= d.g0 && end <= d.g1 {
		if buf, ok := d.place(start, length); ok {
			return d.bulk(cv, start, buf, flags)
		}
	}
	if length <= GroupSize {
		return d.group(cv, start, length, flags)
	}
	if err := d.readFull(d.pair[:]); err != nil {
		return err
	}
	l, r := cvFromBytes(d.pair[:32]), cvFromBytes(d.pair[32:])
	if parentCV(&l, &r, flags) != *cv {
		return &RangeError{Off: start, Len: length, Proof: true}
	}
	mid := split(length)
	if err := d.node(&l, start, mid, 0); err != nil {
		return err
	}
	return d.node(&r, start+mid, length-mid, 0)
}

// place returns where the subtree [start, start+length), wholly selected, can
// be read and hashed in one piece.
func (d *decoder) place(start, length uint64) ([]byte, bool) {
	if length > bulkMax {
		return nil, false
	}
	if d.discard {
		if length <= uint64(len(d.dst)) {
			return d.dst[:length], true
		}
		return nil, false
	}
	if start >= d.dstOff && start-d.dstOff <= uint64(len(d.dst)) && length <= uint64(len(d.dst))-(start-d.dstOff) {
		return d.dst[start-d.dstOff:][:length], true
	}
	return nil, false
}

// bulk reads the encoding of the subtree starting at start into buf, its
// data bytes into buf and its parent pairs into d.pairs, and verifies them by
// hashing the whole subtree at once, many groups per call and in parallel:
// the subtree's root must match cv, and each parent pair read must be the
// pair computed from the bytes, so that only the canonical encoding
// verifies.
func (d *decoder) bulk(cv *[8]uint32, start uint64, buf []byte, flags uint32) error {
	if d.ctx != nil {
		if err := d.ctx.Err(); err != nil {
			return err
		}
	}
	pairs := d.pairs[:pairSize*(numGroups(uint64(len(buf)))-1)]
	rest, err := d.readSubtree(buf, pairs)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		panic("verify: internal error: parent pairs left over")
	}
	n, ok := hashSubtree(buf, start/guts.ChunkSize, pairs, d.par)
	n.Flags |= flags
	if guts.ChainingValue(n) == *cv && ok {
		return nil
	}
	// Name the first group, or parent pair, that does not match, as the
	// group by group path (node and group) would have.
	if e := locate(*cv, start, buf, pairs, flags); e != nil {
		return e
	}
	return &RangeError{Off: start, Len: uint64(len(buf)), Proof: ok}
}

// locate returns the first group of the subtree [start, start+len(buf)),
// or the first of its parent pairs, that does not match, given the
// subtree's chaining value cv (already verified), its bytes and its parent
// pairs in pre-order; nil if all match. It hashes each group once.
func locate(cv [8]uint32, start uint64, buf, pairs []byte, flags uint32) *RangeError {
	if len(buf) <= GroupSize {
		n := hashGroup(buf, start/guts.ChunkSize)
		n.Flags |= flags
		if guts.ChainingValue(n) != cv {
			return &RangeError{Off: start, Len: uint64(len(buf))}
		}
		return nil
	}
	l, r := cvFromBytes(pairs[:32]), cvFromBytes(pairs[32:pairSize])
	if parentCV(&l, &r, flags) != cv {
		return &RangeError{Off: start, Len: uint64(len(buf)), Proof: true}
	}
	mid := split(uint64(len(buf)))
	at := pairSize * (mid / GroupSize)
	if e := locate(l, start, buf[:mid], pairs[pairSize:at], 0); e != nil {
		return e
	}
	return locate(r, start+mid, buf[mid:], pairs[at:], 0)
}

// readSubtree reads the pre-order encoding of a subtree whose bytes are buf:
// the bytes into buf and the parent pairs into pairs, in order. It returns
// the part of pairs it did not fill.
func (d *decoder) readSubtree(buf, pairs []byte) ([]byte, error) {
	if len(buf) <= GroupSize {
		return pairs, d.readFull(buf)
	}
	if err := d.readFull(pairs[:pairSize]); err != nil {
		return nil, err
	}
	pairs = pairs[pairSize:]
	if len(buf) <= 2*GroupSize {
		return pairs, d.readFull(buf) // two adjacent groups
	}
	mid := split(uint64(len(buf)))
	pairs, err := d.readSubtree(buf[:mid], pairs)
	if err != nil {
		return nil, err
	}
	return d.readSubtree(buf[mid:], pairs)
}

// group verifies the single group [start, start+length), read into scratch,
// against cv and copies its part in [dstOff, dstOff+len(dst)) to dst.
func (d *decoder) group(cv *[8]uint32, start, length uint64, flags uint32) error {
	b := d.scratch[:length]
	if err := d.readFull(b); err != nil {
		return err
	}
	var n guts.Node
	if length <= guts.ChunkSize {
		n = guts.CompressChunk(b, &guts.IV, start/guts.ChunkSize, 0)
	} else {
		n = guts.CompressBuffer(&d.scratch, int(length), &guts.IV, start/guts.ChunkSize, 0)
	}
	n.Flags |= flags
	if guts.ChainingValue(n) != *cv {
		clear(b)
		return &RangeError{Off: start, Len: length}
	}
	if !d.discard {
		lo := max(start, d.dstOff)
		hi := min(start+length, d.dstOff+uint64(len(d.dst)))
		if lo < hi {
			copy(d.dst[lo-d.dstOff:hi-d.dstOff], b[lo-start:])
		}
	}
	if d.keepLast && start+length == d.size {
		d.last = append([]byte(nil), b...)
	}
	return nil
}
