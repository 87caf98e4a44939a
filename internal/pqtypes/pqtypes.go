// Package pqtypes sets the Arrow types in which a Parquet file is read: the
// ones arrow-go's pqarrow derives from the Parquet schema, corrected where
// pqarrow departs from the Parquet specification and from the readers the
// project is checked against (pyarrow, DuckDB), and refined by the Arrow
// schema a writer stored in the footer (ARROW:schema) where, and only
// where, that schema is consistent with the Parquet one.
//
// The corrections (Parquet's LogicalTypes.md, "Backward compatibility"):
//
//   - An INT96 column, and a timestamp that only a legacy converted type
//     (TIMESTAMP_MILLIS, TIMESTAMP_MICROS) annotates, is a timestamp
//     without a time zone, as DuckDB reads them, not one in UTC. An INT96
//     column reads at microseconds, as DuckDB reads it (years ±290,000),
//     or in the unit of the stored Arrow schema (see int96.go).
//   - A GEOMETRY or GEOGRAPHY column is a GeoType over its binary, not a
//     plain binary: writing it again keeps the logical type.
//   - The element of a list that a repeated field makes (a repeated
//     primitive or group outside a LIST, or the repeated field of a LIST)
//     is not nullable, and is named after that field.
//   - A legacy two-level list whose repeated group is itself a LIST
//     (parquet-mr's "array" lists of lists) is a list of lists, not a list
//     of structs with one list field.
//
// The refinements accepted from ARROW:schema, which package arrowfb
// decodes within bounds: a time zone for a timestamp stored in UTC (or for
// an INT96 or legacy timestamp); large strings, binaries and lists for
// their 32-bit-offset forms; durations for INT64; decimal256 for a
// decimal of the same precision and scale; date64 for date32; strings for
// the bytes of JSON and ENUM columns; a dictionary encoding, with 32- or
// 64-bit indices, for strings and binaries; registered extension types
// over their storage; the fields' custom metadata (never a field ID). A
// stored schema whose fields do not match the Parquet schema's (names,
// count, nesting) is ignored as a whole; a stored type that is no accepted
// refinement leaves the derived type as it is. Nothing in it can change
// the nullability, the physical reading or the shape of a column, nor make
// a column that reads in its Parquet types fail to read.
package pqtypes

import (
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/sovm/sop-pme/internal/arrowfb"
)

// FieldIDKey is the field metadata key of the Parquet field ID.
const FieldIDKey = "PARQUET:field_id"

// Arrow's extension keys in field metadata.
const (
	extNameKey = "ARROW:extension:name"
	extMetaKey = "ARROW:extension:metadata"
)

// maxZoneLen bounds the time zone names accepted from ARROW:schema.
const maxZoneLen = 256

// errInconsistent: the stored schema does not describe the Parquet one.
var errInconsistent = errors.New("the stored Arrow schema does not match the Parquet schema")

// Apply corrects, in place, the Arrow types of m, a manifest pqarrow made
// of sc, and refines them by stored (nil for none). It returns the fields
// of the Arrow schema the file reads in, and whether stored was applied:
// false if it was nil or did not match sc. A pqarrow.FileReader whose
// Manifest is m then reads in these types, but for the extension types
// pqarrow cannot read (see Retype and Record, which restore them).
func Apply(sc *schema.Schema, m *pqarrow.SchemaManifest, stored *arrowfb.Schema) ([]arrow.Field, bool) {
	collapseAll(sc, m)
	a := applier{sc: sc}
	base := make([]target, len(m.Fields))
	for i := range m.Fields {
		base[i], _ = a.target(&m.Fields[i], nil, true)
	}
	targets, used := base, false
	if stored != nil && len(stored.Fields) == len(m.Fields) {
		refined := make([]target, len(m.Fields))
		var err error
		for i := range m.Fields {
			if refined[i], err = a.target(&m.Fields[i], &stored.Fields[i], true); err != nil {
				break
			}
		}
		if err == nil {
			targets, used = refined, true
		}
	}
	fields := make([]arrow.Field, len(m.Fields))
	for i := range m.Fields {
		set(&m.Fields[i], targets[i])
		fields[i] = targets[i].field
	}
	return fields, used
}

