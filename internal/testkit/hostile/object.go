// Package hostile crafts SOP-PME-1 objects as a malicious producer would
// make them: a producer that holds the object's DEK, so that every module it
// writes opens under that DEK, and whose bytes verify against their
// storage_id once imported (SOP-PME-1 Section 11.10 leaves producer
// authenticity to a separate layer). Such objects reach the Parquet decoder;
// the reader must survive them.
//
// Open decrypts a valid object into its plaintext parts (the FileMetaData
// tree, and every page header and page body of every column chunk); the
// caller mutates them; Seal re-seals every module under a DEK with the empty
// AAD, lays the modules out again, and fixes what the layout decides: the
// offsets and total_compressed_size of each column chunk, the row groups'
// file_offset and total_compressed_size, and the footer length. It keeps
// FileCryptoMetaData (so the key_ref) and the pad entry as they are, unless
// asked to re-pad the object to its Padmé size.
//
// Cases lists the hostile objects the reader is tested against, each with
// the rule it breaks and the error the reader must return. The package is
// for tests and test-vector generators only.
package hostile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/sovm/sop-pme/internal/thrift"
	"github.com/sovm/sop-pme/padme"
	"github.com/sovm/sop-pme/pme"
)

// Thrift field IDs (apache/parquet-format, parquet.thrift).
const (
	FMDVersion   = 1
	FMDSchema    = 2
	FMDNumRows   = 3
	FMDRowGroups = 4
	FMDKeyValue  = 5

	SEType       = 1
	SETypeLength = 2
	SERepetition = 3
	SEName       = 4
	SENumChild   = 5
	SEConverted  = 6
	SEFieldID    = 9
	SELogical    = 10

	KVKey   = 1
	KVValue = 2

	RGColumns         = 1
	RGTotalByteSize   = 2
	RGNumRows         = 3
	RGFileOffset      = 5
	RGTotalCompressed = 6

	CCMetaData = 3

	CMDType              = 1
	CMDCodec             = 4
	CMDNumValues         = 5
	CMDTotalUncompressed = 6
	CMDTotalCompressed   = 7
	CMDDataPageOffset    = 9
	CMDDictPageOffset    = 11

	PHType             = 1
	PHUncompressedSize = 2
	PHCompressedSize   = 3
	PHDataPage         = 5
	PHIndexPage        = 6
	PHDictPage         = 7
	PHDataPageV2       = 8

	// DataPageHeader, DictionaryPageHeader and DataPageHeaderV2 all have
	// num_values as field 1.
	NumValues = 1
	// DataPageHeader.encoding, DictionaryPageHeader.encoding.
	Encoding = 2
	// DataPageHeaderV2.
	V2NumNulls     = 2
	V2NumRows      = 3
	V2Encoding     = 4
	V2DefLevelsLen = 5
	V2RepLevelsLen = 6
)

// Parquet enum values.
const (
	PageData       = 0
	PageIndex      = 1
	PageDictionary = 2
	PageDataV2     = 3
)

// A Page is one page of a column chunk: its header and its body, in
// plaintext. Seal encodes Header unless RawHeader is set, which is sealed as
// it is.
type Page struct {
	Header    *thrift.Struct
	RawHeader []byte
	Body      []byte
	// NoBody makes Seal write the header module only: half a page.
	NoBody bool
}

// Type returns the page's PageHeader.type, or -1.
func (p *Page) Type() int {
	if p.Header == nil {
		return -1
	}
	v, err := p.Header.I32(PHType)
	if err != nil {
		return -1
	}
	return int(v)
}

// Sub returns the page's type-specific header (data_page_header,
// dictionary_page_header or data_page_header_v2), or nil.
func (p *Page) Sub() *thrift.Struct {
	if p.Header == nil {
		return nil
	}
	for _, id := range []int16{PHDataPage, PHDictPage, PHDataPageV2, PHIndexPage} {
		if s, err := p.Header.Struct(id); err == nil {
			return s
		}
	}
	return nil
}

