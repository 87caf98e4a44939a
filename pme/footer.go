package pme

import (
	"fmt"
	"math"
	"slices"

	"github.com/sovm/sop-pme/internal/thrift"
	"github.com/sovm/sop-pme/padme"
)

// A Footer is the plaintext FileMetaData of an object, decoded, read-only:
// the reader gets one from OpenFooter, the writer one from ParseFooter for
// the footer it is about to seal.
//
// It is decoded into a compact form (a thrift.View: 16 bytes per value, at
// most one value per two footer bytes beyond the first 64 Ki), so that a
// footer costs a small multiple of its size however it is crafted.
type Footer struct {
	view  *thrift.View
	strip bool // StripForReading applies
}

// root returns the footer's FileMetaData.
func (f *Footer) root() thrift.Node { return f.view.Root() }

// size returns the length in bytes of the FileMetaData as opened: what the
// limits on its parts are relative to.
func (f *Footer) size() int { return f.view.Len() }

// Len returns the length in bytes of the encoded FileMetaData.
func (f *Footer) Len() int {
	if f.strip {
		return len(f.Append(nil))
	}
	return f.view.Len()
}

// Append appends the Thrift compact encoding of the FileMetaData to dst.
func (f *Footer) Append(dst []byte) []byte {
	if f.strip {
		// What is stripped is never longer than what was opened.
		return thrift.AppendView(slices.Grow(dst, f.view.Len()), f.view.Root(), f.dropForReading())
	}
	return append(dst, f.view.Bytes()...)
}

// OpenFooter authenticates and decrypts a footer module body under dek and
// decodes the FileMetaData strictly (non-canonical Thrift is refused), into
// at most 64 Ki values plus one per two bytes: real footers take 2.4 to 8
// bytes per value (arrow-go's and DuckDB's, measured), and a footer of
// empty structs one. The refusal, before anything is kept, wraps ErrFormat
// and thrift.ErrTooLarge.
func OpenFooter(dek DEK, body []byte) (*Footer, error) {
	plain, err := dek.Open(nil, body)
	if err != nil {
		return nil, fmt.Errorf("footer: %w", err)
	}
	return ParseFooter(plain)
}

// ParseFooter decodes a plaintext FileMetaData as OpenFooter does, under
// the same limits: what a writer runs on the footer it is about to seal, so
// that it never publishes a footer its reader refuses. The Footer keeps
// plain, which must not change while it is used.
func ParseFooter(plain []byte) (*Footer, error) {
	view, err := thrift.DecodeView(plain, footerLimits(len(plain)))
	if err != nil {
		return nil, fmt.Errorf("%w: footer FileMetaData: %w", ErrFormat, err)
	}
	return &Footer{view: view}, nil
}

// DefaultMaxFooterRegion is the least default limit on an object's footer
// region (FileCryptoMetaData plus the footer module), in bytes: the reader
// refuses a larger region unless told otherwise, and the writer refuses to
// publish one. Padding lives in the footer (Section 11.8): Padmé pads an
// object by less than 1/32 of its size from 32 KiB on, so the limit for an
// object of a given size is MaxFooterRegion.
const DefaultMaxFooterRegion = 256 << 20

// MaxFooterRegion returns the default limit on the footer region of an
// object of size bytes: DefaultMaxFooterRegion or 1/16 of the object,
// whichever is larger.
func MaxFooterRegion(size int64) int64 { return max(DefaultMaxFooterRegion, size/16) }

// A Span is a byte range [Off, Off+Len) of a file.
type Span struct {
	Off, Len int64
}

// End returns Off + Len.
func (s Span) End() int64 { return s.Off + s.Len }