// target is the field a manifest node is to have, and its children's.
type target struct {
	field arrow.Field
	kids  []target
	int96 bool // an INT96 leaf, which pqarrow reads as int96Raw
}

func set(sf *pqarrow.SchemaField, t target) {
	for i := range sf.Children {
		set(&sf.Children[i], t.kids[i])
	}
	*sf.Field = t.field
	sf.Field.Type = readType(t.field.Type)
	if t.int96 {
		sf.Field.Type = newInt96Raw()
	}
}

type applier struct{ sc *schema.Schema }

// leafColumn returns the Parquet column of a leaf node, or nil.
func (a applier) leafColumn(sf *pqarrow.SchemaField) *schema.Column {
	if len(sf.Children) != 0 || sf.ColIndex < 0 || sf.ColIndex >= a.sc.NumColumns() {
		return nil
	}
	return a.sc.Column(sf.ColIndex)
}

// target computes the field of sf: corrected, then refined by st if not
// nil. named says whether st's name must match (a top-level or struct
// field; a list's element and a map's entries are named by the writer).
func (a applier) target(sf *pqarrow.SchemaField, st *arrowfb.Field, named bool) (target, error) {
	d := *sf.Field
	t := target{field: d}
	if st != nil && named && st.Name != d.Name {
		return t, fmt.Errorf("%w: field %q is %q", errInconsistent, d.Name, st.Name)
	}
	if ext, ok := d.Type.(arrow.ExtensionType); ok && len(sf.Children) > 0 {
		// A nested extension pqarrow made (a variant): left as it is.
		t.kids = keep(sf.Children)
		_ = ext
		return t, nil
	}
	if len(sf.Children) > 0 {
		return a.nested(sf, st, t)
	}
	col := a.leafColumn(sf)
	if col == nil {
		return t, nil
	}
	if st != nil && st.Kind >= arrowfb.KindList && (st.Kind <= arrowfb.KindStruct || st.Kind == arrowfb.KindFixedSizeList || st.Kind == arrowfb.KindMap || st.Kind == arrowfb.KindLargeList) {
		return t, fmt.Errorf("%w: %q is a leaf, stored as nested", errInconsistent, d.Name)
	}
	// Corrections by the Parquet schema.
	loose := false   // a timestamp whose zone the stored schema may set
	textual := false // bytes that Parquet says are UTF-8 text
	switch lt := col.LogicalType().(type) {
	case schema.JSONLogicalType, schema.EnumLogicalType:
		textual = true
	case schema.TimestampLogicalType:
		if lt.IsFromConvertedType() {
			if ts, ok := d.Type.(*arrow.TimestampType); ok {
				t.field.Type, loose = &arrow.TimestampType{Unit: ts.Unit}, true
			}
		}
	case schema.GeometryLogicalType, schema.GeographyLogicalType:
		if g := NewGeoType(lt, d.Type); g != nil && (d.Type.ID() == arrow.BINARY || d.Type.ID() == arrow.LARGE_BINARY) {
			t.field.Type = g
		}
	}
	if col.PhysicalType() == parquet.Types.Int96 {
		if _, ok := d.Type.(*arrow.TimestampType); ok {
			t.field.Type, loose, t.int96 = &arrow.TimestampType{Unit: arrow.Microsecond}, true, true
		}
	}
	if st == nil {
		return t, nil
	}
	t.field.Type = refineLeaf(t.field.Type, st, loose, textual, t.int96)
	t.field.Type = refineExtension(t.field.Type, st)
	t.field.Metadata = mergeMetadata(d.Metadata, st.Metadata, t.field.Type)
	return t, nil
}

