package writer

import (
	"io"
	"sync"
)

// segments is an in-memory file of fixed-size blocks, which an encoded row
// group is written into and the seal.Sealer reads back (io.ReaderAt). It
// costs its size rounded up to a block, where a growing slice would double
// and copy; its blocks are cleared (the content is plaintext) and pooled
// when it is reset.
type segments struct {
	blocks [][]byte // each of capacity segSize; all full but the last
	n      int64
}

const segSize = 1 << 20

var blockPool = sync.Pool{New: func() any { b := make([]byte, 0, segSize); return &b }}

var (
	_ io.Writer   = (*segments)(nil)
	_ io.ReaderAt = (*segments)(nil)
)

// Write appends p.
func (s *segments) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if len(s.blocks) == 0 || len(s.blocks[len(s.blocks)-1]) == segSize {
			s.blocks = append(s.blocks, (*blockPool.Get().(*[]byte))[:0])
		}
		last := &s.blocks[len(s.blocks)-1]
		k := min(len(p), segSize-len(*last))
		*last = append(*last, p[:k]...)
		p = p[k:]
	}
	s.n += int64(n)
	return n, nil
}

// ReadAt implements io.ReaderAt.
func (s *segments) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, io.ErrUnexpectedEOF
	}
	n := 0
	for n < len(p) {
		at := off + int64(n)
		if at >= s.n {
			return n, io.EOF
		}
		b := s.blocks[at/segSize][at%segSize:]
		n += copy(p[n:], b)
	}
	return n, nil
}

// Len returns the bytes written.
func (s *segments) Len() int64 { return s.n }

// Close implements io.Closer for arrow-go's writer, which closes its sink;
// it does nothing.
func (s *segments) Close() error { return nil }

// reset clears the blocks and returns them to the pool.
func (s *segments) reset() {
	for _, b := range s.blocks {
		clear(b)
		b = b[:0]
		blockPool.Put(&b)
	}
	s.blocks, s.n = nil, 0
}