// SetBody replaces the body and sets compressed_page_size, and
// uncompressed_page_size when uncompressed is not negative.
func (p *Page) SetBody(body []byte, uncompressed int) {
	p.Body = body
	p.Header.Set(PHCompressedSize, thrift.I32(int32(len(body))))
	if uncompressed >= 0 {
		p.Header.Set(PHUncompressedSize, thrift.I32(int32(uncompressed)))
	}
}

// A Chunk is one column chunk: its pages in order. DataPage is the index of
// the page data_page_offset points at, DictPage that of the page
// dictionary_page_offset points at, or -1 if the footer has none. Seal
// points the offsets at those pages again (at the chunk's start if the index
// is out of range).
type Chunk struct {
	Pages    []Page
	DataPage int
	DictPage int
}

// An Object is a decrypted SOP-PME-1 object.
type Object struct {
	// Footer is the decrypted FileMetaData. Seal fixes the chunk offsets
	// and sizes in it, in place. RawFooter, if set, is sealed as it is
	// instead, with no fix-up.
	Footer    *thrift.Struct
	RawFooter []byte
	// Chunks are the column chunks, by row group and column, as the
	// footer lists them. Seal lays them out in this order.
	Chunks [][]*Chunk
	// Crypto is the FileCryptoMetaData, kept as it is.
	Crypto []byte
	// Trailing are modules (sealed as plaintext parts) Seal writes after the
	// last chunk, inside the data region and outside every chunk.
	Trailing [][]byte
}

// Open decrypts obj, a SOP-PME-1 object (or a DuckDB-written encrypted
// Parquet file) sealed under dek.
func Open(obj []byte, dek pme.DEK) (*Object, error) {
	if len(obj) < 4+pme.TrailerSize || string(obj[:4]) != "PARE" {
		return nil, fmt.Errorf("hostile: not a PARE file")
	}
	flen, err := pme.ParseTrailer(obj[len(obj)-pme.TrailerSize:])
	if err != nil {
		return nil, err
	}
	dataEnd := int64(len(obj)) - pme.TrailerSize - int64(flen)
	if dataEnd < 4 {
		return nil, fmt.Errorf("hostile: footer length %d", flen)
	}
	tail, err := pme.ParseFooterRegion(obj[dataEnd : len(obj)-pme.TrailerSize])
	if err != nil {
		return nil, err
	}
	plain, err := dek.Open(nil, tail.FooterBody)
	if err != nil {
		return nil, err
	}
	meta, err := thrift.DecodeExact(plain, thrift.Limits{MaxDepth: 64, MaxNodes: 1 << 26})
	if err != nil {
		return nil, err
	}
	o := &Object{Footer: meta, Crypto: bytes.Clone(obj[dataEnd : dataEnd+int64(tail.CryptoLen)])}
	rgs, err := o.RowGroups()
	if err != nil {
		return nil, err
	}
	for i, rg := range rgs {
		cols, err := rg.List(RGColumns)
		if err != nil {
			return nil, fmt.Errorf("hostile: row group %d: %w", i, err)
		}
		var row []*Chunk
		for j, v := range cols.Items {
			md, err := v.Struct.Struct(CCMetaData)
			if err != nil {
				return nil, fmt.Errorf("hostile: row group %d column %d: %w", i, j, err)
			}
			c, err := openChunk(obj[:dataEnd], md, dek)
			if err != nil {
				return nil, fmt.Errorf("hostile: row group %d column %d: %w", i, j, err)
			}
			row = append(row, c)
		}
		o.Chunks = append(o.Chunks, row)
	}
	return o, nil
}

