package pagecheck

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/sovm/sop-pme/internal/pagebound/deltabp"
)

// Some of arrow-go's value decoders size plain Go allocations (outside the
// scan's memory limit) from what a page says, so a Checker bounds those
// sizes first. Each bound below was found by an audit of arrow-go v18.8.0's
// decoders and is tested by a hostile case (internal/testkit/hostile):
//
//   - A dictionary page's num_values sizes the index conversion buffer
//     (48 GiB requested for a page claiming 2^31−1 values: a fatal
//     out-of-memory error): it may not exceed the values its
//     uncompressed_page_size can hold at the type's smallest PLAIN width.
//   - DELTA_BINARY_PACKED's block size sizes a buffer of one miniblock's
//     values (1 GiB from a 10-byte page): at most deltabp.MaxBlockSize.
//     DELTA_LENGTH_BYTE_ARRAY and DELTA_BYTE_ARRAY read their lengths with
//     the same decoder.
//   - DELTA_LENGTH_BYTE_ARRAY and DELTA_BYTE_ARRAY allocate 4 bytes of
//     lengths per value the page claims (256 MiB from 146 bytes): at most
//     maxDeltaByteArrayValues values a page.
//   - DELTA_BYTE_ARRAY decodes a batch's strings into one arena, whose size
//     is the sum of its prefix and suffix lengths (quadratic in the values:
//     1 GiB from a 46 KB page): the sum over the page may not exceed the
//     scan's memory limit.
//
// Checking the delta encodings needs the page's values, so a Checker
// decompresses those pages (already bounded by codecbound) once more.

// maxDeltaByteArrayValues bounds the values of a DELTA_LENGTH_BYTE_ARRAY or
// DELTA_BYTE_ARRAY page: 16 MiB of lengths each. Writers end a page at
// 20,000 rows (arrow-go, parquet-mr) or about 1 MiB.
const maxDeltaByteArrayValues = 1 << 22

// Parquet encodings (parquet.thrift Encoding).
const (
	encRLE                  = 3
	encBitPacked            = 4
	encDeltaBinaryPacked    = 5
	encDeltaLengthByteArray = 6
	encDeltaByteArray       = 7

	dpEncoding      = 2 // DataPageHeader.encoding
	dpDefEncoding   = 3
	dpRepEncoding   = 4
	v2Encoding      = 4 // DataPageHeaderV2.encoding
	dictPageValues  = 1 // DictionaryPageHeader.num_values
	levelPrefixSize = 4
)

// minPlainWidth returns the smallest PLAIN encoding of one value of the
// column, in bits: what a dictionary page holds at most per bit of its
// uncompressed size.
func minPlainWidth(t parquet.Type, typeLen int) int64 {
	switch t {
	case parquet.Types.Boolean:
		return 1
	case parquet.Types.Int32, parquet.Types.Float, parquet.Types.ByteArray:
		return 32 // a BYTE_ARRAY value is a 4-byte length and its bytes
	case parquet.Types.Int64, parquet.Types.Double:
		return 64
	case parquet.Types.Int96:
		return 96
	default:
		return 8 * int64(max(typeLen, 1))
	}
}

// checkDictionary checks a dictionary page's num_values against its size.
func checkDictionary(info Chunk, values, usize int32) error {
	if int64(values)*minPlainWidth(info.Physical, info.TypeLen) > 8*int64(usize) {
		return fmt.Errorf("a dictionary of %d values in %d bytes", values, usize)
	}
	return nil
}

// pageValues is what checkDataValues needs of a data page.
type pageValues struct {
	v2             bool
	encoding       int32
	numValues      int32
	usize          int32
	defEnc, repEnc int32 // V1: the levels' encodings
	defLen, repLen int32 // V2: the levels' lengths
	compressed     bool  // the body (V1) or the values (V2) are compressed
	body           []byte
}

