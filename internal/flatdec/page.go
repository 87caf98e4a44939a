package flatdec

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/zstd"
	"github.com/sovm/sop-pme/internal/pagebound/codecbound"
	"github.com/sovm/sop-pme/internal/thrift"
)

// PageHeader and its type-specific headers (apache/parquet-format,
// parquet.thrift), as package pagecheck reads them.
const (
	phType             = 1
	phUncompressedSize = 2
	phCompressedSize   = 3
	phDataPage         = 5
	phDictPage         = 7
	phDataPageV2       = 8

	subNumValues = 1 // of DataPageHeader, DictionaryPageHeader, DataPageHeaderV2
	dpEncoding   = 2 // DataPageHeader.encoding, DictionaryPageHeader.encoding
	dpDefEnc     = 3 // DataPageHeader.definition_level_encoding
	v2Encoding   = 4
	v2DefLen     = 5
	v2RepLen     = 6
	v2Compressed = 7

	pageData       = 0
	pageDictionary = 2
	pageDataV2     = 3

	encPlain           = 0
	encPlainDictionary = 2
	encRLE             = 3
	encRLEDictionary   = 8
)

// pageLimits bound the decoding of one page header, as pagecheck's do.
var pageLimits = thrift.Limits{MaxDepth: 8, MaxNodes: 1 << 10}

// page is what the decoder needs of one page.
type page struct {
	typ            int32
	usize          int // uncompressed_page_size
	numValues      int
	encoding       int32
	defEnc         int32 // DATA_PAGE: the definition levels' encoding
	defLen, repLen int   // DATA_PAGE_V2: the levels' lengths
	compressed     bool  // DATA_PAGE_V2: is_compressed
	body           []byte
}

// parsePage reads the page at the start of b: its header, and its body of
// compressed_page_size bytes. It returns the bytes after it.
func parsePage(b []byte) (p page, rest []byte, err error) {
	hdr, n, err := thrift.Decode(b, pageLimits)
	if err != nil {
		return p, nil, fmt.Errorf("%w: page header: %v", ErrFormat, err)
	}
	b = b[n:]
	typ, err1 := hdr.I32(phType)
	csize, err2 := hdr.I32(phCompressedSize)
	usize, err3 := hdr.I32(phUncompressedSize)
	if err1 != nil || err2 != nil || err3 != nil {
		return p, nil, fmt.Errorf("%w: a page header without its type or sizes", ErrFormat)
	}
	if csize < 0 || int64(csize) > int64(len(b)) || csize > MaxPageSize || usize < 0 || usize > MaxPageSize {
		return p, nil, fmt.Errorf("%w: a page of %d bytes (%d uncompressed) in %d", ErrFormat, csize, usize, len(b))
	}
	p = page{typ: typ, usize: int(usize), body: b[:csize]}
	rest = b[csize:]
	var sub int16
	switch typ {
	case pageData:
		sub = phDataPage
	case pageDictionary:
		sub = phDictPage
	case pageDataV2:
		sub = phDataPageV2
	default:
		return p, nil, fmt.Errorf("%w: page type %d", ErrUnsupported, typ)
	}
	sh, err := hdr.Struct(sub)
	if err != nil {
		return p, nil, fmt.Errorf("%w: a page of type %d without its header", ErrFormat, typ)
	}
	nv, err := sh.I32(subNumValues)
	if err != nil || nv < 0 {
		return p, nil, fmt.Errorf("%w: num_values missing or negative", ErrFormat)
	}
	p.numValues = int(nv)
	switch typ {
	case pageData, pageDictionary:
		enc, err := sh.I32(dpEncoding)
		if err != nil {
			return p, nil, fmt.Errorf("%w: a page without its encoding", ErrFormat)
		}
		p.encoding = enc
		if typ == pageData {
			p.defEnc, _ = sh.I32(dpDefEnc)
		}
	case pageDataV2:
		enc, err1 := sh.I32(v2Encoding)
		def, err2 := sh.I32(v2DefLen)
		rep, err3 := sh.I32(v2RepLen)
		if err1 != nil || err2 != nil || err3 != nil || def < 0 || rep < 0 || int64(def)+int64(rep) > int64(min(csize, usize)) {
			return p, nil, fmt.Errorf("%w: a data page V2 header incomplete, or levels longer than the page", ErrFormat)
		}
		p.encoding, p.defLen, p.repLen = enc, int(def), int(rep)
		p.compressed = true
		if v := sh.Field(v2Compressed); v != nil && v.Type == thrift.TypeBool && v.Int == 0 {
			p.compressed = false
		}
	}
	return p, rest, nil
}

