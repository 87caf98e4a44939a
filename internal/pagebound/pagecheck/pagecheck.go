// Package pagecheck checks the pages of a Parquet column chunk against what
// the footer says of the chunk, before arrow-go decodes them: the page
// checks of SOP-PME-1's reader (Section 11.10: a producer who holds the DEK
// writes any well-formed module), which the sealer runs too on every page it
// seals, so that the writer never publishes an object its own reader
// refuses.
//
// A chunk must be whole pages; every page header one PageHeader, and:
//
//   - its type is DATA_PAGE, DATA_PAGE_V2 or DICTIONARY_PAGE, with the
//     matching type-specific header; a dictionary page, if any, comes first;
//   - both sizes are at most pme.MaxPageSize (the caller checks that
//     compressed_page_size is the body's length); an UNCOMPRESSED page's
//     uncompressed_page_size is its compressed_page_size;
//   - num_values (and a V2 page's num_nulls, num_rows and level lengths)
//     are not negative and agree with each other and with the page size;
//   - its compressed bytes bound their decompression by its uncompressed
//     size (package internal/pagebound/codecbound: a zstd frame's content size or
//     blocks, a snappy page's length; arrow-go's decoders allocate what
//     those say);
//   - what arrow-go's value decoders allocate outside the scan's memory
//     limit is bounded (see values.go): a dictionary's num_values by its
//     size, and the delta encodings' block sizes, value counts and, for
//     DELTA_BYTE_ARRAY, decoded size;
//   - the data pages' num_values add up to ColumnMetaData.num_values, and,
//     for a column that is not repeated, to RowGroup.num_rows (a V2 page's
//     num_rows for any column): every column of a row group yields the
//     same number of rows.
//
// arrow-go trusts all of these: a missing type-specific header dereferences
// nil; columns of different lengths panic when they are put in one record.
package pagecheck

import (
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/sovm/sop-pme/internal/pagebound/codecbound"
	"github.com/sovm/sop-pme/internal/thrift"
)

// Errors of a Checker; the reader reports them as reader.ErrFormat and
// reader.ErrMemoryLimit, the sealer as seal.ErrPlaintextParquet.
var (
	// ErrPage reports a page that breaks one of the rules above.
	ErrPage = errors.New("the page does not agree with its column chunk")
	// ErrMemoryLimit reports a page whose check, or whose decoding, would
	// need more memory than the limit.
	ErrMemoryLimit = errors.New("the page needs more memory than the limit")
)

// MaxPageSize is the largest page, compressed or not: pme.MaxPageSize
// (which package pme cannot be imported for).
const MaxPageSize = 256 << 20

// DefaultLimit is the memory limit of a chunk of n bytes when the caller
// has none of its own: the default of a reader's scan (40 MiB, and 16
// bytes per byte of the chunk; package reader's scanMemoryBase and
// scanMemoryPerByte).
func DefaultLimit(n int64) int64 { return 40<<20 + 16*n }

// PageHeader and its type-specific headers (apache/parquet-format,
// parquet.thrift).
const (
	phType             = 1
	phUncompressedSize = 2
	phCompressedSize   = 3
	phDataPage         = 5
	phDictPage         = 7
	phDataPageV2       = 8

	// num_values is field 1 of DataPageHeader, DictionaryPageHeader and
	// DataPageHeaderV2.
	subNumValues = 1
	v2NumNulls   = 2
	v2NumRows    = 3
	v2DefLen     = 5
	v2RepLen     = 6
	v2Compressed = 7

	pageData       = 0
	pageDictionary = 2
	pageDataV2     = 3
)

// pageLimits bound the decoding of one page header: a few structs, and
// statistics whose binary values take no nodes.
var pageLimits = thrift.Limits{MaxDepth: 8, MaxNodes: 1 << 10}

// A Chunk is what the footer says of one column chunk, against which its
// pages are checked.
type Chunk struct {
	RowGroup, Column int
	Rows             int64 // RowGroup.num_rows
	Values           int64 // ColumnMetaData.num_values
	Codec            compress.Compression
	MaxDef, MaxRep   int16
	Physical         parquet.Type
	TypeLen          int // of a FIXED_LEN_BYTE_ARRAY
}

// A Checker checks the pages of one column chunk, in order.
type Checker struct {
	info      Chunk
	limit     int64
	page      int
	values    int64
	rows      int64
	rowsKnown bool
}

// New returns a Checker of the pages of chunk c. limit is the memory, in
// bytes, that a page of the chunk may be decompressed into for a check, and
// that DELTA_BYTE_ARRAY's strings may add up to: the scan's memory limit
// for the chunk.
func New(c Chunk, limit int64) *Checker {
	return &Checker{info: c, limit: limit, rowsKnown: true}
}

func (k *Checker) fail(format string, args ...any) error {
	return fmt.Errorf("%w: row group %d column %d page %d: %s", ErrPage, k.info.RowGroup, k.info.Column, k.page, fmt.Sprintf(format, args...))
}