// keep returns targets that leave nodes as they are.
func keep(sfs []pqarrow.SchemaField) []target {
	out := make([]target, len(sfs))
	for i := range sfs {
		out[i] = target{field: *sfs[i].Field, kids: keep(sfs[i].Children)}
	}
	return out
}

// nested computes the target of a struct, list or map node.
func (a applier) nested(sf *pqarrow.SchemaField, st *arrowfb.Field, t target) (target, error) {
	d := t.field
	var stKids []arrowfb.Field
	if st != nil {
		stKids = st.Children
		ok := false
		switch d.Type.ID() {
		case arrow.STRUCT:
			ok = st.Kind == arrowfb.KindStruct && len(stKids) == len(sf.Children)
		case arrow.LIST, arrow.LARGE_LIST, arrow.FIXED_SIZE_LIST:
			ok = (st.Kind == arrowfb.KindList || st.Kind == arrowfb.KindLargeList || st.Kind == arrowfb.KindFixedSizeList) && len(stKids) == 1
		case arrow.MAP:
			ok = st.Kind == arrowfb.KindMap && len(stKids) == 1 && len(stKids[0].Children) == 2 && len(sf.Children) == 1
		}
		if !ok {
			return t, fmt.Errorf("%w: %q is a %s, stored as kind %d", errInconsistent, d.Name, d.Type.ID(), st.Kind)
		}
	}
	t.kids = make([]target, len(sf.Children))
	for i := range sf.Children {
		var sk *arrowfb.Field
		if stKids != nil {
			sk = &stKids[i]
		}
		var err error
		if t.kids[i], err = a.target(&sf.Children[i], sk, d.Type.ID() == arrow.STRUCT); err != nil {
			return t, err
		}
	}
	switch typ := d.Type.(type) {
	case *arrow.StructType:
		fs := make([]arrow.Field, len(t.kids))
		for i, k := range t.kids {
			fs[i] = k.field
		}
		t.field.Type = arrow.StructOf(fs...)
	case *arrow.MapType:
		kv := &t.kids[0]
		kv.field.Nullable = false
		key, item := kv.kids[0].field, kv.kids[1].field
		kv.field.Type = arrow.StructOf(key, item)
		m := arrow.MapOfFields(key, item)
		m.KeysSorted = typ.KeysSorted
		if st != nil {
			if mt, ok := st.Type.(*arrow.MapType); ok {
				m.KeysSorted = mt.KeysSorted
			}
		}
		t.field.Type = m
	case arrow.ListLikeType:
		// The element as the child node has it (pqarrow makes the list
		// type's element nullable even where the child is not).
		elem := &t.kids[0].field
		// A stored large list refines a list. (A fixed-size list does not:
		// arrow-go fails a read whose lists are not all of the size, so a
		// stored schema could make a readable column unreadable.)
		kind := d.Type.ID()
		if st != nil && st.Kind == arrowfb.KindLargeList {
			kind = arrow.LARGE_LIST
		}
		switch kind {
		case arrow.LARGE_LIST:
			t.field.Type = arrow.LargeListOfField(*elem)
		case arrow.FIXED_SIZE_LIST:
			t.field.Type = arrow.FixedSizeListOfField(typ.(*arrow.FixedSizeListType).Len(), *elem)
		default:
			t.field.Type = arrow.ListOfField(*elem)
		}
	}
	if st != nil {
		t.field.Type = refineExtension(t.field.Type, st)
		t.field.Metadata = mergeMetadata(d.Metadata, st.Metadata, t.field.Type)
	}
	return t, nil
}