func openChunk(data []byte, md *thrift.Struct, dek pme.DEK) (*Chunk, error) {
	dataOff, err := md.I64(CMDDataPageOffset)
	if err != nil {
		return nil, err
	}
	size, err := md.I64(CMDTotalCompressed)
	if err != nil {
		return nil, err
	}
	start, dict := dataOff, int64(-1)
	if v := md.Field(CMDDictPageOffset); v != nil && v.Int > 0 {
		dict = v.Int
		start = min(start, dict)
	}
	if start < 4 || size < 0 || start+size > int64(len(data)) {
		return nil, fmt.Errorf("chunk [%d, +%d) outside the data region", start, size)
	}
	c := &Chunk{DataPage: -1, DictPage: -1}
	b := data[start : start+size]
	for off := start; len(b) > 0; {
		var hdr, body []byte
		for _, dst := range []*[]byte{&hdr, &body} {
			m, rest, err := pme.SplitModule(b)
			if err != nil {
				return nil, err
			}
			if *dst, err = dek.Open(nil, m); err != nil {
				return nil, err
			}
			b = rest
		}
		p := Page{Body: body}
		if p.Header, err = thrift.DecodeExact(hdr, thrift.Limits{}); err != nil {
			p.RawHeader = hdr
		}
		switch off {
		case dataOff:
			c.DataPage = len(c.Pages)
		case dict:
			c.DictPage = len(c.Pages)
		}
		c.Pages = append(c.Pages, p)
		off = start + size - int64(len(b))
	}
	return c, nil
}

// RowGroups returns the footer's row groups.
func (o *Object) RowGroups() ([]*thrift.Struct, error) {
	l, err := o.Footer.List(FMDRowGroups)
	if err != nil {
		return nil, fmt.Errorf("hostile: row_groups: %w", err)
	}
	out := make([]*thrift.Struct, len(l.Items))
	for i, v := range l.Items {
		out[i] = v.Struct
	}
	return out, nil
}

// ColumnMeta returns the ColumnMetaData of row group i, column j.
func (o *Object) ColumnMeta(i, j int) *thrift.Struct {
	rgs, err := o.RowGroups()
	if err != nil || i >= len(rgs) {
		return nil
	}
	cols, err := rgs[i].List(RGColumns)
	if err != nil || j >= len(cols.Items) {
		return nil
	}
	md, _ := cols.Items[j].Struct.Struct(CCMetaData)
	return md
}

// Schema returns the footer's schema elements, the root first.
func (o *Object) Schema() []*thrift.Struct {
	l, err := o.Footer.List(FMDSchema)
	if err != nil {
		return nil
	}
	out := make([]*thrift.Struct, len(l.Items))
	for i, v := range l.Items {
		out[i] = v.Struct
	}
	return out
}

// SetKeyValue sets the footer key-value entry key to value, adding it
// before the pad entry if it is absent.
func (o *Object) SetKeyValue(key string, value []byte) {
	v := o.Footer.Field(FMDKeyValue)
	if v == nil {
		o.Footer.Set(FMDKeyValue, thrift.ListOf(thrift.TypeStruct))
		v = o.Footer.Field(FMDKeyValue)
	}
	for _, it := range v.List.Items {
		if k, _ := it.Struct.Binary(KVKey); string(k) == key {
			it.Struct.Set(KVValue, thrift.Binary(value))
			return
		}
	}
	kv := thrift.StructValue(thrift.NewStruct(
		thrift.Field{ID: KVKey, Value: thrift.Binary([]byte(key))},
		thrift.Field{ID: KVValue, Value: thrift.Binary(value)},
	))
	v.List.Items = slices.Insert(v.List.Items, 0, kv)
}

// KeyValue returns the value of footer key-value entry key.
func (o *Object) KeyValue(key string) ([]byte, bool) {
	v := o.Footer.Field(FMDKeyValue)
	if v == nil || v.List == nil {
		return nil, false
	}
	for _, it := range v.List.Items {
		if k, _ := it.Struct.Binary(KVKey); string(k) == key {
			b, _ := it.Struct.Binary(KVValue)
			return b, true
		}
	}
	return nil, false
}

// Seal re-seals the object under dek, keeping the pad entry as it is.
func (o *Object) Seal(dek pme.DEK) ([]byte, error) { return o.seal(dek, false) }

