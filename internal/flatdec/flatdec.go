// Package flatdec decodes the plaintext column chunks of SOP-PME-1 objects
// (Parquet format) for flat columns into Arrow arrays: the fast path of
// package reader's scan, in place of arrow-go's decoder for the columns
// and pages it covers.
//
// Its input is the verified, decrypted plaintext of one column chunk, page
// headers and pages back to back (SOP-PME-1 Section 11.10: no byte reaches
// it unverified). Verification proves only that the object is the one the
// storage_id names: its producer holds the DEK and may have written any
// well-formed module. So this is a parser of untrusted bytes: a chunk it
// cannot decode gives an error matching ErrFormat, ErrUnsupported or
// ErrMemoryLimit, never a panic, an index out of range, an unbounded loop
// or an allocation sized by a length it has not bounded (every buffer is
// bounded by the limit the caller gives, and by the values the caller
// asks for).
//
// What it decodes is what TPC-H's generator (parquet-rs), arrow-go's
// pqarrow and DuckDB write for flat columns:
//
//   - top-level, non-repeated leaf columns (max repetition level 0, max
//     definition level 0 or 1);
//   - physical BOOLEAN, INT32, INT64, FLOAT, DOUBLE and BYTE_ARRAY, and
//     FIXED_LEN_BYTE_ARRAY decimals of up to 16 bytes;
//   - DATA_PAGE and DATA_PAGE_V2 pages after at most one DICTIONARY_PAGE;
//     values PLAIN, PLAIN_DICTIONARY or RLE_DICTIONARY (booleans: PLAIN,
//     bit-packed, or RLE, never a dictionary), definition levels RLE;
//   - codecs UNCOMPRESSED, SNAPPY, GZIP and ZSTD (arrow-go's codecs, after
//     package codecbound has checked that a page's own bytes bound its
//     decompression by its uncompressed size).
//
// Anything else (other encodings, other physical types, nested columns,
// Arrow types that need a conversion) is ErrUnsupported: Supported tells
// from the column's description, Check from its pages, before anything is
// decoded, so that the caller can use another decoder for the chunk.
//
// The output is the stored values as they are, typed as Column.Type says:
// the caller chooses a type whose values those are (bool for BOOLEAN;
// int32, date32 or decimal32 for INT32; int64, decimal64 or a timestamp
// of the stored unit for INT64; decimal128 for either, the stored value
// sign-extended, as arrow-go reads integer decimals by default, and for
// FIXED_LEN_BYTE_ARRAY decimals (big-endian); float32;
// float64; string or binary, or a dictionary<int32, string or binary>
// whose dictionary is the chunk's dictionary page).
package flatdec

import (
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
)

// Errors of the package.
var (
	// ErrUnsupported reports a column, or a page, that the package does not
	// decode: the caller uses another decoder.
	ErrUnsupported = errors.New("flatdec: not supported")
	// ErrFormat reports a chunk whose bytes are not a valid column chunk
	// of its column.
	ErrFormat = errors.New("flatdec: malformed column chunk")
	// ErrMemoryLimit reports a page, or a batch, that needs more memory
	// than the limit.
	ErrMemoryLimit = errors.New("flatdec: beyond the memory limit")
)

// MaxPageSize is the largest page, compressed or not, in bytes:
// pme.MaxPageSize, which pagecheck enforces too.
const MaxPageSize = 256 << 20

// A Column describes the column chunk to decode, from the footer, and the
// Arrow type wanted.
type Column struct {
	Physical       parquet.Type
	MaxDef, MaxRep int16
	Codec          compress.Compression
	// TypeLength is a FIXED_LEN_BYTE_ARRAY's byte width (its schema
	// element's type_length).
	TypeLength int
	// Values is the chunk's ColumnMetaData.num_values: its rows, the
	// column being flat.
	Values int64
	// Type is the type of the arrays Read returns.
	Type arrow.DataType
}

