// Package codecbound checks, without decompressing anything, that the
// compressed body of a Parquet page cannot make arrow-go's decompressors
// allocate more than the page's uncompressed size.
//
// A page's uncompressed_page_size is checked against a limit before any
// buffer is sized from it, but the decompressors take other sizes from the
// compressed bytes themselves, and a producer who holds the DEK writes those
// (SOP-PME-1 Section 11.10's threat model: any well-formed module):
//
//   - ZSTD (github.com/klauspost/compress, DecodeAll): a frame's
//     Frame_Content_Size sizes the output buffer it allocates (a 60 GiB
//     claim in 20 bytes is a fatal out-of-memory error), and a frame
//     without one is decoded to its end, growing the buffer: 32 KiB of RLE
//     blocks decode to 1 GiB.
//   - SNAPPY (github.com/klauspost/compress/snappy, Decode): the leading varint,
//     up to 4 GiB, sizes the output when the buffer given is smaller.
//   - GZIP, BROTLI and LZ4_RAW decode into the buffer arrow-go gives them,
//     sized by uncompressed_page_size; but for a page of size 0 arrow-go
//     may give none, and GZIP and BROTLI then read to the end.
//
// Check refuses what would break those bounds: a zstd page may decode to
// at most its size plus one block (128 KiB), which its frame and block
// headers bound; a snappy page states its size; an empty GZIP or BROTLI
// page must decode to nothing, which its decoder, stopped at its first
// byte, tells. What writers produce passes (the tests run arrow-go's codecs
// and klauspost/compress's streaming zstd writer).
package codecbound

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
)

// ErrUnbounded reports a compressed page whose own bytes do not bound its
// decompression by its uncompressed size, or that are not of its codec.
var ErrUnbounded = errors.New("compressed page not bounded by its uncompressed size")

// The parquet.thrift CompressionCodec values Check knows.
const (
	Uncompressed = 0
	Snappy       = 1
	Gzip         = 2
	Brotli       = 4
	Zstd         = 6
	Lz4Raw       = 7
)

// Check reports, as an error matching ErrUnbounded, whether b, a page body
// (or a V2 page's values section) compressed with codec, may make its
// decompressor allocate more than size bytes, the size it must decompress
// to. An UNCOMPRESSED body passes. A codec Check does not know is refused.
func Check(codec int32, b []byte, size int) error {
	switch codec {
	case Uncompressed, Lz4Raw:
		return nil
	case Gzip, Brotli:
		if size == 0 {
			return checkEmpty(codec, b)
		}
		return nil
	case Snappy:
		n, k := binary.Uvarint(b)
		if k <= 0 {
			return fmt.Errorf("%w: snappy: no decoded length", ErrUnbounded)
		}
		if n != uint64(size) {
			return fmt.Errorf("%w: snappy: decoded length %d, the page has %d", ErrUnbounded, n, size)
		}
		return nil
	case Zstd:
		return checkZstd(b, uint64(size))
	default:
		return fmt.Errorf("%w: codec %d", ErrUnbounded, codec)
	}
}

// checkEmpty decodes b, the GZIP or BROTLI body of a page of size 0, with
// the decoder arrow-go uses for its codec (klauspost/compress's gzip,
// andybalholm/brotli), and stops at the first byte it outputs: b must
// decode to nothing.
func checkEmpty(codec int32, b []byte) error {
	fail := func(why string, args ...any) error {
		return fmt.Errorf("%w: an empty page whose body %s", ErrUnbounded, fmt.Sprintf(why, args...))
	}
	var r io.Reader
	if codec == Gzip {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return fail("does not decode: %v", err)
		}
		defer zr.Close()
		r = zr
	} else {
		r = brotli.NewReader(bytes.NewReader(b))
	}
	var one [1]byte
	for range len(b) + 2 { // a decoder that makes no progress stops too
		n, err := r.Read(one[:])
		switch {
		case n > 0:
			return fail("decodes to bytes")
		case err == io.EOF:
			return nil
		case err != nil:
			return fail("does not decode: %v", err)
		}
	}
	return fail("does not end")
}

// zstd frame format (RFC 8878, Section 3.1).
const (
	zstdMagic         = 0xFD2FB528
	skippableMagicMin = 0x184D2A50
	skippableMagicMax = 0x184D2A5F

	blockRaw        = 0
	blockRLE        = 1
	blockCompressed = 2

	// maxBlock is Block_Maximum_Size: no block decodes to more.
	maxBlock = 128 << 10
)