// refineLeaf returns the type of a leaf refined by the stored field st, or
// cur if st refines nothing that it may. loose says that a timestamp's
// zone is not set by Parquet (INT96, legacy converted types); textual, that
// the bytes are UTF-8 text (JSON, ENUM), which pqarrow reads as binary.
func refineLeaf(cur arrow.DataType, st *arrowfb.Field, loose, textual, int96 bool) arrow.DataType {
	out := cur
	switch s := st.Type.(type) {
	case *arrow.StringType:
		if cur.ID() == arrow.BINARY && textual {
			out = s
		}
	case *arrow.TimestampType:
		switch c, ok := cur.(*arrow.TimestampType); {
		case !ok || !validZone(s.TimeZone):
		case int96: // the unit and zone the producer wrote in
			out = s
		case c.Unit == s.Unit && s.TimeZone != "" && (c.TimeZone == "UTC" || loose && c.TimeZone == ""):
			out = s
		}
	case *arrow.LargeStringType:
		if cur.ID() == arrow.STRING || cur.ID() == arrow.BINARY && textual {
			out = s
		}
	case *arrow.LargeBinaryType:
		if cur.ID() == arrow.BINARY {
			out = s
		}
	case *arrow.DurationType:
		if cur.ID() == arrow.INT64 {
			out = s
		}
	case *arrow.Decimal256Type:
		if c, ok := cur.(*arrow.Decimal128Type); ok && c.Precision == s.Precision && c.Scale == s.Scale {
			out = s
		}
	case *arrow.Date64Type:
		if cur.ID() == arrow.DATE32 {
			out = s
		}
	}
	// arrow-go's dictionary builder truncates indices that do not fit a
	// narrower index type: only 32- and 64-bit indices are taken.
	if st.Dictionary != nil && (out.ID() == arrow.STRING || out.ID() == arrow.BINARY) && arrow.TypeEqual(st.Type, out) &&
		(st.Dictionary.IndexType.ID() == arrow.INT32 || st.Dictionary.IndexType.ID() == arrow.INT64) {
		out = &arrow.DictionaryType{IndexType: st.Dictionary.IndexType, ValueType: out, Ordered: st.Dictionary.Ordered}
	}
	return out
}

// validZone accepts a time zone name or offset of printable characters.
func validZone(z string) bool {
	return len(z) <= maxZoneLen && !strings.ContainsFunc(z, func(r rune) bool { return !unicode.IsPrint(r) })
}

// refineExtension wraps cur in the extension type st names, if that type
// is registered (arrow.RegisterExtensionType) and takes cur as its
// storage. A GeoType, which the Parquet schema sets, stays.
func refineExtension(cur arrow.DataType, st *arrowfb.Field) (out arrow.DataType) {
	name, ok := st.Metadata.GetValue(extNameKey)
	if !ok {
		return cur
	}
	if _, geo := cur.(*GeoType); geo {
		return cur
	}
	ext := arrow.GetExtensionType(name)
	if ext == nil {
		return cur
	}
	meta, _ := st.Metadata.GetValue(extMetaKey)
	defer func() {
		if recover() != nil { // a registered type that cannot take this metadata
			out = cur
		}
	}()
	t, err := ext.Deserialize(cur, meta)
	if err != nil || t == nil || !arrow.TypeEqual(t.StorageType(), cur) {
		return cur
	}
	return t
}

// mergeMetadata returns the derived field metadata with the stored one's
// other keys: never a field ID, and no extension keys once typ is that
// extension.
func mergeMetadata(derived, stored arrow.Metadata, typ arrow.DataType) arrow.Metadata {
	if stored.Len() == 0 {
		return derived
	}
	_, isExt := typ.(arrow.ExtensionType)
	keys, values := append([]string(nil), derived.Keys()...), append([]string(nil), derived.Values()...)
	for i, k := range stored.Keys() {
		if k == FieldIDKey || derived.FindKey(k) >= 0 || isExt && (k == extNameKey || k == extMetaKey) {
			continue
		}
		keys, values = append(keys, k), append(values, stored.Values()[i])
	}
	return arrow.NewMetadata(keys, values)
}
