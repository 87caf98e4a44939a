package reader

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/sovm/sop-pme/internal/codecbound"
	"github.com/sovm/sop-pme/internal/thrift"
	"github.com/sovm/sop-pme/pme"
)

// PageHeader and its type-specific headers (apache/parquet-format,
// parquet.thrift).
const (
	phType             = 1
	phUncompressedSize = 2
	phCompressedSize   = 3
	phDataPage         = 5
	phIndexPage        = 6
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

// chunkInfo is what the footer says of one column chunk, against which its
// pages are checked before arrow-go decodes them.
type chunkInfo struct {
	rowGroup, column int
	rows             int64 // RowGroup.num_rows
	values           int64 // ColumnMetaData.num_values
	codec            compress.Compression
	repeated         bool // the column's max repetition level is > 0
	maxDef, maxRep   int16
	physical         parquet.Type
	typeLen          int // of a FIXED_LEN_BYTE_ARRAY
}

// checkPages checks the pages of a column chunk before arrow-go sees them.
// ct is the chunk's modules (each with its length prefix) and plain their
// plaintexts, back to back. The chunk must be whole pages, a header module
// then a body module each; every header must be one PageHeader, and:
//
//   - its type is DATA_PAGE, DATA_PAGE_V2 or DICTIONARY_PAGE, with the
//     matching type-specific header; a dictionary page, if any, comes first;
//   - compressed_page_size is the length of the body module's plaintext
//     (DuckDB's layout, Section 11.3), and both sizes are at most
//     pme.MaxPageSize; an UNCOMPRESSED page's uncompressed_page_size is its
//     compressed_page_size;
//   - num_values (and a V2 page's num_nulls, num_rows and level lengths)
//     are not negative and agree with each other and with the page size;
//   - its compressed bytes bound their decompression by its uncompressed
//     size (package internal/codecbound: a zstd frame's content size or
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
func checkPages(ct, plain []byte, info chunkInfo, limit int64) error {
	where := fmt.Sprintf("row group %d column %d", info.rowGroup, info.column)
	fail := func(page int, format string, args ...any) error {
		return fmt.Errorf("%w: %s page %d: %s", ErrFormat, where, page, fmt.Sprintf(format, args...))
	}
	var values, rows int64
	rowsKnown := true
	for page := 0; len(ct) > 0; page++ {
		var mods [2][]byte
		for k := range mods {
			if len(ct) == 0 {
				return fail(page, "a page header module without its page")
			}
			n := int(binary.LittleEndian.Uint32(ct)) - pme.NonceSize - pme.TagSize
			mods[k], plain = plain[:n], plain[n:]
			ct = ct[pme.Overhead+n:]
		}
		hdr, err := thrift.DecodeExact(mods[0], pageLimits)
		if err != nil {
			return fail(page, "page header: %v", err)
		}
		typ, err1 := hdr.I32(phType)
		csize, err2 := hdr.I32(phCompressedSize)
		usize, err3 := hdr.I32(phUncompressedSize)
		if err1 != nil || err2 != nil || err3 != nil {
			return fail(page, "page header lacks its type or sizes")
		}
		if int(csize) != len(mods[1]) {
			return fail(page, "compressed_page_size %d, but the page is %d bytes", csize, len(mods[1]))
		}
		if usize < 0 || usize > pme.MaxPageSize {
			return fail(page, "uncompressed_page_size %d", usize)
		}
		if info.codec == compress.Codecs.Uncompressed && usize != csize {
			return fail(page, "an uncompressed page of %d bytes claims %d uncompressed", csize, usize)
		}
		sub := map[int32]int16{pageData: phDataPage, pageDictionary: phDictPage, pageDataV2: phDataPageV2}[typ]
		if sub == 0 {
			return fail(page, "page type %d", typ)
		}
		sh, err := hdr.Struct(sub)
		if err != nil {
			return fail(page, "a page of type %d without its type-specific header: %v", typ, err)
		}
		n, err := sh.I32(subNumValues)
		if err != nil || n < 0 {
			return fail(page, "num_values missing or negative")
		}
		// What the decompressor will read, and the size it must come to.
		compressed, size := mods[1], int(usize)
		var pv pageValues // a data page's, for checkDataValues
		switch typ {
		case pageDictionary:
			if page != 0 {
				return fail(page, "a dictionary page that is not the chunk's first")
			}
			if err := codecbound.Check(int32(info.codec), compressed, size); err != nil {
				return fail(page, "%v", err)
			}
			if err := checkDictionary(info, n, usize); err != nil {
				return fail(page, "%v", err)
			}
			continue
		case pageData:
			pv = pageValues{numValues: n, usize: usize, body: mods[1], compressed: info.codec != compress.Codecs.Uncompressed}
			pv.encoding, _ = sh.I32(dpEncoding)
			pv.defEnc, _ = sh.I32(dpDefEncoding)
			pv.repEnc, _ = sh.I32(dpRepEncoding)
			if info.repeated {
				rowsKnown = false // only the repetition levels tell
			} else {
				rows += int64(n)
			}
		case pageDataV2:
			nulls, err1 := sh.I32(v2NumNulls)
			nrows, err2 := sh.I32(v2NumRows)
			def, err3 := sh.I32(v2DefLen)
			rep, err4 := sh.I32(v2RepLen)
			if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
				return fail(page, "data page V2 header incomplete")
			}
			if nulls < 0 || nrows < 0 || def < 0 || rep < 0 || nulls > n || nrows > n ||
				(!info.repeated && nrows != n) || int64(def)+int64(rep) > int64(min(csize, usize)) {
				return fail(page, "data page V2 of %d values, %d nulls, %d rows, levels of %d and %d bytes in %d", n, nulls, nrows, def, rep, csize)
			}
			pv = pageValues{v2: true, numValues: n, usize: usize, body: mods[1], defLen: def, repLen: rep, compressed: info.codec != compress.Codecs.Uncompressed}
			pv.encoding, _ = sh.I32(v2Encoding)
			// is_compressed is optional and true by default.
			if v := sh.Field(v2Compressed); v != nil && v.Type == thrift.TypeBool && v.Int == 0 {
				pv.compressed = false
				if usize != csize {
					return fail(page, "an uncompressed V2 page of %d bytes claims %d uncompressed", csize, usize)
				}
				compressed = nil // nothing to decompress
			} else {
				// The levels are never compressed.
				compressed, size = compressed[def+rep:], int(usize-def-rep)
			}
			rows += int64(nrows)
		}
		if compressed != nil {
			if err := codecbound.Check(int32(info.codec), compressed, size); err != nil {
				return fail(page, "%v", err)
			}
		}
		if err := checkDataValues(info, pv, limit); errors.Is(err, ErrMemoryLimit) {
			return fmt.Errorf("%s page %d: %w", where, page, err)
		} else if err != nil {
			return fail(page, "%v", err)
		}
		values += int64(n)
	}
	if values != info.values {
		return fmt.Errorf("%w: %s: the data pages hold %d values, ColumnMetaData.num_values %d", ErrFormat, where, values, info.values)
	}
	if rowsKnown && rows != info.rows {
		return fmt.Errorf("%w: %s: the data pages hold %d rows, RowGroup.num_rows %d", ErrFormat, where, rows, info.rows)
	}
	return nil
}