// checkZstd walks the frames of b, their headers and block headers only,
// and bounds what each decodes to: its Frame_Content_Size if it states one
// (the decoder stops one block past it), else the sum over its blocks of a
// raw or RLE block's size and a compressed block's maximum (the window
// size, at most 128 KiB). The bounds must add up to at most size plus one
// block. Skippable frames are skipped.
//
// klauspost/compress writes pages under 256 bytes as frames without a
// content size, in a 1 KiB window; streaming compressors write larger ones
// without it, in blocks of 128 KiB: both pass.
func checkZstd(b []byte, size uint64) error {
	fail := func(off int, format string, args ...any) error {
		return fmt.Errorf("%w: zstd at byte %d: %s", ErrUnbounded, off, fmt.Sprintf(format, args...))
	}
	limit := size + maxBlock
	var total uint64
	for off := 0; off < len(b); {
		if len(b)-off < 4 {
			return fail(off, "truncated magic number")
		}
		magic := binary.LittleEndian.Uint32(b[off:])
		if magic >= skippableMagicMin && magic <= skippableMagicMax {
			if len(b)-off < 8 {
				return fail(off, "truncated skippable frame")
			}
			n := uint64(binary.LittleEndian.Uint32(b[off+4:]))
			if n > uint64(len(b)-off-8) {
				return fail(off, "skippable frame of %d bytes past the end", n)
			}
			off += 8 + int(n)
			continue
		}
		if magic != zstdMagic {
			return fail(off, "not a zstd frame (magic %#08x)", magic)
		}
		start := off
		off += 4
		if off >= len(b) {
			return fail(start, "truncated frame header")
		}
		fhd := b[off]
		off++
		fcsFlag, single, checksum, dictFlag := fhd>>6, fhd>>5&1 == 1, fhd>>2&1 == 1, fhd&3
		if fhd>>3&1 != 0 {
			return fail(start, "reserved bit set")
		}
		block := uint64(maxBlock)
		if !single {
			if off >= len(b) {
				return fail(start, "truncated frame header")
			}
			exp, mantissa := uint(b[off]>>3)+10, uint64(b[off]&7)
			if exp < 17 { // a window under 128 KiB bounds the blocks
				window := uint64(1)<<exp + (uint64(1)<<exp)/8*mantissa
				block = min(block, window)
			}
			off++
		}
		off += [4]int{0, 1, 2, 4}[dictFlag]
		fcsLen := [4]int{0, 2, 4, 8}[fcsFlag]
		if fcsFlag == 0 && single {
			fcsLen = 1
		}
		if off+fcsLen > len(b) {
			return fail(start, "truncated frame header")
		}
		var fcs uint64
		switch fcsLen {
		case 1:
			fcs = uint64(b[off])
		case 2:
			fcs = uint64(binary.LittleEndian.Uint16(b[off:])) + 256
		case 4:
			fcs = uint64(binary.LittleEndian.Uint32(b[off:]))
		case 8:
			fcs = binary.LittleEndian.Uint64(b[off:])
		}
		off += fcsLen
		var blocks uint64 // what the blocks decode to, at most
		for last := false; !last; {
			if len(b)-off < 3 {
				return fail(off, "truncated block header")
			}
			h := uint32(b[off]) | uint32(b[off+1])<<8 | uint32(b[off+2])<<16
			off += 3
			last = h&1 == 1
			n := int(h >> 3)
			switch h >> 1 & 3 {
			case blockRaw:
				blocks += uint64(n)
			case blockRLE:
				blocks += uint64(n)
				n = 1
			case blockCompressed:
				blocks += block
			default:
				return fail(off-3, "reserved block type")
			}
			if n > len(b)-off {
				return fail(off-3, "block of %d bytes past the end", n)
			}
			off += n
			if fcsLen == 0 && blocks > limit-total {
				return fail(start, "a frame without its content size whose blocks may decode to more than the page's %d bytes", size)
			}
		}
		if fcsLen > 0 {
			blocks = fcs
		}
		if blocks > limit-total {
			return fail(start, "content size %d, past the page's %d bytes", blocks, size)
		}
		total += blocks
		if checksum {
			if len(b)-off < 4 {
				return fail(off, "truncated checksum")
			}
			off += 4
		}
	}
	return nil
}
