package pqtypes

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// nativeExtension reports whether pqarrow reads a leaf of extension type
// ext itself: it converts binary-like storage through the extension, and
// fails on others (an extension over an integer). Apply leaves the others'
// storage in the manifest, and Record wraps the arrays it reads.
func nativeExtension(ext arrow.ExtensionType) bool {
	switch ext.StorageType().ID() {
	case arrow.BINARY, arrow.LARGE_BINARY, arrow.FIXED_SIZE_BINARY:
		return true
	}
	return false
}

// readType returns the type pqarrow is to read a target type in: the
// target, with every extension type that pqarrow does not read natively
// replaced by its storage type.
func readType(t arrow.DataType) arrow.DataType {
	switch t := t.(type) {
	case arrow.ExtensionType:
		if nativeExtension(t) {
			return t
		}
		return readType(t.StorageType())
	case *arrow.StructType:
		fs := make([]arrow.Field, t.NumFields())
		for i, f := range t.Fields() {
			f.Type = readType(f.Type)
			fs[i] = f
		}
		return arrow.StructOf(fs...)
	case *arrow.MapType:
		k, v := t.KeyField(), t.ItemField()
		k.Type, v.Type = readType(k.Type), readType(v.Type)
		m := arrow.MapOfFields(k, v)
		m.KeysSorted = t.KeysSorted
		return m
	case *arrow.ListType:
		e := t.ElemField()
		e.Type = readType(e.Type)
		return arrow.ListOfField(e)
	case *arrow.LargeListType:
		e := t.ElemField()
		e.Type = readType(e.Type)
		return arrow.LargeListOfField(e)
	case *arrow.FixedSizeListType:
		e := t.ElemField()
		e.Type = readType(e.Type)
		return arrow.FixedSizeListOfField(t.Len(), e)
	}
	return t
}

// Retype returns the type of a column read as got (a field of the
// manifest, or a projection of one: a struct with fewer fields) in the
// target types of want: the extension types pqarrow read as their storage
// restored. Fields are matched by name.
func Retype(want, got arrow.DataType) arrow.DataType {
	if arrow.TypeEqual(want, got) {
		return want
	}
	switch w := want.(type) {
	case arrow.ExtensionType:
		if arrow.TypeEqual(w.StorageType(), got) {
			return w
		}
		return got
	case *arrow.StructType:
		g, ok := got.(*arrow.StructType)
		if !ok {
			return got
		}
		fs := make([]arrow.Field, g.NumFields())
		for i, f := range g.Fields() {
			if wf, ok := w.FieldByName(f.Name); ok {
				f.Type = Retype(wf.Type, f.Type)
			}
			fs[i] = f
		}
		return arrow.StructOf(fs...)
	case *arrow.MapType:
		g, ok := got.(*arrow.MapType)
		if !ok {
			return got
		}
		k, v := g.KeyField(), g.ItemField()
		k.Type, v.Type = Retype(w.KeyType(), k.Type), Retype(w.ItemType(), v.Type)
		m := arrow.MapOfFields(k, v)
		m.KeysSorted = g.KeysSorted
		return m
	case arrow.ListLikeType:
		g, ok := got.(arrow.ListLikeType)
		if !ok || g.ID() != w.ID() {
			return got
		}
		e := g.ElemField()
		e.Type = Retype(w.Elem(), e.Type)
		switch g := g.(type) {
		case *arrow.ListType:
			return arrow.ListOfField(e)
		case *arrow.LargeListType:
			return arrow.LargeListOfField(e)
		case *arrow.FixedSizeListType:
			return arrow.FixedSizeListOfField(g.Len(), e)
		}
	}
	return got
}

// RetypeData returns data (of a type Retype took as got) in type t, which
// Retype returned: the same buffers, the types of t. The result is a new
// reference.
func RetypeData(t arrow.DataType, data arrow.ArrayData) arrow.ArrayData {
	if arrow.TypeEqual(t, data.DataType()) {
		data.Retain()
		return data
	}
	var children []arrow.ArrayData
	storage := t
	if ext, ok := t.(arrow.ExtensionType); ok {
		storage = ext.StorageType()
	}
	switch s := storage.(type) {
	case *arrow.StructType:
		for i, c := range data.Children() {
			children = append(children, RetypeData(s.Field(i).Type, c))
		}
	case *arrow.MapType:
		children = []arrow.ArrayData{RetypeData(s.Elem(), data.Children()[0])}
	case arrow.ListLikeType:
		children = []arrow.ArrayData{RetypeData(s.Elem(), data.Children()[0])}
	default:
		children = data.Children()
		for _, c := range children {
			c.Retain()
		}
	}
	out := array.NewData(t, data.Len(), data.Buffers(), children, data.NullN(), data.Offset())
	for _, c := range children {
		c.Release()
	}
	return out
}

// Record returns rec with its columns in the types of schema (from
// Retype), or rec itself, retained, if they are already.
func Record(schema *arrow.Schema, rec arrow.RecordBatch) arrow.RecordBatch {
	if schema.Equal(rec.Schema()) {
		rec.Retain()
		return rec
	}
	cols := make([]arrow.Array, rec.NumCols())
	for i := range cols {
		d := RetypeData(schema.Field(i).Type, rec.Column(i).Data())
		cols[i] = array.MakeFromData(d)
		d.Release()
	}
	out := array.NewRecordBatch(schema, cols, rec.NumRows())
	for _, c := range cols {
		c.Release()
	}
	return out
}
