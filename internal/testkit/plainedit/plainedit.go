// Package plainedit rewrites the pages of plaintext Parquet files for
// tests: it compresses the pages of chosen row groups with a compressor of
// the test's own (a streaming zstd writer, say), or edits page headers and
// bodies as a test needs (the layouts other writers make, or bad ones),
// which no Parquet writer this repository uses can be made to do, and lays
// the file out again.
package plainedit

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/sovm/sop-pme/internal/thrift"
)

// parquet.thrift field IDs.
const (
	fmdRowGroups = 4

	rgColumns         = 1
	rgFileOffset      = 5
	rgTotalCompressed = 6

	ccFileOffset        = 2
	ccMetaData          = 3
	ccOffsetIndexOffset = 4
	ccOffsetIndexLength = 5
	ccColumnIndexOffset = 6
	ccColumnIndexLength = 7

	cmdCodec             = 4
	cmdTotalCompressed   = 7
	cmdDataPageOffset    = 9
	cmdIndexPageOffset   = 10
	cmdDictPageOffset    = 11
	cmdBloomFilterOffset = 14
	cmdBloomFilterLength = 15

	phType           = 1
	phCompressedSize = 3
	phCRC            = 4

	pageDataV2 = 3
)

var lim = thrift.DefaultLimits()

// Recompress returns a copy of b, a plaintext Parquet file whose pages are
// UNCOMPRESSED and V1, in which every page of the row groups rgs (every row
// group if rgs is empty) is compressed by compress, and their column
// chunks declare codec (a parquet.thrift CompressionCodec). Page indexes
// and bloom filters are dropped, since their offsets would be wrong.
func Recompress(b []byte, codec int32, compress func(page []byte) []byte, rgs ...int) ([]byte, error) {
	chosen := func(i int) bool {
		for _, r := range rgs {
			if r == i {
				return true
			}
		}
		return len(rgs) == 0
	}
	return Rewrite(b, func(p *Page) error {
		if !chosen(p.RowGroup) {
			return nil
		}
		if t, _ := p.Header.I32(phType); t == pageDataV2 {
			return errors.New("plainedit: a V2 page")
		}
		p.Body = compress(p.Body)
		p.Meta.Set(cmdCodec, thrift.I32(codec))
		return nil
	})
}

// A Page is a page of a plaintext Parquet file that Rewrite hands to its
// edit: the header and body may be changed, or replaced, and so may the
// ColumnMetaData of its column chunk.
type Page struct {
	RowGroup, Column int
	Index            int            // of the page in its column chunk
	Header           *thrift.Struct // the PageHeader
	Body             []byte         // the page's bytes (compressed_page_size of them)
	Meta             *thrift.Struct // the chunk's ColumnMetaData
	Drop             bool           // set by edit: leave the page out
}

// Rewrite returns a copy of b, a plaintext Parquet file, in which edit has
// seen, and may have changed, every page, in file order. Each page's
// compressed_page_size is then set to the length of its body, and its crc
// dropped; offsets and sizes in the footer are laid out again, and page
// indexes and bloom filters are dropped, since their offsets would be
// wrong.
func Rewrite(b []byte, edit func(p *Page) error) ([]byte, error) {
	if len(b) < 12 || string(b[:4]) != "PAR1" || string(b[len(b)-4:]) != "PAR1" {
		return nil, errors.New("plainedit: not a plaintext Parquet file")
	}
	flen := int(binary.LittleEndian.Uint32(b[len(b)-8:]))
	if flen > len(b)-12 {
		return nil, errors.New("plainedit: footer length")
	}
	meta, err := thrift.DecodeExact(b[len(b)-8-flen:len(b)-8], lim)
	if err != nil {
		return nil, err
	}
	groups, err := meta.List(fmdRowGroups)
	if err != nil {
		return nil, err
	}
	out := []byte("PAR1")
	for i, g := range groups.Items {
		cols, err := g.Struct.List(rgColumns)
		if err != nil {
			return nil, err
		}
		rgStart := int64(len(out))
		for j, c := range cols.Items {
			cc := c.Struct
			md, err := cc.Struct(ccMetaData)
			if err != nil {
				return nil, err
			}
			start, err := md.I64(cmdDataPageOffset)
			if err != nil {
				return nil, err
			}
			data := start
			dict, _ := md.I64(cmdDictPageOffset)
			if dict > 0 {
				start = dict
			}
			size, err := md.I64(cmdTotalCompressed)
			if err != nil || start < 4 || size < 0 || start+size > int64(len(b)-8-flen) {
				return nil, fmt.Errorf("plainedit: row group %d column %d: chunk outside the file", i, j)
			}
			chunkStart := int64(len(out))
			for off, k := start, 0; off < start+size; k++ {
				hdr, n, err := thrift.Decode(b[off:start+size], lim)
				if err != nil {
					return nil, fmt.Errorf("plainedit: page header at %d: %w", off, err)
				}
				csize, err := hdr.I32(phCompressedSize)
				if err != nil || int64(n)+int64(csize) > start+size-off {
					return nil, fmt.Errorf("plainedit: page at %d: bad size", off)
				}
				p := &Page{RowGroup: i, Column: j, Index: k, Header: hdr, Body: b[off+int64(n) : off+int64(n)+int64(csize)], Meta: md}
				if err := edit(p); err != nil {
					return nil, err
				}
				next := off + int64(n) + int64(csize)
				if p.Drop {
					off = next
					continue
				}
				switch off {
				case data:
					md.Set(cmdDataPageOffset, thrift.I64(int64(len(out))))
				case dict:
					md.Set(cmdDictPageOffset, thrift.I64(int64(len(out))))
				}
				p.Header.Set(phCompressedSize, thrift.I32(int32(len(p.Body))))
				p.Header.Delete(phCRC)
				out = p.Header.Append(out)
				out = append(out, p.Body...)
				off = next
			}
			md.Set(cmdTotalCompressed, thrift.I64(int64(len(out))-chunkStart))
			md.Delete(cmdIndexPageOffset)
			md.Delete(cmdBloomFilterOffset)
			md.Delete(cmdBloomFilterLength)
			for _, id := range []int16{ccOffsetIndexOffset, ccOffsetIndexLength, ccColumnIndexOffset, ccColumnIndexLength} {
				cc.Delete(id)
			}
			cc.Set(ccFileOffset, thrift.I64(chunkStart))
		}
		g.Struct.Set(rgFileOffset, thrift.I64(rgStart))
		g.Struct.Set(rgTotalCompressed, thrift.I64(int64(len(out))-rgStart))
	}
	footer := meta.Append(nil)
	out = append(out, footer...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(footer)))
	return append(out, "PAR1"...), nil
}