// SealPadded re-seals the object under dek and sets its pad entry so that
// the object reaches its Padmé size again, as the writer does (Section
// 11.8). The footer must have exactly one pad entry.
func (o *Object) SealPadded(dek pme.DEK) ([]byte, error) { return o.seal(dek, true) }

func (o *Object) seal(dek pme.DEK, repad bool) ([]byte, error) {
	out := []byte("PARE")
	appendModule := func(plain []byte) error {
		var err error
		out, err = dek.Seal(out, plain)
		return err
	}
	type placed struct{ start, end, data, dict int64 }
	spans := make([][]placed, len(o.Chunks))
	for i, row := range o.Chunks {
		for _, c := range row {
			p := placed{start: int64(len(out)), data: -1, dict: -1}
			for k := range c.Pages {
				pg := &c.Pages[k]
				if k == c.DataPage {
					p.data = int64(len(out))
				}
				if k == c.DictPage {
					p.dict = int64(len(out))
				}
				hdr := pg.RawHeader
				if hdr == nil {
					hdr = pg.Header.Append(nil)
				}
				if err := appendModule(hdr); err != nil {
					return nil, err
				}
				if pg.NoBody {
					continue
				}
				if err := appendModule(pg.Body); err != nil {
					return nil, err
				}
			}
			p.end = int64(len(out))
			if p.data < 0 {
				p.data = p.start
			}
			spans[i] = append(spans[i], p)
		}
	}
	for _, m := range o.Trailing {
		if err := appendModule(m); err != nil {
			return nil, err
		}
	}
	dataLen := len(out)
	if o.RawFooter == nil {
		if err := o.fixLayout(func(i, j int) (int64, int64, int64, int64, bool) {
			if i >= len(spans) || j >= len(spans[i]) {
				return 0, 0, 0, 0, false
			}
			p := spans[i][j]
			return p.start, p.end, p.data, p.dict, true
		}); err != nil {
			return nil, err
		}
	}
	finish := func() ([]byte, error) {
		plain := o.RawFooter
		if plain == nil {
			plain = o.Footer.Append(nil)
		}
		res := append(bytes.Clone(out), o.Crypto...)
		res, err := dek.Seal(res, plain)
		if err != nil {
			return nil, err
		}
		return pme.AppendTrailer(res, len(res)-dataLen)
	}
	if !repad {
		return finish()
	}
	pad, err := o.padEntry()
	if err != nil {
		return nil, err
	}
	pad.Set(KVKey, thrift.Binary([]byte(padme.PadKey)))
	pad.Set(KVValue, thrift.Binary(nil))
	b, err := finish()
	if err != nil {
		return nil, err
	}
	target, err := padme.Target(uint64(len(b)))
	if err != nil {
		return nil, err
	}
	p := padme.Solve(target - uint64(len(b)))
	pad.Set(KVKey, thrift.Binary([]byte(p.Key())))
	pad.Set(KVValue, thrift.Binary(make([]byte, p.ValueLen)))
	if b, err = finish(); err != nil {
		return nil, err
	}
	if uint64(len(b)) != target {
		return nil, fmt.Errorf("hostile: padded to %d bytes, want %d", len(b), target)
	}
	return b, nil
}

func (o *Object) padEntry() (*thrift.Struct, error) {
	v := o.Footer.Field(FMDKeyValue)
	var pad *thrift.Struct
	if v != nil && v.List != nil {
		for _, it := range v.List.Items {
			if k, err := it.Struct.Binary(KVKey); err == nil && padme.IsReserved(string(k)) {
				if pad != nil {
					return nil, errors.New("hostile: more than one pad entry")
				}
				pad = it.Struct
			}
		}
	}
	if pad == nil {
		return nil, errors.New("hostile: no pad entry")
	}
	return pad, nil
}