// Supported reports, as an error matching ErrUnsupported, whether chunks of
// column c are outside what the package decodes.
func Supported(c Column) error {
	if c.MaxRep != 0 || c.MaxDef < 0 || c.MaxDef > 1 {
		return fmt.Errorf("%w: levels %d/%d (only flat columns)", ErrUnsupported, c.MaxDef, c.MaxRep)
	}
	switch c.Codec {
	case compress.Codecs.Uncompressed, compress.Codecs.Snappy, compress.Codecs.Gzip, compress.Codecs.Zstd:
	default:
		return fmt.Errorf("%w: codec %s", ErrUnsupported, c.Codec)
	}
	if c.Values < 0 {
		return fmt.Errorf("%w: %d values", ErrFormat, c.Values)
	}
	if c.Type == nil {
		return fmt.Errorf("%w: no type", ErrUnsupported)
	}
	id := c.Type.ID()
	ok := false
	switch c.Physical {
	case parquet.Types.Int32:
		ok = id == arrow.INT32 || id == arrow.DATE32 || id == arrow.DECIMAL32 || id == arrow.DECIMAL128
	case parquet.Types.Int64:
		ok = id == arrow.INT64 || id == arrow.DECIMAL64 || id == arrow.DECIMAL128 || id == arrow.TIMESTAMP
	case parquet.Types.Boolean:
		ok = id == arrow.BOOL
	case parquet.Types.Float:
		ok = id == arrow.FLOAT32
	case parquet.Types.Double:
		ok = id == arrow.FLOAT64
	case parquet.Types.FixedLenByteArray:
		// Decimals, big-endian two's complement, as arrow-go writes
		// decimal128 unless told to store them as integers.
		ok = id == arrow.DECIMAL128 && c.TypeLength >= 1 && c.TypeLength <= 16
	case parquet.Types.ByteArray:
		ok = id == arrow.STRING || id == arrow.BINARY
		if dt, isDict := c.Type.(*arrow.DictionaryType); isDict {
			v := dt.ValueType.ID()
			ok = dt.IndexType.ID() == arrow.INT32 && (v == arrow.STRING || v == arrow.BINARY)
		}
	}
	if !ok {
		return fmt.Errorf("%w: physical %s as %s", ErrUnsupported, c.Physical, c.Type)
	}
	return nil
}

// width returns the byte width of c's values if they are of a fixed
// width, or 0.
func width(c Column) int {
	switch c.Physical {
	case parquet.Types.FixedLenByteArray:
		return c.TypeLength
	case parquet.Types.Int32, parquet.Types.Float:
		return 4
	case parquet.Types.Int64, parquet.Types.Double:
		return 8
	}
	return 0
}

// dictOut reports whether c's arrays are dictionary arrays.
func dictOut(c Column) bool { return c.Type.ID() == arrow.DICTIONARY }

// Check reports whether every page of chunk, the plaintext of a chunk of
// column c, is of a kind the package decodes (ErrUnsupported if not), and
// its headers well-formed (ErrFormat if not), reading the headers only.
// A chunk that passes may still fail to decode (ErrFormat) if its page
// bodies are malformed.
func Check(c Column, chunk []byte) error {
	_, err := pages(c, chunk)
	return err
}

// pages returns the pages of chunk, which Check describes.
func pages(c Column, chunk []byte) ([]page, error) {
	if err := Supported(c); err != nil {
		return nil, err
	}
	var out []page
	dict := false
	for n := 0; len(chunk) > 0; n++ {
		p, rest, err := parsePage(chunk)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
		chunk = rest
		switch p.typ {
		case pageDictionary:
			if n != 0 {
				return nil, fmt.Errorf("%w: a dictionary page that is not the chunk's first", ErrFormat)
			}
			if p.encoding != encPlain && p.encoding != encPlainDictionary {
				return nil, fmt.Errorf("%w: dictionary page of encoding %d", ErrUnsupported, p.encoding)
			}
			if c.Physical == parquet.Types.Boolean {
				return nil, fmt.Errorf("%w: a dictionary of booleans", ErrUnsupported)
			}
			dict = true
		case pageData, pageDataV2:
			if err := checkData(c, p, dict); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// checkData checks that data page p of column c is of a kind the package
// decodes; dict tells whether the chunk has a dictionary page.
func checkData(c Column, p page, dict bool) error {
	switch p.encoding {
	case encPlain:
		if dictOut(c) {
			return fmt.Errorf("%w: a plain page in a column read as a dictionary", ErrUnsupported)
		}
	case encRLE:
		// RLE values: booleans only (levels and indices have their own).
		if c.Physical != parquet.Types.Boolean {
			return fmt.Errorf("%w: RLE values of physical %s", ErrUnsupported, c.Physical)
		}
	case encPlainDictionary, encRLEDictionary:
		if c.Physical == parquet.Types.Boolean {
			return fmt.Errorf("%w: dictionary-encoded booleans", ErrUnsupported)
		}
		if !dict {
			return fmt.Errorf("%w: a dictionary-encoded page without a dictionary", ErrFormat)
		}
	default:
		return fmt.Errorf("%w: data page of encoding %d", ErrUnsupported, p.encoding)
	}
	if p.typ == pageData && c.MaxDef > 0 && p.defEnc != encRLE {
		return fmt.Errorf("%w: definition levels of encoding %d", ErrUnsupported, p.defEnc)
	}
	if p.typ == pageDataV2 && p.repLen != 0 {
		return fmt.Errorf("%w: repetition levels in a flat column", ErrFormat)
	}
	return nil
}
