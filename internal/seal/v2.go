package seal

import (
	"encoding/binary"
	"fmt"
	"github.com/sovm/sop-pme/pme"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/sovm/sop-pme/internal/pagebound/codecbound"
	"github.com/sovm/sop-pme/internal/thrift"
)

// A compressed DATA_PAGE_V2 page cannot go into an object as it is: DuckDB
// 1.5.6 reads its levels and its values from an encrypted file as two
// modules, which no PME writer makes (Section 11.3's layout is one module a
// page body). A Sealer rewrites such a page as the
// DATA_PAGE (V1) that holds the same values:
//
//	V2 body: repetition levels | definition levels | compress(values)
//	V1 body: compress(u32 len | repetition levels | u32 len | definition levels | values)
//
// Both kinds of page encode levels with the RLE/bit-packed hybrid at the
// column's bit widths; V1 prefixes each with its length, and has no
// repetition (definition) levels at all when the column's maximum
// repetition (definition) level is 0. The values are decompressed, and the
// V1 body compressed again, with the chunk's codec; nothing is decoded.
// The new header keeps num_values, the encoding and the statistics; the
// levels' encoding is RLE.

// V1's length prefix of each level section.
const levelsPrefix = 4

// levels are a leaf column's maximum definition and repetition levels, and
// its physical type and type_length (-1 if the schema element has none).
type levels struct {
	def, rep          int
	physical, typeLen int32
}

// leafLevels returns the maximum levels of the leaf columns of a
// FileMetaData.schema, in column order (the schema's depth-first order).
func leafLevels(items []thrift.Value) ([]levels, error) {
	bad := func(i int, why string) error {
		return fmt.Errorf("%w: schema element %d: %s", ErrPlaintextParquet, i, why)
	}
	type frame struct {
		left int // children still to visit
		lv   levels
	}
	var out []levels
	// The root: its repetition, if any, does not count.
	stack := []frame{{left: 1}}
	for i, it := range items {
		for len(stack) > 0 && stack[len(stack)-1].left == 0 {
			stack = stack[:len(stack)-1]
		}
		if len(stack) == 0 {
			return nil, bad(i, "outside the tree")
		}
		top := &stack[len(stack)-1]
		top.left--
		if it.Struct == nil {
			return nil, bad(i, "not a struct")
		}
		lv := top.lv
		if i > 0 {
			switch r, err := it.Struct.I32(seRepetition); {
			case err != nil:
				return nil, bad(i, "no repetition_type")
			case r == repRepeated:
				lv.def++
				lv.rep++
			case r != repRequired:
				lv.def++
			}
		}
		children := int32(0)
		if v := it.Struct.Field(seNumChild); v != nil {
			c, err := it.Struct.I32(seNumChild)
			if err != nil || c < 0 || int(c) > len(items)-i-1 {
				return nil, bad(i, "bad num_children")
			}
			children = c
		}
		if children == 0 {
			if i == 0 {
				continue // a schema without columns
			}
			lv.physical, lv.typeLen = -1, -1
			if t, err := it.Struct.I32(seType); err == nil {
				lv.physical = t
			}
			if n, err := it.Struct.I32(seTypeLength); err == nil {
				lv.typeLen = n
			}
			out = append(out, lv)
			continue
		}
		stack = append(stack, frame{left: int(children), lv: lv})
	}
	for _, f := range stack {
		if f.left != 0 {
			return nil, fmt.Errorf("%w: schema: elements missing", ErrPlaintextParquet)
		}
	}
	return out, nil
}

