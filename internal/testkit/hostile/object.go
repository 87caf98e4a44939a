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
	"fmt"
	"slices"

	"github.com/sovm/sop-pme/internal/thrift"
	"github.com/sovm/sop-pme/pme"
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
