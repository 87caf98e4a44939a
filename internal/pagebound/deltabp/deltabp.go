// Package deltabp reads the DELTA_BINARY_PACKED encoding of Parquet
// (apache/parquet-format, Encodings.md) far enough to bound what arrow-go's
// decoders allocate for a page, before they see it: the header, whose block
// size sizes a buffer of one miniblock's values, and the values of a stream,
// whose sum (the lengths of DELTA_BYTE_ARRAY's prefixes and suffixes) sizes
// the arena those strings are decoded into. Those sizes are the producer's
// to choose, which SOP-PME-1 Section 11.10's threat model allows: the
// reader must not let them blow up its memory.
//
// A stream is
//
//	header: <block size> <miniblocks in a block> <total values> <first value>
//	blocks: <min delta> <bit width of each miniblock> <miniblocks>
//
// in ULEB128 (the first value and min delta zigzag-encoded); each miniblock
// holds block size / miniblocks deltas, bit-packed LSB first at its width.
// The last block's miniblocks that hold no value have a width byte but no
// body.
package deltabp

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrFormat reports a stream this package does not take: malformed, or a
// block size above MaxBlockSize.
var ErrFormat = errors.New("malformed or oversized DELTA_BINARY_PACKED stream")

// MaxBlockSize bounds a stream's block size. arrow-go allocates a buffer of
// block size / miniblocks values (up to 2^32 of them, 32 GiB, in a 10-byte
// page); writers use 128 (arrow-go, parquet-mr, parquet-rs) to 2,048
// (DuckDB).
const MaxBlockSize = 1 << 16

// A Header is a stream's header.
type Header struct {
	BlockSize, MiniBlocks int
	Total                 int64 // values in the stream, the first included
	First                 int64
}

// ParseHeader parses the header at the start of b and returns it and its
// length. The format requires a block size that is a multiple of 128 and a
// miniblock size (block size / miniblocks) that is a multiple of 32.
func ParseHeader(b []byte) (Header, int, error) {
	var h Header
	n := 0
	next := func(what string) (uint64, error) {
		v, k := binary.Uvarint(b[n:])
		if k <= 0 {
			return 0, fmt.Errorf("%w: %s at byte %d", ErrFormat, what, n)
		}
		n += k
		return v, nil
	}
	block, err := next("block size")
	if err != nil {
		return h, 0, err
	}
	mini, err := next("miniblock count")
	if err != nil {
		return h, 0, err
	}
	total, err := next("value count")
	if err != nil {
		return h, 0, err
	}
	first, err := next("first value")
	if err != nil {
		return h, 0, err
	}
	if block == 0 || block%128 != 0 || block > MaxBlockSize {
		return h, 0, fmt.Errorf("%w: block size %d (a multiple of 128, at most %d)", ErrFormat, block, MaxBlockSize)
	}
	if mini == 0 || block%mini != 0 || (block/mini)%32 != 0 {
		return h, 0, fmt.Errorf("%w: %d miniblocks in a block of %d", ErrFormat, mini, block)
	}
	if total > 1<<62 {
		return h, 0, fmt.Errorf("%w: value count %d", ErrFormat, total)
	}
	h = Header{BlockSize: int(block), MiniBlocks: int(mini), Total: int64(total), First: unzigzag(first)}
	return h, n, nil
}

func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// Walk reads the stream at the start of b: at most max values (a stream
// holding more is refused), each passed to fn in order. It returns the
// header and the stream's length in bytes. Values wrap around in 64 bits,
// as the format's arithmetic does. Its work is linear in the values and
// the bytes; it allocates nothing.
func Walk(b []byte, max int64, fn func(v int64)) (Header, int, error) {
	h, n, err := ParseHeader(b)
	if err != nil {
		return h, 0, err
	}
	if h.Total > max {
		return h, 0, fmt.Errorf("%w: %d values, at most %d expected", ErrFormat, h.Total, max)
	}
	if h.Total == 0 {
		return h, n, nil
	}
	v := uint64(h.First)
	fn(h.First)
	left := h.Total - 1
	per := h.BlockSize / h.MiniBlocks
	for left > 0 {
		d, k := binary.Uvarint(b[n:])
		if k <= 0 {
			return h, 0, fmt.Errorf("%w: min delta at byte %d", ErrFormat, n)
		}
		n += k
		minDelta := uint64(unzigzag(d))
		if len(b)-n < h.MiniBlocks {
			return h, 0, fmt.Errorf("%w: bit widths at byte %d", ErrFormat, n)
		}
		widths := b[n : n+h.MiniBlocks]
		n += h.MiniBlocks
		for _, w := range widths {
			if left == 0 {
				break // a miniblock without values has no body
			}
			if w > 64 {
				return h, 0, fmt.Errorf("%w: bit width %d", ErrFormat, w)
			}
			size := per * int(w) / 8
			if len(b)-n < size {
				return h, 0, fmt.Errorf("%w: miniblock of %d bytes at byte %d, past the end", ErrFormat, size, n)
			}
			body := b[n : n+size]
			n += size
			count := min(int64(per), left)
			for i := range int(count) {
				v += minDelta + unpack(body, i, int(w))
				fn(int64(v))
			}
			left -= count
		}
	}
	return h, n, nil
}

// unpack returns the i-th value of width w bits packed LSB first in b.
func unpack(b []byte, i, w int) uint64 {
	if w == 0 {
		return 0
	}
	bit := i * w
	var v uint64
	for got := 0; got < w; {
		byteIdx, off := (bit+got)/8, (bit+got)%8
		take := min(8-off, w-got)
		v |= uint64(b[byteIdx]>>off&(1<<take-1)) << got
		got += take
	}
	return v
}
