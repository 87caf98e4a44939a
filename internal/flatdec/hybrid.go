package flatdec

import (
	"encoding/binary"
	"fmt"
)

//go:generate go run gen_unpack.go

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
	// Value by value up to a group of 8 (which starts at a byte: a group is
	// w bytes).
	for ; i < len(out) && (pos/w)&7 != 0; i++ {
		out[i] = unpack1(bits, pos, mask)
		pos += w
	}
	// Up to 8 bits a value, whole groups (of 8 values, w bytes) with one
	// 64-bit load each, while 8 bytes remain.
	for w <= 8 && len(out)-i >= 8 {
		at := int(pos >> 3)
		if at+8 > len(bits) {
			break
		}
		v := binary.LittleEndian.Uint64(bits[at:])
		g := (*[8]uint32)(out[i : i+8])
		g[0] = uint32(v & mask)
		g[1] = uint32(v >> w & mask)
		g[2] = uint32(v >> (2 * w) & mask)
		g[3] = uint32(v >> (3 * w) & mask)
		g[4] = uint32(v >> (4 * w) & mask)
		g[5] = uint32(v >> (5 * w) & mask)
		g[6] = uint32(v >> (6 * w) & mask)
		g[7] = uint32(v >> (7 * w) & mask)
		pos += 8 * w
		i += 8
	}
	// Wider ones a group at a time too, by the group's unpacker
	// (unpack_gen.go), while 8 bytes past the group remain.
	if w > 8 && len(out)-i >= 8 {
		unpack, gb := unpackGroup[w], int(w)
		for len(out)-i >= 8 {
			at := int(pos >> 3)
			if at+gb+8 > len(bits) {
				break
			}
			unpack((*[8]uint32)(out[i:i+8]), bits[at:])
			pos += 8 * w
			i += 8
		}
	}
	// The rest one by one, a 64-bit load each while 8 bytes remain.
	for ; i < len(out); i++ {
		at := int(pos >> 3)
		if at+8 > len(bits) {
			break
		}
		out[i] = uint32(binary.LittleEndian.Uint64(bits[at:]) >> (pos & 7) & mask)
		pos += w
	}
	for ; i < len(out); i++ {
		out[i] = unpack1(bits, pos, mask)
		pos += w
	}
	h.pos = pos
}

// unpack1 returns the value at bit pos of bits (the bytes past the end
// read as zeros).
func unpack1(bits []byte, pos uint, mask uint64) uint32 {
	at := int(pos >> 3)
	if at+8 <= len(bits) {
		return uint32(binary.LittleEndian.Uint64(bits[at:]) >> (pos & 7) & mask)
	}
	var tail [8]byte
	if at < len(bits) {
		copy(tail[:], bits[at:])
	}
	return uint32(binary.LittleEndian.Uint64(tail[:]) >> (pos & 7) & mask)
}
