package pme

// segBuf buffers a window of a byte stream in fixed-size blocks, so that
// buffering a row group costs its size and no more (a growing slice would
// double) and the blocks of sealed plaintext can go as soon as they are done.
type segBuf struct {
	blocks [][]byte // each of capacity segSize; all full but the last
	base   int64    // stream offset of blocks[0][0]
	end    int64    // stream offset after the last buffered byte
	free   [][]byte // blocks to reuse
	join   []byte   // scratch for ranges that span blocks
}

const segSize = 1 << 20

// write appends p to the window.
func (s *segBuf) write(p []byte) {
	for len(p) > 0 {
		if len(s.blocks) == 0 || len(s.blocks[len(s.blocks)-1]) == segSize {
			var b []byte
			if n := len(s.free); n > 0 {
				b, s.free = s.free[n-1][:0], s.free[:n-1]
			} else {
				b = make([]byte, 0, segSize)
			}
			s.blocks = append(s.blocks, b)
		}
		last := &s.blocks[len(s.blocks)-1]
		k := min(len(p), segSize-len(*last))
		*last = append(*last, p[:k]...)
		p = p[k:]
		s.end += int64(k)
	}
}

// bytes returns the n bytes at stream offset off, which must lie within the
// window: a slice of a block when they are in one, else a copy. The result
// is valid until the next call.
func (s *segBuf) bytes(off, n int64) []byte {
	if n == 0 {
		return nil
	}
	i, at := (off-s.base)/segSize, (off-s.base)%segSize
	if at+n <= segSize {
		return s.blocks[i][at : at+n]
	}
	if int64(cap(s.join)) < n {
		s.join = make([]byte, n)
	}
	out := s.join[:n]
	for w := out; len(w) > 0; i, at = i+1, 0 {
		k := copy(w, s.blocks[i][at:])
		w = w[k:]
	}
	return out
}

// drop forgets the stream before offset off; whole blocks before it are
// cleared and kept for reuse (a few) or released.
func (s *segBuf) drop(off int64) {
	for len(s.blocks) > 0 && s.base+segSize <= off {
		b := s.blocks[0]
		clear(b[:cap(b)])
		s.blocks[0] = nil
		s.blocks = s.blocks[1:]
		s.base += segSize
		if len(s.free) < 4 {
			s.free = append(s.free, b)
		}
	}
	// Only full blocks go, so with none left base == end: the next block
	// starts where the stream continues.
}

// release drops everything, clearing the blocks.
func (s *segBuf) release() {
	for _, b := range s.blocks {
		clear(b[:cap(b)])
	}
	for _, b := range s.free {
		clear(b[:cap(b)])
	}
	clear(s.join)
	*s = segBuf{base: s.end, end: s.end}
}