// rewriteV2 rewrites the compressed DATA_PAGE_V2 page hdr, whose body is
// body (compressed_page_size bytes), as a DATA_PAGE of a column of levels lv
// compressed with codec, and compresses it with outCodec (codec, but for
// LZ4, which becomes LZ4_RAW). It returns the encoded page header and the
// body, in buffers of s's, and the new page's uncompressed size.
func (s *Sealer) rewriteV2(hdr *thrift.Struct, body []byte, codec, outCodec int32, lv levels) (header, out []byte, usize int32, err error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: data page V2: %s", ErrPlaintextParquet, fmt.Sprintf(format, args...))
	}
	v2, err := hdr.Struct(phDataPageV2)
	if err != nil {
		return nil, nil, 0, bad("no data_page_header_v2")
	}
	numValues, err1 := v2.I32(dph2NumValues)
	encoding, err2 := v2.I32(dph2Encoding)
	defLen, err3 := v2.I32(dph2DefLen)
	repLen, err4 := v2.I32(dph2RepLen)
	oldUsize, err5 := hdr.I32(phUncompressedSize)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || err5 != nil {
		return nil, nil, 0, bad("header incomplete")
	}
	if numValues < 0 || defLen < 0 || repLen < 0 || int64(defLen)+int64(repLen) > int64(min(len(body), int(oldUsize))) {
		return nil, nil, 0, bad("levels of %d and %d bytes in %d", defLen, repLen, len(body))
	}
	if (lv.rep == 0 && repLen > 0) || (lv.def == 0 && defLen > 0) {
		return nil, nil, 0, bad("levels for a column that has none")
	}
	rep, def, values := body[:repLen], body[repLen:repLen+defLen], body[repLen+defLen:]
	valuesSize := int(oldUsize - defLen - repLen)
	// A page without values (all nulls, or none) may have an empty values
	// section, which no codec's format is: parquet-mr writes it so, and
	// readers (Arrow C++, parquet-rs, DuckDB) decompress nothing.
	noValues := valuesSize == 0 && len(values) == 0
	if codec != codecLZ4 { // (whose decoder is bounded by its output buffer)
		if err := codecbound.Check(codec, values, valuesSize); err != nil && !noValues {
			return nil, nil, 0, fmt.Errorf("%w: %w", ErrUnboundedPage, err)
		}
	}
	c, err := compress.GetCodec(compress.Compression(outCodec))
	if err != nil {
		return nil, nil, 0, fmt.Errorf("%w: %w", ErrCodec, err)
	}

	// The V1 body, uncompressed: the levels with their prefixes, then the
	// values, decompressed into place.
	plainLen := valuesSize
	if lv.rep > 0 {
		plainLen += levelsPrefix + len(rep)
	}
	if lv.def > 0 {
		plainLen += levelsPrefix + len(def)
	}
	if plainLen > pme.MaxPageSize {
		return nil, nil, 0, fmt.Errorf("%w: a data page V2 of %d bytes rewritten as %d", pme.ErrTooLarge, oldUsize, plainLen)
	}
	if cap(s.v1) < plainLen {
		s.v1 = make([]byte, 0, plainLen)
	}
	v1 := s.v1[:0]
	if lv.rep > 0 {
		v1 = binary.LittleEndian.AppendUint32(v1, uint32(len(rep)))
		v1 = append(v1, rep...)
	}
	if lv.def > 0 {
		v1 = binary.LittleEndian.AppendUint32(v1, uint32(len(def)))
		v1 = append(v1, def...)
	}
	if valuesSize > 0 { // (no values: nothing to decompress, and no buffer for a codec to write)
		dst := v1[len(v1):plainLen]
		got, err := decompress(codec, dst, values)
		if err != nil || len(got) != valuesSize {
			clear(s.v1[:plainLen])
			return nil, nil, 0, bad("values do not decompress to %d bytes (%d, %v)", valuesSize, len(got), err)
		}
	}
	v1 = v1[:plainLen]
	if bound := int(c.CompressBound(int64(plainLen))); cap(s.v1c) < bound {
		s.v1c = make([]byte, bound)
	}
	out = c.Encode(s.v1c[:cap(s.v1c)], v1)
	clear(v1)
	if len(out) > pme.MaxPageSize {
		clear(out)
		return nil, nil, 0, fmt.Errorf("%w: a data page V2 rewritten as %d compressed bytes", pme.ErrTooLarge, len(out))
	}

	dp := thrift.NewStruct(
		thrift.Field{ID: dphNumValues, Value: thrift.I32(numValues)},
		thrift.Field{ID: dphEncoding, Value: thrift.I32(encoding)},
		thrift.Field{ID: dphDefEncoding, Value: thrift.I32(encRLE)},
		thrift.Field{ID: dphRepEncoding, Value: thrift.I32(encRLE)},
	)
	if st := v2.Field(dph2Statistics); st != nil && st.Type == thrift.TypeStruct {
		dp.Set(dphStatistics, *st)
	}
	h := thrift.NewStruct(
		thrift.Field{ID: phType, Value: thrift.I32(pageData)},
		thrift.Field{ID: phUncompressedSize, Value: thrift.I32(int32(plainLen))},
		thrift.Field{ID: phCompressedSize, Value: thrift.I32(int32(len(out)))},
		thrift.Field{ID: phDataPage, Value: thrift.StructValue(dp)},
	)
	s.v1hdr = h.Append(s.v1hdr[:0])
	return s.v1hdr, out, int32(plainLen), nil
}

// noteV1 records in md, the ColumnMetaData of a chunk some of whose V2
// pages were rewritten, that its data pages are V1 ones with RLE levels:
// RLE joins encodings, and encoding_stats count DATA_PAGE pages where they
// counted DATA_PAGE_V2 ones.
func noteV1(md *thrift.Struct) {
	if l, err := md.List(cmdEncodings); err == nil {
		has := false
		for _, it := range l.Items {
			has = has || it.Int == encRLE
		}
		if !has {
			l.Items = append(l.Items, thrift.I32(encRLE))
		}
	}
	if l, err := md.List(cmdEncodingStats); err == nil {
		for _, it := range l.Items {
			if it.Struct == nil {
				continue
			}
			if t, err := it.Struct.I32(pesPageType); err == nil && t == pageDataV2 {
				it.Struct.Set(pesPageType, thrift.I32(pageData))
			}
		}
	}
}