// ColumnChunks returns the spans of every column chunk, by row group, as the
// footer states them. Each span covers the chunk's modules, from the length
// prefix of its first page's header module.
func (f *Footer) ColumnChunks() ([][]Span, error) {
	rgs, err := f.root().List(fmdRowGroups)
	if err != nil || rgs.Elem() != thrift.TypeStruct {
		return nil, fmt.Errorf("%w: FileMetaData.row_groups missing or not a list of structs", ErrFormat)
	}
	out := make([][]Span, 0, rgs.Len())
	i := 0
	for rg := range rgs.Children() {
		cols, err := rg.List(rgColumns)
		if err != nil || cols.Elem() != thrift.TypeStruct {
			return nil, fmt.Errorf("%w: row group %d: columns missing or not a list of structs", ErrFormat, i)
		}
		row := make([]Span, 0, cols.Len())
		j := 0
		for cc := range cols.Children() {
			if _, ok := cc.Field(ccFilePath); ok {
				return nil, fmt.Errorf("%w: row group %d column %d: external column chunk", ErrFormat, i, j)
			}
			md, err := cc.Struct(ccMetaData)
			if err != nil {
				return nil, fmt.Errorf("%w: row group %d column %d: %w", ErrFormat, i, j, err)
			}
			span, err := chunkSpan(md)
			if err != nil {
				return nil, fmt.Errorf("%w: row group %d column %d: %w", ErrFormat, i, j, err)
			}
			row = append(row, span)
			j++
		}
		out = append(out, row)
		i++
	}
	return out, nil
}

// chunkSpan returns the span of a column chunk as its ColumnMetaData md
// states it: from the dictionary page, if any, for total_compressed_size
// bytes.
func chunkSpan(md thrift.Node) (Span, error) {
	data, err := md.I64(cmdDataPageOffset)
	if err != nil {
		return Span{}, err
	}
	size, err := md.I64(cmdTotalCompressed)
	if err != nil {
		return Span{}, err
	}
	start := data
	if v, ok := md.Field(cmdDictPageOffset); ok {
		if v.Type() != thrift.TypeI64 {
			return Span{}, fmt.Errorf("dictionary_page_offset is %v", v.Type())
		}
		if v.Int() > 0 {
			start = min(start, v.Int())
		}
	}
	if start < 4 || size <= 0 || start > (1<<62)-size {
		return Span{}, fmt.Errorf("column chunk [%d, +%d) is out of range", start, size)
	}
	return Span{Off: start, Len: size}, nil
}

// KeyValue is one footer key-value metadata entry.
type KeyValue struct {
	Key   string
	Value []byte // nil if the optional value field is absent
}

// MaxKeyValues returns how many key-value entries a footer of footerLen
// bytes may have: 16,384, plus one per 128 bytes. An entry takes three
// bytes and costs a reader (this package, arrow-go and an Arrow schema's
// metadata) about 120 bytes.
func MaxKeyValues(footerLen int) int { return 1<<14 + footerLen/128 }

// KeyValues returns the footer's key-value metadata, including reserved
// padding entries unless StripForReading removed them. A footer of more
// than MaxKeyValues entries is refused with ErrFormat.
func (f *Footer) KeyValues() ([]KeyValue, error) {
	v, ok := f.root().Field(fmdKeyValueMetadata)
	if !ok {
		return nil, nil
	}
	if v.Type() != thrift.TypeList || v.Elem() != thrift.TypeStruct {
		return nil, fmt.Errorf("%w: key_value_metadata is not a list of structs", ErrFormat)
	}
	if n := f.size(); v.Len() > MaxKeyValues(n) {
		return nil, fmt.Errorf("%w: %d key-value entries in a footer of %d bytes, at most %d", ErrFormat, v.Len(), n, MaxKeyValues(n))
	}
	out := make([]KeyValue, 0, v.Len())
	for it := range v.Children() {
		k, err := it.Binary(kvKey)
		if err != nil {
			return nil, fmt.Errorf("%w: KeyValue.key: %w", ErrFormat, err)
		}
		if f.strip && stripped(string(k)) {
			continue
		}
		kv := KeyValue{Key: string(k)}
		if val, ok := it.Field(kvValue); ok {
			if val.Type() != thrift.TypeBinary {
				return nil, fmt.Errorf("%w: KeyValue.value is %v", ErrFormat, val.Type())
			}
			kv.Value = val.Bin()
			if kv.Value == nil {
				kv.Value = []byte{}
			}
		}
		out = append(out, kv)
	}
	return out, nil
}

