package seal

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/sovm/sop-pme/internal/thrift"
	"github.com/sovm/sop-pme/padme"
	"github.com/sovm/sop-pme/pme"
)

// A Footer is a FileMetaData as an editable tree: that of a plaintext
// Parquet file (ReadPlainFooter), or that of the object a Sealer makes
// (Sealer.Close), which the writer gives field IDs (SetFieldIDs), its
// metadata and the padding entry (AppendKeyValue, SetPad, Section 11.8),
// and seals (Seal). What a reader makes of it is View's: pme's read-only
// footer, decoded from its encoding under the reader's limits.
type Footer struct {
	meta *thrift.Struct
}

// DecodeFooter decodes the plaintext FileMetaData plain (an object's
// footer, opened with its DEK) as an editable Footer, under the limits
// pme.ParseFooter applies. The Footer does not keep plain.
func DecodeFooter(plain []byte) (*Footer, error) {
	meta, err := thrift.DecodeExact(bytes.Clone(plain), footerLimits(len(plain)))
	if err != nil {
		return nil, fmt.Errorf("%w: footer FileMetaData: %w", pme.ErrFormat, err)
	}
	return &Footer{meta: meta}, nil
}

// Len returns the length in bytes of the encoded FileMetaData.
func (f *Footer) Len() int { return f.meta.EncodedLen() }

// Append appends the Thrift compact encoding of the FileMetaData to dst.
func (f *Footer) Append(dst []byte) []byte { return f.meta.Append(dst) }

// View decodes the footer's encoding as the reader decodes a footer it
// opens (pme.ParseFooter), under the same limits.
func (f *Footer) View() (*pme.Footer, error) { return pme.ParseFooter(f.Append(nil)) }

// Fields returns the named fields of the footer's schema, with their field
// IDs, as View's Fields does, under the same bounds.
func (f *Footer) Fields() ([]pme.Field, error) {
	v, err := f.View()
	if err != nil {
		return nil, err
	}
	return v.Fields()
}

// Seal encodes the footer and seals it as one module under dek with a fresh
// nonce: the encrypted footer of Section 11.4. A footer sealed again (after
// padding) gets a fresh nonce, like every module.
func (f *Footer) Seal(dek pme.DEK) ([]byte, error) {
	plain := f.Append(nil)
	defer clear(plain)
	return dek.Seal(nil, plain)
}

// SetPad sets the footer's one reserved padding entry (Section 11.8) to key
// p.Key() and p.ValueLen zero bytes, always writing the value field. The
// footer must hold exactly one key-value entry whose key starts with
// padme.PadKey. A pad longer than pme.MaxPadValue, or one that would make the
// footer longer than a module holds, is refused with ErrPadding (and
// pme.ErrTooLarge) before anything is allocated for it.
func (f *Footer) SetPad(p padme.Pad) error {
	if err := padFits(f.Len(), p); err != nil {
		return err
	}
	e, err := f.padEntry()
	if err != nil {
		return err
	}
	e.Set(kvKey, thrift.Binary([]byte(p.Key())))
	e.Set(kvValue, thrift.Binary(make([]byte, p.ValueLen)))
	return nil
}

// padFits checks, in closed form, that pad p fits a footer whose encoding
// is footerLen bytes before it is set.
func padFits(footerLen int, p padme.Pad) error {
	if p.ValueLen > pme.MaxPadValue {
		return fmt.Errorf("%w: %w: a pad value of %d bytes; a Thrift binary holds at most %d", ErrPadding, pme.ErrTooLarge, p.ValueLen, pme.MaxPadValue)
	}
	if uint64(footerLen)+p.Growth() > pme.MaxPlaintext {
		return fmt.Errorf("%w: %w: a pad of %d bytes does not fit a footer module", ErrPadding, pme.ErrTooLarge, p.ValueLen)
	}
	return nil
}

func (f *Footer) padEntry() (*thrift.Struct, error) {
	v := f.meta.Field(fmdKeyValueMetadata)
	var entry *thrift.Struct
	if v != nil && v.Type == thrift.TypeList && v.List.Elem == thrift.TypeStruct {
		for _, it := range v.List.Items {
			k, err := it.Struct.Binary(kvKey)
			if err != nil || !padme.IsReserved(string(k)) {
				continue
			}
			if entry != nil {
				return nil, fmt.Errorf("%w: more than one %s entry", ErrLayout, padme.PadKey)
			}
			entry = it.Struct
		}
	}
	if entry == nil {
		return nil, fmt.Errorf("%w: no %s entry", ErrLayout, padme.PadKey)
	}
	return entry, nil
}

// AppendKeyValue appends a key-value entry to the footer's metadata. The
// value is always written, even when empty (Section 11.8 relies on that
// for the padding entry).
func (f *Footer) AppendKeyValue(key string, value []byte) {
	kv := thrift.NewStruct(
		thrift.Field{ID: kvKey, Value: thrift.Binary([]byte(key))},
		thrift.Field{ID: kvValue, Value: thrift.Binary(value)},
	)
	v := f.meta.Field(fmdKeyValueMetadata)
	if v == nil || v.Type != thrift.TypeList {
		f.meta.Set(fmdKeyValueMetadata, thrift.ListOf(thrift.TypeStruct, thrift.StructValue(kv)))
		return
	}
	v.List.Items = append(v.List.Items, thrift.StructValue(kv))
}

