package verify

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// ExtractSlice returns the slice encoding that Source.Slice specifies for the
// byte range [off, off+n) of a blob of size bytes, built from the blob's bytes
// (data) and its pre-order outboard (outboard, as Hasher.WriteOutboard writes
// it). It is the building block of a Source for stores that keep both, such
// as the directory store in package blobs. With the same range, its output is
// what bao.ExtractSlice produces with group 4, and what iroh-blobs'
// export_bao produces for the chunk ranges of those groups.
//
// The encoding is produced lazily as the returned reader is read: it reads
// the pre-order parent pairs on the paths to the selected groups, at offsets
// computed from the tree shape (it never scans the outboard), and the bytes
// of those groups, in increasing order of offset in each of data and
// outboard. Memory use does not depend on size or n.
//
// ExtractSlice trusts nothing it reads: what it produces is proof material
// for a verifier (NewReader, Verify), not verified bytes. A short data or
// outboard makes the reader fail with io.ErrUnexpectedEOF.
//
// n must be positive and size at most 2^63−1.
func ExtractSlice(data, outboard io.ReaderAt, size, off, n uint64) (io.Reader, error) {
	if n == 0 {
		return nil, errors.New("verify: empty slice range")
	}
	if size > maxSize {
		return nil, fmt.Errorf("verify: blob size %d exceeds 2^63-1", size)
	}
	g0, g1 := selectGroups(size, off, n)
	s := &sliceReader{
		data:     data,
		outboard: outboard,
		obSize:   OutboardSize(size),
		size:     size,
		g0:       g0,
		g1:       g1,
	}
	binary.LittleEndian.PutUint64(s.hdr[:], size)
	s.push(frame{start: 0, length: size, obOff: 0})
	return s, nil
}

// A frame is a node of the tree still to be emitted.
type frame struct {
	start, length uint64 // the node's bytes
	obOff         uint64 // offset of its pair in the outboard, if a parent
}

// sliceReader produces a slice encoding by a pre-order walk of the nodes that
// intersect the selected groups.
type sliceReader struct {
	data, outboard io.ReaderAt
	obSize, size   uint64
	g0, g1         uint64

	hdr  [headerSize]byte
	hdrN int // header bytes already produced

	stack [2 * maxDepth]frame
	sp    int

	// The item being produced: a pair at obOff (isPair), or the data bytes
	// [dataOff, dataOff+rem).
	isPair  bool
	obOff   uint64
	dataOff uint64
	rem     uint64

	// A read-ahead window on the outboard: pre-order visits pairs in
	// increasing outboard offset. obAhead is how much to read ahead from
	// the current pair.
	ob      [8 << 10]byte
	obStart uint64
	obLen   int
	obAhead uint64

	err error
}

func (s *sliceReader) push(f frame) { s.stack[s.sp] = f; s.sp++ }

// intersects reports whether the node [start, start+length) holds any of the
// selected groups.
func (s *sliceReader) intersects(f frame) bool {
	first := f.start / GroupSize
	return first < s.g1 && s.g0 < first+numGroups(f.length)
}

// next moves to the next item of the encoding, reporting false at its end.
func (s *sliceReader) next() bool {
	for s.sp > 0 {
		s.sp--
		f := s.stack[s.sp]
		if !s.intersects(f) {
			continue
		}
		if f.length > GroupSize {
			mid := split(f.length)
			s.push(frame{f.start + mid, f.length - mid, f.obOff + pairSize*(mid/GroupSize)})
			s.push(frame{f.start, mid, f.obOff + pairSize})
			s.isPair, s.obOff, s.rem = true, f.obOff, pairSize
			// Read ahead within the node's pairs: all of them if the
			// node is wholly selected, else a few for the path below.
			first := f.start / GroupSize
			groups := numGroups(f.length)
			s.obAhead = pairSize * (groups - 1)
			if first < s.g0 || first+groups > s.g1 {
				s.obAhead = min(s.obAhead, 8*pairSize)
			}
			return true
		}
		// A group: merge the selected groups that follow it in the
		// encoding, which are adjacent in the data.
		s.isPair, s.dataOff, s.rem = false, f.start, f.length
		for s.sp > 0 {
			g := s.stack[s.sp-1]
			if g.length > GroupSize || !s.intersects(g) {
				break
			}
			s.sp--
			s.rem += g.length
		}
		return true
	}
	return false
}

// Read implements io.Reader.
func (s *sliceReader) Read(p []byte) (int, error) {
	n := 0
	if s.hdrN < headerSize {
		k := copy(p, s.hdr[s.hdrN:])
		s.hdrN += k
		n += k
	}
	for n < len(p) && s.err == nil {
		if s.rem == 0 {
			if !s.next() {
				s.err = io.EOF
			}
			continue
		}
		k := min(uint64(len(p)-n), s.rem)
		var m int
		if s.isPair {
			m, s.err = s.readOutboard(p[n:n+int(k)], s.obOff+pairSize-s.rem)
		} else {
			off := s.dataOff
			m, s.err = s.data.ReadAt(p[n:n+int(k)], int64(off))
			if m == int(k) {
				s.err = nil
			} else if s.err == nil || s.err == io.EOF {
				s.err = io.ErrUnexpectedEOF
			}
			s.dataOff += uint64(m)
		}
		s.rem -= uint64(m)
		n += m
	}
	if n > 0 {
		return n, nil
	}
	return 0, s.err
}

// readOutboard copies outboard bytes at off, within the current pair, into
// p through the read-ahead window.
func (s *sliceReader) readOutboard(p []byte, off uint64) (int, error) {
	if off < s.obStart || off+uint64(len(p)) > s.obStart+uint64(s.obLen) {
		// Refill from the start of the current pair.
		at := s.obOff
		if at+pairSize > s.obSize {
			return 0, io.ErrUnexpectedEOF
		}
		want := min(uint64(len(s.ob)), max(s.obAhead, pairSize), s.obSize-at)
		m, err := s.outboard.ReadAt(s.ob[:want], int64(at))
		if uint64(m) < off-at+uint64(len(p)) {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
		s.obStart, s.obLen = at, m
	}
	return copy(p, s.ob[off-s.obStart:]), nil
}