// MaxPadValue is the longest padding value, in bytes, a footer holds: the
// value is a Thrift binary, whose length is a non-negative int32. Padmé pads
// an object by less than 2^31 bytes below 256 GiB (2^38 bytes); from there
// a pad may need up to 4 GiB, which no footer holds (Section 11.8).
const MaxPadValue = math.MaxInt32

// ArrowSchemaKey is the footer key-value entry in which Arrow writers store
// the serialized Arrow schema (an Arrow IPC message, base64).
const ArrowSchemaKey = "ARROW:schema"

// stripped reports whether StripForReading removes the key-value entry key.
func stripped(key string) bool { return padme.IsReserved(key) || key == ArrowSchemaKey }

// StripForReading prepares a decrypted footer for a Parquet decoder: it
// removes every key-value entry whose key starts with padme.PadKey, which
// readers must ignore and never show (Section 11.8); the ARROW:schema entry,
// an Arrow IPC message written by the producer, which a reader must not hand
// to an IPC decoder (its lengths are untrusted: a SOP-PME-1 reader derives
// the Arrow schema from the Parquet schema); and every reference to bytes
// outside the column chunks (page indexes, bloom filters, column crypto
// metadata), which a SOP-PME-1 reader never reads; and every schema
// element's logicalType that names no type a decoder knows, which readers
// must ignore, and read the column by its converted or physical type
// (parquet-format, LogicalTypes.md; arrow-go refuses the whole schema
// instead). KeyValues, Append and Len reflect the removal.
func (f *Footer) StripForReading() { f.strip = true }

// dropForReading returns what StripForReading removes from the View, for
// thrift.AppendView: the entries stripped (and key_value_metadata if none
// remains); in every ColumnChunk and its ColumnMetaData, the fields that
// address bytes outside the chunk's pages (the page indexes, the index
// page, the bloom filter, the column crypto metadata); the logicalType of
// every schema element that holds no member arrow-go knows; and the
// FileMetaData fields parquet.thrift does not define, which no decoder
// reads.
func (f *Footer) dropForReading() func(path []thrift.Node) bool {
	kvLeft := false
	if kvs, ok := f.view.Root().Field(fmdKeyValueMetadata); ok {
		for it := range kvs.Children() {
			if k, err := it.Binary(kvKey); err != nil || !stripped(string(k)) {
				kvLeft = true
			}
		}
	}
	return func(path []thrift.Node) bool {
		c := path[len(path)-1]
		switch len(path) {
		case 2: // a FileMetaData field
			return c.ID() == fmdKeyValueMetadata && c.Type() == thrift.TypeList && !kvLeft || c.ID() > fmdMaxKnown
		case 4: // a SchemaElement field
			return unknownLogicalAt(path)
		case 3: // a key_value_metadata entry
			if path[1].ID() == fmdKeyValueMetadata {
				k, err := c.Binary(kvKey)
				return err == nil && stripped(string(k))
			}
		case 6: // a ColumnChunk field
			if path[1].ID() == fmdRowGroups && path[3].ID() == rgColumns {
				return c.ID() >= ccOffsetIndexOffset && c.ID() <= ccEncryptedColumnMD
			}
		case 7: // a ColumnMetaData field
			if path[1].ID() == fmdRowGroups && path[3].ID() == rgColumns && path[5].ID() == ccMetaData {
				switch c.ID() {
				case cmdIndexPageOffset, cmdBloomFilterOffset, cmdBloomFilterLength:
					return true
				}
			}
		}
		return false
	}
}