// Page checks the next page: header is its encoded PageHeader, body its
// compressed_page_size bytes. The error matches ErrPage or ErrMemoryLimit.
// The decompressors it runs (arrow-go's codecs, on bytes a producer chose)
// may panic: that is an ErrPage error, not a crash.
func (k *Checker) Page(header, body []byte) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = k.fail("checking it: %v", p)
		}
		k.page++
	}()
	info := k.info
	hdr, err := thrift.DecodeExact(header, pageLimits)
	if err != nil {
		return k.fail("page header: %v", err)
	}
	typ, err1 := hdr.I32(phType)
	csize, err2 := hdr.I32(phCompressedSize)
	usize, err3 := hdr.I32(phUncompressedSize)
	if err1 != nil || err2 != nil || err3 != nil {
		return k.fail("page header lacks its type or sizes")
	}
	if int(csize) != len(body) {
		return k.fail("compressed_page_size %d, but the page is %d bytes", csize, len(body))
	}
	if usize < 0 || usize > MaxPageSize {
		return k.fail("uncompressed_page_size %d", usize)
	}
	if info.Codec == compress.Codecs.Uncompressed && usize != csize {
		return k.fail("an uncompressed page of %d bytes claims %d uncompressed", csize, usize)
	}
	sub := map[int32]int16{pageData: phDataPage, pageDictionary: phDictPage, pageDataV2: phDataPageV2}[typ]
	if sub == 0 {
		return k.fail("page type %d", typ)
	}
	sh, err := hdr.Struct(sub)
	if err != nil {
		return k.fail("a page of type %d without its type-specific header: %v", typ, err)
	}
	n, err := sh.I32(subNumValues)
	if err != nil || n < 0 {
		return k.fail("num_values missing or negative")
	}
	// What the decompressor will read, and the size it must come to.
	compressed, size := body, int(usize)
	var pv pageValues // a data page's, for checkDataValues
	switch typ {
	case pageDictionary:
		if k.page != 0 {
			return k.fail("a dictionary page that is not the chunk's first")
		}
		if err := codecbound.Check(int32(info.Codec), compressed, size); err != nil {
			return k.fail("%v", err)
		}
		if err := checkDictionary(info, n, usize); err != nil {
			return k.fail("%v", err)
		}
		return nil
	case pageData:
		pv = pageValues{numValues: n, usize: usize, body: body, compressed: info.Codec != compress.Codecs.Uncompressed}
		pv.encoding, _ = sh.I32(dpEncoding)
		pv.defEnc, _ = sh.I32(dpDefEncoding)
		pv.repEnc, _ = sh.I32(dpRepEncoding)
		if info.MaxRep > 0 {
			k.rowsKnown = false // only the repetition levels tell
		} else {
			k.rows += int64(n)
		}
	case pageDataV2:
		nulls, err1 := sh.I32(v2NumNulls)
		nrows, err2 := sh.I32(v2NumRows)
		def, err3 := sh.I32(v2DefLen)
		rep, err4 := sh.I32(v2RepLen)
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
			return k.fail("data page V2 header incomplete")
		}
		if nulls < 0 || nrows < 0 || def < 0 || rep < 0 || nulls > n || nrows > n ||
			(info.MaxRep == 0 && nrows != n) || int64(def)+int64(rep) > int64(min(csize, usize)) {
			return k.fail("data page V2 of %d values, %d nulls, %d rows, levels of %d and %d bytes in %d", n, nulls, nrows, def, rep, csize)
		}
		pv = pageValues{v2: true, numValues: n, usize: usize, body: body, defLen: def, repLen: rep, compressed: info.Codec != compress.Codecs.Uncompressed}
		pv.encoding, _ = sh.I32(v2Encoding)
		// is_compressed is optional and true by default.
		if v := sh.Field(v2Compressed); v != nil && v.Type == thrift.TypeBool && v.Int == 0 {
			pv.compressed = false
			if usize != csize {
				return k.fail("an uncompressed V2 page of %d bytes claims %d uncompressed", csize, usize)
			}
			compressed = nil // nothing to decompress
		} else {
			// The levels are never compressed.
			compressed, size = compressed[def+rep:], int(usize-def-rep)
		}
		k.rows += int64(nrows)
	}
	if compressed != nil {
		if err := codecbound.Check(int32(info.Codec), compressed, size); err != nil {
			return k.fail("%v", err)
		}
	}
	if err := checkDataValues(info, pv, k.limit); errors.Is(err, ErrMemoryLimit) {
		return fmt.Errorf("row group %d column %d page %d: %w", info.RowGroup, info.Column, k.page, err)
	} else if err != nil {
		return k.fail("%v", err)
	}
	k.values += int64(n)
	return nil
}

// Done checks, once every page was given, that the data pages hold the
// chunk's values and, where the pages tell, its rows.
func (k *Checker) Done() error {
	if k.values != k.info.Values {
		return fmt.Errorf("%w: row group %d column %d: the data pages hold %d values, ColumnMetaData.num_values %d", ErrPage, k.info.RowGroup, k.info.Column, k.values, k.info.Values)
	}
	if k.rowsKnown && k.rows != k.info.Rows {
		return fmt.Errorf("%w: row group %d column %d: the data pages hold %d rows, RowGroup.num_rows %d", ErrPage, k.info.RowGroup, k.info.Column, k.rows, k.info.Rows)
	}
	return nil
}