// schemaElements returns the elements of the tree's FileMetaData.schema.
func (f *Footer) schemaElements() ([]thrift.Value, error) {
	v := f.meta.Field(fmdSchema)
	if v == nil || v.Type != thrift.TypeList || v.List.Elem != thrift.TypeStruct || len(v.List.Items) == 0 {
		return nil, fmt.Errorf("%w: FileMetaData.schema missing or malformed", pme.ErrFormat)
	}
	return v.List.Items, nil
}

// AppendSchema appends to dst the Thrift compact encoding of a FileMetaData
// that holds the footer's version and schema, no rows and no row groups:
// what a Parquet schema decoder needs, and nothing it would have to trust
// beyond that. If tag is true, schema element i (0 is the root) carries
// field_id i in place of its own, so that the fields a decoder derives from
// the schema can be traced back to the elements they come from. Call Fields
// first: it bounds the schema a decoder is given.
func (f *Footer) AppendSchema(dst []byte, tag bool) ([]byte, error) {
	elems, err := f.schemaElements()
	if err != nil {
		return nil, err
	}
	elems = withoutUnknownLogical(elems)
	version := thrift.I32(1)
	if v := f.meta.Field(fmdVersion); v != nil && v.Type == thrift.TypeI32 {
		version = *v
	}
	if tag {
		tagged := make([]thrift.Value, len(elems))
		for i, e := range elems {
			c := &thrift.Struct{Fields: slices.Clone(e.Struct.Fields)}
			c.Set(seFieldID, thrift.I32(int32(i)))
			tagged[i] = thrift.StructValue(c)
		}
		elems = tagged
	}
	md := thrift.NewStruct(
		thrift.Field{ID: fmdVersion, Value: version},
		thrift.Field{ID: fmdSchema, Value: thrift.ListOf(thrift.TypeStruct, elems...)},
		thrift.Field{ID: fmdNumRows, Value: thrift.I64(0)},
		thrift.Field{ID: fmdRowGroups, Value: thrift.ListOf(thrift.TypeStruct)},
	)
	return md.Append(dst), nil
}

// SetFieldIDs sets the field_id of schema elements (Section 11.2): ids maps
// the index of an element in FileMetaData.schema (0 is the root) to its ID.
// An index outside the schema is refused with pme.ErrFormat, before any
// element is changed.
func (f *Footer) SetFieldIDs(ids map[int]int32) error {
	elems, err := f.schemaElements()
	if err != nil {
		return err
	}
	for i := range ids {
		if i < 0 || i >= len(elems) {
			return fmt.Errorf("%w: no schema element %d of %d", pme.ErrFormat, i, len(elems))
		}
	}
	for i, id := range ids {
		elems[i].Struct.Set(seFieldID, thrift.I32(id))
	}
	return nil
}

// rowGroups returns the row groups of the tree.
func (f *Footer) rowGroups() ([]*thrift.Struct, error) {
	v := f.meta.Field(fmdRowGroups)
	if v == nil {
		return nil, fmt.Errorf("%w: FileMetaData has no row_groups", pme.ErrFormat)
	}
	if v.Type != thrift.TypeList || v.List.Elem != thrift.TypeStruct {
		return nil, fmt.Errorf("%w: FileMetaData.row_groups is not a list of structs", pme.ErrFormat)
	}
	out := make([]*thrift.Struct, len(v.List.Items))
	for i, it := range v.List.Items {
		out[i] = it.Struct
	}
	return out, nil
}

// plainSpan returns the span of a column chunk as its ColumnMetaData states
// it, and its dictionary_page_offset (0 if none).
func plainSpan(md *thrift.Struct) (pme.Span, int64, error) {
	data, err := md.I64(cmdDataPageOffset)
	if err != nil {
		return pme.Span{}, 0, err
	}
	size, err := md.I64(cmdTotalCompressed)
	if err != nil {
		return pme.Span{}, 0, err
	}
	start, dict := data, int64(0)
	if v := md.Field(cmdDictPageOffset); v != nil {
		if v.Type != thrift.TypeI64 {
			return pme.Span{}, 0, fmt.Errorf("dictionary_page_offset is %v", v.Type)
		}
		if v.Int > 0 {
			dict = v.Int
			start = min(start, dict)
		}
	}
	if start < 4 || size <= 0 || start > (1<<62)-size {
		return pme.Span{}, 0, fmt.Errorf("column chunk [%d, +%d) is out of range", start, size)
	}
	return pme.Span{Off: start, Len: size}, dict, nil
}

// dropOutsideChunk deletes from a ColumnChunk, and its ColumnMetaData if md
// is not nil, every field that addresses bytes outside the chunk's pages:
// the page indexes, the index page, the bloom filter, and the column crypto
// metadata.
func dropOutsideChunk(cc, md *thrift.Struct) {
	for id := int16(ccOffsetIndexOffset); id <= ccEncryptedColumnMD; id++ {
		cc.Delete(id)
	}
	if md != nil {
		md.Delete(cmdIndexPageOffset)
		md.Delete(cmdBloomFilterOffset)
		md.Delete(cmdBloomFilterLength)
	}
}
