package flatdec

import (
	"encoding/binary"
	"fmt"
)

// hybrid decodes Parquet's RLE/bit-packed hybrid encoding (parquet-format
// Encodings.md, "Run Length Encoding / Bit-Packing Hybrid") of values of
// width bits, at most 32: runs of one repeated value, and bit-packed
// groups of 8 values. Every run it reads consumes at least one byte of b,
// so decoding ends within len(b) runs.
type hybrid struct {
	b     []byte // the runs not yet started
	width uint
	mask  uint64
	rle   int    // values left in the current RLE run
	val   uint32 // its value
	bp    int    // values left in the current bit-packed run
	bits  []byte // its bytes
	pos   uint   // the bit of bits at which its next value starts
}

func (h *hybrid) init(b []byte, width int) {
	*h = hybrid{b: b, width: uint(width), mask: 1<<uint(width) - 1}
}

// read fills out with the next len(out) values.
func (h *hybrid) read(out []uint32) error {
	for len(out) > 0 {
		switch {
		case h.rle > 0:
			n := min(h.rle, len(out))
			v := h.val
			for i := range out[:n] {
				out[i] = v
			}
			h.rle -= n
			out = out[n:]
		case h.bp > 0:
			n := min(h.bp, len(out))
			h.unpack(out[:n])
			h.bp -= n
			out = out[n:]
		default:
			if err := h.run(); err != nil {
				return err
			}
		}
	}
	return nil
}

// ones returns, if the next n values are all in one RLE run of value 1,
// true, having consumed them: definition levels without a null.
func (h *hybrid) ones(n int) bool {
	if h.rle == 0 && h.bp == 0 && len(h.b) > 0 {
		if h.run() != nil {
			return false
		}
	}
	if h.rle >= n && h.val == 1 {
		h.rle -= n
		return true
	}
	return false
}

// run starts the next run.
func (h *hybrid) run() error {
	hdr, k := binary.Uvarint(h.b)
	if k <= 0 || hdr >= 1<<32 {
		return fmt.Errorf("%w: RLE/bit-packed run header past the end, or too large", ErrFormat)
	}
	h.b = h.b[k:]
	if hdr&1 == 1 {
		groups := int(hdr >> 1)
		count := groups * 8
		nbytes := groups * int(h.width)
		if nbytes > len(h.b) {
			// The last run may stop short of its groups: take the values
			// its bytes hold.
			nbytes = len(h.b)
			count = nbytes * 8 / int(h.width)
		}
		h.bits, h.pos, h.bp = h.b[:nbytes], 0, count
		h.b = h.b[nbytes:]
		return nil
	}
	vb := int(h.width+7) / 8
	if vb > len(h.b) {
		return fmt.Errorf("%w: RLE run value past the end", ErrFormat)
	}
	var v uint64
	for i := vb - 1; i >= 0; i-- {
		v = v<<8 | uint64(h.b[i])
	}
	if v > h.mask {
		return fmt.Errorf("%w: RLE run value %d wider than %d bits", ErrFormat, v, h.width)
	}
	h.b = h.b[vb:]
	h.rle, h.val = int(hdr>>1), uint32(v)
	return nil
}

// unpack reads len(out) values of the current bit-packed run, which holds
// them.
func (h *hybrid) unpack(out []uint32) {
	w, mask, bits, pos := h.width, h.mask, h.bits, h.pos
	if w == 0 {
		clear(out)
		return
	}
	i := 0
	// Fast: a 64-bit load holds a value (at most 32 bits, at a shift of at
	// most 7) while 8 bytes remain.
	for ; i < len(out); i++ {
		at := pos >> 3
		if int(at)+8 > len(bits) {
			break
		}
		out[i] = uint32(binary.LittleEndian.Uint64(bits[at:]) >> (pos & 7) & mask)
		pos += w
	}
	for ; i < len(out); i++ {
		at := int(pos >> 3)
		var tail [8]byte
		if at < len(bits) {
			copy(tail[:], bits[at:])
		}
		out[i] = uint32(binary.LittleEndian.Uint64(tail[:]) >> (pos & 7) & mask)
		pos += w
	}
	h.pos = pos
}