// checkDataValues applies the bounds above to a data page. limit is the
// scan's memory limit for the chunk: what the page may be decompressed
// into, and what DELTA_BYTE_ARRAY's strings may add up to.
func checkDataValues(info Chunk, p pageValues, limit int64) error {
	switch p.encoding {
	case encDeltaLengthByteArray, encDeltaByteArray:
		if p.numValues > maxDeltaByteArrayValues {
			return fmt.Errorf("a %s page of %d values; at most %d", encodingName(p.encoding), p.numValues, maxDeltaByteArrayValues)
		}
	case encDeltaBinaryPacked:
	default:
		return nil
	}
	values, err := valueSection(info, p, limit)
	if err != nil {
		return err
	}
	switch p.encoding {
	case encDeltaBinaryPacked, encDeltaLengthByteArray:
		if _, _, err := deltabp.ParseHeader(values); err != nil {
			return err
		}
	case encDeltaByteArray:
		var total int64
		var bad bool
		sum := func(v int64) {
			if v < 0 {
				bad = true
			}
			if total <= limit {
				total += max(v, 0)
			}
		}
		_, n, err := deltabp.Walk(values, int64(p.numValues), sum)
		if err != nil {
			return fmt.Errorf("prefix lengths: %w", err)
		}
		if _, _, err := deltabp.Walk(values[n:], int64(p.numValues), sum); err != nil {
			return fmt.Errorf("suffix lengths: %w", err)
		}
		if bad {
			return fmt.Errorf("%w: a negative string length", deltabp.ErrFormat)
		}
		if total > limit {
			return fmt.Errorf("%w: a DELTA_BYTE_ARRAY page whose strings add up to more than %d bytes", ErrMemoryLimit, limit)
		}
	}
	return nil
}

// valueSection returns the page's values, decompressed, after its levels.
func valueSection(info Chunk, p pageValues, limit int64) ([]byte, error) {
	b := p.body
	if p.v2 {
		b = b[p.defLen+p.repLen:]
	}
	if p.compressed {
		size := int64(p.usize)
		if p.v2 {
			size -= int64(p.defLen + p.repLen)
		}
		if size == 0 {
			return nil, nil // nothing to check (and no buffer for a codec to write)
		}
		if size > limit {
			return nil, fmt.Errorf("%w: a page of %d bytes to check", ErrMemoryLimit, size)
		}
		c, err := compress.GetCodec(info.Codec)
		if err != nil {
			return nil, err
		}
		out, err := compress.Decode(c, make([]byte, size), b)
		if err != nil || int64(len(out)) != size {
			return nil, fmt.Errorf("the page does not decompress to %d bytes (%v)", size, err)
		}
		b = out
	}
	if p.v2 {
		return b, nil
	}
	// V1: the repetition levels, then the definition levels, each present
	// only if the column's maximum level is not 0.
	for _, l := range []struct {
		max int16
		enc int32
	}{{info.MaxRep, p.repEnc}, {info.MaxDef, p.defEnc}} {
		if l.max == 0 {
			continue
		}
		var n int
		switch l.enc {
		case encRLE:
			if len(b) < levelPrefixSize {
				return nil, fmt.Errorf("levels past the page's end")
			}
			n = levelPrefixSize + int(binary.LittleEndian.Uint32(b))
		case encBitPacked:
			n = int((int64(p.numValues)*int64(bits.Len16(uint16(l.max))) + 7) / 8)
		default:
			return nil, fmt.Errorf("levels of encoding %d", l.enc)
		}
		if n < 0 || n > len(b) {
			return nil, fmt.Errorf("levels past the page's end")
		}
		b = b[n:]
	}
	return b, nil
}

func encodingName(e int32) string {
	switch e {
	case encDeltaLengthByteArray:
		return "DELTA_LENGTH_BYTE_ARRAY"
	case encDeltaByteArray:
		return "DELTA_BYTE_ARRAY"
	}
	return fmt.Sprint("encoding ", e)
}
