package seal

import (
	"fmt"
	"github.com/sovm/sop-pme/pme"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/sovm/sop-pme/internal/lz4hadoop"
	"github.com/sovm/sop-pme/internal/thrift"
)

// Parquet's deprecated LZ4 codec (CompressionCodec 5; parquet-mr's Hadoop
// framing, or a bare LZ4 block from older parquet-cpp) is read by neither
// DuckDB 1.5.6 nor arrow-go: a sealed page of it would make an object no
// SOP-PME-1 reader opens. A Sealer rewrites each such page as the LZ4_RAW
// page of the same bytes: it decompresses the page (package lz4hadoop,
// into a buffer of the page's uncompressed_page_size, at most
// pme.MaxPageSize) and compresses it again with LZ4_RAW, which both read; the
// column chunk's codec becomes LZ4_RAW. Nothing is decoded: levels,
// values, encodings and statistics stay as they are. A compressed V2 page
// of such a chunk is rewritten as a V1 page, as any other (rewriteV2).

// decompress decompresses src, compressed with codec, into dst, which is
// as long as it must decode to.
func decompress(codec int32, dst, src []byte) ([]byte, error) {
	if codec == codecLZ4 {
		return lz4hadoop.Decode(dst, src)
	}
	c, err := compress.GetCodec(compress.Compression(codec))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCodec, err)
	}
	return compress.Decode(c, dst, src)
}

// transcodeLZ4 rewrites the page hdr (a data page V1 or a dictionary page),
// whose body of the LZ4 codec decompresses to usize bytes, as an LZ4_RAW
// page. It returns the new header and body, in buffers of s's.
func (s *Sealer) transcodeLZ4(hdr *thrift.Struct, body []byte, usize int32) (header, out []byte, err error) {
	if cap(s.v1) < int(usize) {
		s.v1 = make([]byte, 0, usize)
	}
	plain, err := lz4hadoop.Decode(s.v1[:usize], body)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrPlaintextParquet, err)
	}
	c, err := compress.GetCodec(compress.Compression(codecLZ4Raw))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrCodec, err)
	}
	if bound := int(c.CompressBound(int64(usize))); cap(s.v1c) < bound {
		s.v1c = make([]byte, bound)
	}
	out = c.Encode(s.v1c[:cap(s.v1c)], plain)
	clear(plain)
	if len(out) > pme.MaxPageSize {
		clear(out)
		return nil, nil, fmt.Errorf("%w: an LZ4 page rewritten as %d LZ4_RAW bytes", pme.ErrTooLarge, len(out))
	}
	hdr.Set(phCompressedSize, thrift.I32(int32(len(out))))
	hdr.Delete(phCRC)
	s.v1hdr = hdr.Append(s.v1hdr[:0])
	return s.v1hdr, out, nil
}
