// Package lz4hadoop decodes pages of Parquet's deprecated LZ4 codec
// (CompressionCodec LZ4 = 5), which arrow-go does not implement and DuckDB
// 1.5.6 does not read, so that the sealer can rewrite them as LZ4_RAW
// pages, which every SOP-PME-1 reader reads (see internal/seal).
//
// The codec's format was never specified: parquet-mr writes Hadoop's
// framing, a sequence of frames each of a 4-byte big-endian decompressed
// size, a 4-byte big-endian compressed size and an LZ4 block; older
// parquet-cpp wrote a bare LZ4 block. Decode reads it as Arrow C++ does
// (Lz4HadoopCodec): Hadoop frames of one block each, which must decode to
// exactly their stated sizes and use every input byte; else a bare LZ4
// block. The output is bounded by the buffer the caller gives, sized by the
// page's uncompressed_page_size: no size the input states is allocated.
package lz4hadoop

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/pierrec/lz4/v4"
)

// ErrCorrupt reports a page that is neither Hadoop-framed LZ4 nor a bare
// LZ4 block decoding to the size it must have.
var ErrCorrupt = errors.New("lz4hadoop: not LZ4 (Hadoop framing or a bare block) of the page's size")

// frameHeader is the size of a Hadoop frame's header: the decompressed and
// the compressed size.
const frameHeader = 8

// Decode decompresses src, a page body of the LZ4 codec, into dst, which
// must be exactly as long as the page's uncompressed size, and returns dst.
// The error matches ErrCorrupt.
func Decode(dst, src []byte) ([]byte, error) { return decode(dst, src, true) }

// decode is Decode; unless exact, it decodes to at most len(dst) bytes and
// returns them.
func decode(dst, src []byte, exact bool) ([]byte, error) {
	if n, ok := decodeHadoop(dst, src); ok && (n == len(dst) || !exact) {
		return dst[:n], nil
	}
	if len(src) == 0 && (len(dst) == 0 || !exact) {
		return dst[:0], nil
	}
	n, err := lz4.UncompressBlock(src, dst)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if n != len(dst) && exact {
		return nil, fmt.Errorf("%w: a bare block of %d bytes, the page has %d", ErrCorrupt, n, len(dst))
	}
	return dst[:n], nil
}

// decodeHadoop decodes src as Hadoop frames into dst, and reports how many
// bytes it wrote, or false if src is not such frames.
func decodeHadoop(dst, src []byte) (int, bool) {
	out := 0
	for len(src) >= frameHeader {
		size := binary.BigEndian.Uint32(src)
		csize := binary.BigEndian.Uint32(src[4:])
		src = src[frameHeader:]
		if uint64(size) > uint64(len(dst)-out) || uint64(csize) > uint64(len(src)) {
			return 0, false
		}
		n, err := lz4.UncompressBlock(src[:csize], dst[out:out+int(size)])
		if err != nil || n != int(size) {
			return 0, false
		}
		out += n
		src = src[csize:]
	}
	return out, len(src) == 0
}

// Encode appends to dst the Hadoop framing of src: one frame, one LZ4
// block. (Parquet writers should use LZ4_RAW; this is for tests and for
// arrow-go's codec interface.)
func Encode(dst, src []byte) []byte {
	var c lz4.Compressor
	block := make([]byte, lz4.CompressBlockBound(len(src)))
	n, err := c.CompressBlock(src, block)
	if err != nil {
		panic("lz4hadoop: " + err.Error()) // only for a destination too small, which CompressBlockBound rules out
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(src)))
	dst = binary.BigEndian.AppendUint32(dst, uint32(n))
	return append(dst, block[:n]...)
}

// Codec is the LZ4 codec for arrow-go's compress.RegisterCodec: it decodes
// as Decode does, and encodes Hadoop frames.
type Codec struct{}

// Encode implements compress.Codec.
func (Codec) Encode(dst, src []byte) []byte { return Encode(dst[:0], src) }

// EncodeLevel implements compress.Codec; LZ4 blocks have no levels.
func (Codec) EncodeLevel(dst, src []byte, _ int) []byte { return Encode(dst[:0], src) }

// CompressBound implements compress.Codec.
func (Codec) CompressBound(n int64) int64 {
	return frameHeader + int64(lz4.CompressBlockBound(int(n)))
}

// Decode implements compress.Codec: it panics on corrupt input, which
// arrow-go's compress.Decode recovers; DecodeWithError is what arrow-go
// calls.
func (Codec) Decode(dst, src []byte) []byte {
	out, err := decode(dst, src, false)
	if err != nil {
		panic(err)
	}
	return out
}

// DecodeWithError implements arrow-go's compress.ErrorCodec.
func (Codec) DecodeWithError(dst, src []byte) ([]byte, error) { return decode(dst, src, false) }