// pageBuffer is a buffer pages are decompressed into, and how much of it
// they used: what putBuf clears.
type pageBuffer struct {
	b    []byte
	used int
}

// release clears what s holds and gives its buffer back to bufs.
func (s *pageBuffer) release() {
	if cap(s.b) > 0 {
		clear(s.b[:s.used])
		b := s.b[:cap(s.b)]
		bufs.Put(&b)
	}
	*s = pageBuffer{}
}

// decompress returns src, compressed with codec, decompressed into buf
// (grown if need be), which must come to size bytes, at most limit.
func decompress(codec compress.Compression, src []byte, size, limit int, buf *pageBuffer) ([]byte, error) {
	if codec == compress.Codecs.Uncompressed {
		if len(src) != size {
			return nil, fmt.Errorf("%w: an uncompressed page of %d bytes claims %d", ErrFormat, len(src), size)
		}
		return src, nil
	}
	if size < 0 || size > MaxPageSize {
		return nil, fmt.Errorf("%w: a page of %d bytes", ErrFormat, size)
	}
	if size > limit {
		return nil, fmt.Errorf("%w: a page of %d bytes, the limit %d", ErrMemoryLimit, size, limit)
	}
	if err := codecbound.Check(int32(codec), src, size); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	if size == 0 {
		return nil, nil
	}
	if cap(buf.b) < size {
		buf.release()
		buf.b = getBuf(size)
	}
	buf.used = max(buf.used, size)
	// Capacity size: a codec that writes more (zstd appends) writes it
	// elsewhere, which the check below refuses.
	dst := buf.b[:size:size]
	decode := decodeZstd
	if codec != compress.Codecs.Zstd {
		c, err := compress.GetCodec(codec)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrUnsupported, err)
		}
		decode = func(dst, src []byte) ([]byte, error) { return compress.Decode(c, dst, src) }
	}
	out, err := decodeSafely(decode, dst, src)
	if err != nil || len(out) != size || unsafe.SliceData(out) != unsafe.SliceData(dst) {
		return nil, fmt.Errorf("%w: the page does not decompress to %d bytes (%v)", ErrFormat, size, err)
	}
	return out, nil
}

// decodeSafely calls decode, whose codecs may panic on bytes a producer
// chose: a panic is an error.
func decodeSafely(decode func(dst, src []byte) ([]byte, error), dst, src []byte) (out []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("decompressor panicked: %v", p)
		}
	}()
	return decode(dst, src)
}

// decodeZstd decodes a ZSTD page as arrow-go's codec does (one decoder,
// made on first use, of arrow-go's options), but for the frames' content
// checksums (XXH64), which it does not compute: the bytes were verified
// against the object's storage_id (BLAKE3; SOP-PME-1 11.10) before they were decrypted,
// and a producer who chose them chose the checksums too. On the zstd
// objects the writer writes, the checksum took about 5 % of a full
// scan's time.
func decodeZstd(dst, src []byte) ([]byte, error) {
	return zstdDecoder().DecodeAll(src, dst[:0])
}

// zstdDecoder is decodeZstd's decoder. Its DecodeAll is safe for
// concurrent use and keeps nothing of a call's between calls.
var zstdDecoder = sync.OnceValue(func() *zstd.Decoder {
	d, err := zstd.NewReader(nil, zstd.IgnoreChecksum(true))
	if err != nil {
		panic(err) // only for options that are not valid
	}
	return d
})

// bufs keeps the buffers pages were decompressed into, cleared (every
// byte zero), for the decoders of the next chunks: a fresh one costs what
// clearing does, plus its page faults and the collector's work.
var bufs sync.Pool // of *[]byte

// getBuf returns a buffer of n bytes, whose bytes the caller overwrites.
func getBuf(n int) []byte {
	for range 2 {
		bp, _ := bufs.Get().(*[]byte)
		if bp == nil {
			break
		}
		if cap(*bp) >= n {
			return (*bp)[:n]
		}
	}
	return make([]byte, n)
}
