package seal

import (
	"github.com/sovm/sop-pme/internal/thrift"
	"github.com/sovm/sop-pme/padme"
	"github.com/sovm/sop-pme/pme"
)

// PadFits is padFits, for testing the limits without allocating a pad.
func PadFits(footerLen int, p padme.Pad) error { return padFits(footerLen, p) }

// StripTree removes from f's tree what pme.Footer.StripForReading removes
// from its view, and returns f's encoding: the same rules, on the other
// form of a footer, to compare with. It removes the key-value entries of
// padding and ARROW:schema (and key_value_metadata if none remains), every
// logicalType no decoder knows, the FileMetaData fields parquet.thrift does
// not define, and in every column chunk what addresses bytes outside its
// pages.
func StripTree(f *Footer) []byte {
	f.stripKeys(func(key string) bool { return padme.IsReserved(key) || key == pme.ArrowSchemaKey })
	f.DropUnknownLogicalTypes()
	const fmdMaxKnown = 9 // the largest field ID of FileMetaData
	fields := f.meta.Fields[:0]
	for _, fd := range f.meta.Fields {
		if fd.ID <= fmdMaxKnown {
			fields = append(fields, fd)
		}
	}
	f.meta.Fields = fields
	if rgs, err := f.rowGroups(); err == nil {
		for _, rg := range rgs {
			cols, err := rg.List(rgColumns)
			if err != nil {
				continue
			}
			for _, v := range cols.Items {
				if v.Struct == nil {
					continue
				}
				md, _ := v.Struct.Struct(ccMetaData)
				dropOutsideChunk(v.Struct, md)
			}
		}
	}
	return f.Append(nil)
}

// stripKeys removes the key-value entries of the tree whose key drop
// reports.
func (f *Footer) stripKeys(drop func(key string) bool) {
	v := f.meta.Field(fmdKeyValueMetadata)
	if v == nil || v.Type != thrift.TypeList {
		return
	}
	items := v.List.Items[:0]
	for _, it := range v.List.Items {
		if it.Struct != nil {
			if k, err := it.Struct.Binary(kvKey); err == nil && drop(string(k)) {
				continue
			}
		}
		items = append(items, it)
	}
	clear(v.List.Items[len(items):])
	v.List.Items = items
	if len(items) == 0 {
		f.meta.Delete(fmdKeyValueMetadata)
	}
}
