package seal

import (
	"errors"
	"fmt"

	"github.com/sovm/sop-pme/internal/thrift"
)

// ErrEncoding reports a page whose encoding DuckDB 1.5.6, or arrow-go (the
// decoder of this library's reader), cannot decode: a sealed object keeps
// its file's encodings, and one DuckDB cannot read would break Section
// 11.3 ("readable by any conforming reader holding only the object's
// DEK"), one arrow-go cannot read would be an object its own reader
// refuses. A Sealer refuses such a page (the writer's SealFile with
// writer.ErrNotSealable, and the command's import then encodes the rows
// again, in encodings both read).
//
// What both read was measured, one file per pair of physical type and
// encoding (interop's TestSealerEncodingsDuckDBReads): PLAIN for every
// type; RLE for BOOLEAN; the dictionary encodings (PLAIN_DICTIONARY and
// RLE_DICTIONARY data pages, PLAIN and PLAIN_DICTIONARY dictionary pages);
// DELTA_BINARY_PACKED for INT32 and INT64; DELTA_LENGTH_BYTE_ARRAY and
// DELTA_BYTE_ARRAY for BYTE_ARRAY; BYTE_STREAM_SPLIT for FLOAT and DOUBLE;
// and levels in RLE. What one of them does not read, and a Sealer refuses:
//
//   - BYTE_STREAM_SPLIT for INT32, INT64 and FIXED_LEN_BYTE_ARRAY: DuckDB
//     refuses it ("BYTE_STREAM_SPLIT encoding is only supported for FLOAT
//     or DOUBLE data"; parquet-testing's
//     byte_stream_split_extended.gzip.parquet), arrow-go reads it;
//   - definition or repetition levels in the deprecated BIT_PACKED
//     encoding, in a column that has such levels: DuckDB reads every level
//     section as RLE ("Out of buffer"), arrow-go reads them. A column whose
//     maximum level is 0 has no levels, whatever encoding its page header
//     names;
//   - DELTA_BYTE_ARRAY for FIXED_LEN_BYTE_ARRAY (pyarrow writes it): DuckDB
//     reads it, arrow-go does not ("unimplemented encoding type"), and so
//     import cannot re-encode it either;
//   - any other pair, and encodings parquet.thrift does not define.
var ErrEncoding = errors.New("pme: an encoding DuckDB 1.5.6 or arrow-go cannot read")

// Parquet physical types (parquet.thrift Type) and encodings (Encoding).
const (
	typeBoolean = 0
	typeInt32   = 1
	typeInt64   = 2
	typeFloat   = 4
	typeDouble  = 5
	typeBinary  = 6
	typeFLBA    = 7

	encPlain                = 0
	encPlainDictionary      = 2
	encRLE                  = 3
	encBitPacked            = 4
	encDeltaBinaryPacked    = 5
	encDeltaLengthByteArray = 6
	encDeltaByteArray       = 7
	encRLEDictionary        = 8
	encByteStreamSplit      = 9

	anyPhysicalType = -2
)

// duckdbReads lists, for each value encoding of a data page, the physical
// types DuckDB 1.5.6 and arrow-go both decode it for (anyPhysicalType:
// all).
var duckdbReads = map[int32][]int32{
	encPlain:                {anyPhysicalType},
	encPlainDictionary:      {anyPhysicalType},
	encRLEDictionary:        {anyPhysicalType},
	encRLE:                  {typeBoolean},
	encDeltaBinaryPacked:    {typeInt32, typeInt64},
	encDeltaLengthByteArray: {typeBinary},
	encDeltaByteArray:       {typeBinary},
	encByteStreamSplit:      {typeFloat, typeDouble},
}

// encodingName names a parquet.thrift Encoding.
func encodingName(e int32) string {
	names := map[int32]string{encPlain: "PLAIN", encPlainDictionary: "PLAIN_DICTIONARY", encRLE: "RLE", encBitPacked: "BIT_PACKED",
		encDeltaBinaryPacked: "DELTA_BINARY_PACKED", encDeltaLengthByteArray: "DELTA_LENGTH_BYTE_ARRAY",
		encDeltaByteArray: "DELTA_BYTE_ARRAY", encRLEDictionary: "RLE_DICTIONARY", encByteStreamSplit: "BYTE_STREAM_SPLIT"}
	if n, ok := names[e]; ok {
		return n
	}
	return fmt.Sprintf("encoding %d", e)
}

// typeName names a parquet.thrift Type.
func typeName(t int32) string {
	names := map[int32]string{typeBoolean: "BOOLEAN", typeInt32: "INT32", typeInt64: "INT64", 3: "INT96", typeFloat: "FLOAT",
		typeDouble: "DOUBLE", typeBinary: "BYTE_ARRAY", typeFLBA: "FIXED_LEN_BYTE_ARRAY"}
	if n, ok := names[t]; ok {
		return n
	}
	return fmt.Sprintf("type %d", t)
}

// checkEncoding refuses, with ErrEncoding, a page (its header hdr) of a
// column lv whose encodings DuckDB 1.5.6 or arrow-go cannot read. Pages of other
// types, and headers without their type-specific header, are for the
// page checks.
func checkEncoding(hdr *thrift.Struct, lv levels) error {
	typ, _ := hdr.I32(phType)
	switch typ {
	case pageDictionary:
		h, err := hdr.Struct(phDictPageHdr)
		if err != nil {
			return nil
		}
		if e, err := h.I32(dictEncoding); err == nil && e != encPlain && e != encPlainDictionary {
			return fmt.Errorf("%w: a dictionary page in %s", ErrEncoding, encodingName(e))
		}
		return nil
	case pageData:
		h, err := hdr.Struct(phDataPage)
		if err != nil {
			return nil
		}
		for _, l := range []struct {
			field int16
			max   int
			what  string
		}{{dphDefEncoding, lv.def, "definition"}, {dphRepEncoding, lv.rep, "repetition"}} {
			if e, err := h.I32(l.field); err == nil && l.max > 0 && e != encRLE {
				return fmt.Errorf("%w: %s levels in %s", ErrEncoding, l.what, encodingName(e))
			}
		}
		e, _ := h.I32(dphEncoding)
		return checkValueEncoding(e, lv)
	case pageDataV2:
		h, err := hdr.Struct(phDataPageV2)
		if err != nil {
			return nil
		}
		e, _ := h.I32(dph2Encoding)
		return checkValueEncoding(e, lv)
	}
	return nil
}

// checkValueEncoding refuses the value encoding e of a data page of column
// lv if DuckDB 1.5.6 or arrow-go does not decode it for the column's
// physical type.
func checkValueEncoding(e int32, lv levels) error {
	for _, t := range duckdbReads[e] {
		if t == anyPhysicalType || t == lv.physical {
			return nil
		}
	}
	return fmt.Errorf("%w: %s values of %s", ErrEncoding, encodingName(e), typeName(lv.physical))
}