// fixLayout sets the offsets and sizes of every column chunk and row group
// of the footer that at(i, j) places.
func (o *Object) fixLayout(at func(i, j int) (start, end, data, dict int64, ok bool)) error {
	rgs, err := o.RowGroups()
	if err != nil {
		return nil // a footer without row groups has nothing to fix
	}
	for i, rg := range rgs {
		cols, err := rg.List(RGColumns)
		if err != nil {
			continue
		}
		rgStart, rgLen := int64(-1), int64(0)
		for j, v := range cols.Items {
			start, end, data, dict, ok := at(i, j)
			if !ok || v.Struct == nil {
				continue
			}
			md, err := v.Struct.Struct(CCMetaData)
			if err != nil {
				continue
			}
			md.Set(CMDDataPageOffset, thrift.I64(data))
			if dict >= 0 {
				md.Set(CMDDictPageOffset, thrift.I64(dict))
			}
			md.Set(CMDTotalCompressed, thrift.I64(end-start))
			if rgStart < 0 {
				rgStart = start
			}
			rgLen += end - start
		}
		if rgStart >= 0 {
			rg.Set(RGFileOffset, thrift.I64(rgStart))
		}
		rg.Set(RGTotalCompressed, thrift.I64(rgLen))
	}
	return nil
}

// Modules returns the module spans of a sealed object's data region, for
// tests that check the layout.
func Modules(obj []byte) ([][2]int64, error) {
	flen, err := pme.ParseTrailer(obj[len(obj)-pme.TrailerSize:])
	if err != nil {
		return nil, err
	}
	dataEnd := int64(len(obj)) - pme.TrailerSize - int64(flen)
	var out [][2]int64
	for off := int64(4); off < dataEnd; {
		n := int64(binary.LittleEndian.Uint32(obj[off:]))
		out = append(out, [2]int64{off, off + 4 + n})
		off += 4 + n
	}
	return out, nil
}

// Unseal returns obj, sealed under dek, with every module's nonce and tag
// zeroed and its ciphertext replaced by its plaintext, in place: the layout
// (every offset and length) does not change. Reseal undoes it under any DEK.
// This is the form in which a fuzzer mutates the plaintext of an object.
func Unseal(obj []byte, dek pme.DEK) ([]byte, error) {
	out := bytes.Clone(obj)
	err := eachModule(out, func(body []byte) error {
		plain, err := dek.Open(nil, body)
		if err != nil {
			return err
		}
		clear(body)
		copy(body[pme.NonceSize:], plain)
		return nil
	})
	return out, err
}

// Reseal seals, in place, every module of an object in the form Unseal
// gives, under dek, and returns it. Where a length prefix does not fit the
// object, or the footer region does not parse, it stops: what follows stays
// as it is.
func Reseal(plain []byte, dek pme.DEK) []byte {
	out := bytes.Clone(plain)
	eachModule(out, func(body []byte) error {
		sealed, err := dek.Seal(nil, body[pme.NonceSize:len(body)-pme.TagSize])
		if err != nil {
			return err
		}
		copy(body, sealed[pme.LenSize:])
		return nil
	})
	return out
}

// eachModule calls f with the body of every module of obj: those of the
// data region, from offset 4, as their length prefixes chain, then the
// footer module. It stops at the first prefix that does not fit, or error.
func eachModule(obj []byte, f func(body []byte) error) error {
	if len(obj) < 4+pme.TrailerSize {
		return fmt.Errorf("hostile: %d bytes", len(obj))
	}
	flen := int64(binary.LittleEndian.Uint32(obj[len(obj)-pme.TrailerSize:]))
	dataEnd := int64(len(obj)) - pme.TrailerSize - flen
	if dataEnd < 4 {
		return fmt.Errorf("hostile: footer length %d", flen)
	}
	for off := int64(4); off < dataEnd; {
		body, _, err := pme.SplitModule(obj[off:dataEnd])
		if err != nil {
			return err
		}
		if err := f(body); err != nil {
			return err
		}
		off += pme.LenSize + int64(len(body))
	}
	_, n, err := pme.ParseFileCryptoMetaData(obj[dataEnd:])
	if err != nil {
		return err
	}
	body, _, err := pme.SplitModule(obj[dataEnd+int64(n) : int64(len(obj))-pme.TrailerSize])
	if err != nil {
		return err
	}
	return f(body)
}
