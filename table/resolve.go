package table

import (
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/sovm/sop-pme/writer"
)

// Resolve returns the field IDs of columns in schema, in order. Each column is
// a field's name, a dotted path for a nested field ("customer.address.city";
// a list's element and a map's key and value are named as their Arrow fields
// are), or, if no field has that name, a field ID in decimal. Columns are
// resolved to IDs because an ID is what names a column across the objects of
// a table (SOP-PME-1 Section 11.2): a name may change, an ID does not.
//
// A column that names no field, or an ID that no field has, is a *ColumnError
// matching ErrColumn.
func Resolve(schema *arrow.Schema, columns ...string) ([]int32, error) {
	byPath := map[string]int32{}
	known := map[int32]bool{}
	var walk func(prefix string, f arrow.Field)
	walk = func(prefix string, f arrow.Field) {
		path := f.Name
		if prefix != "" {
			path = prefix + "." + f.Name
		}
		if id, ok := FieldID(f); ok {
			if _, dup := byPath[path]; !dup {
				byPath[path] = id
			}
			known[id] = true
		}
		for _, c := range Children(f.Type) {
			walk(path, c)
		}
	}
	if schema != nil {
		for _, f := range schema.Fields() {
			walk("", f)
		}
	}
	ids := make([]int32, 0, len(columns))
	for _, c := range columns {
		if id, ok := byPath[c]; ok {
			ids = append(ids, id)
			continue
		}
		if n, err := strconv.ParseInt(c, 10, 32); err == nil && known[int32(n)] {
			ids = append(ids, int32(n))
			continue
		}
		return nil, &ColumnError{Column: c, Err: fmt.Errorf("%w: no field of that name, and no field with that ID", ErrColumn)}
	}
	return ids, nil
}

// Children returns the fields nested in a type: a struct's fields, a list's
// element, a map's key and value, an extension type's storage fields. Each
// carries its own field ID (Section 11.2); the synthetic groups Parquet puts
// between a list or map and its elements have none, and are not returned.
func Children(dt arrow.DataType) []arrow.Field {
	switch t := dt.(type) {
	case *arrow.MapType:
		return []arrow.Field{t.KeyField(), t.ItemField()}
	case arrow.ListLikeType:
		return []arrow.Field{t.ElemField()}
	case *arrow.StructType:
		return t.Fields()
	case arrow.ExtensionType:
		return Children(t.StorageType())
	}
	return nil
}

// FieldID returns the Parquet field ID a field carries in its metadata
// (writer.FieldIDKey), and whether it has one: a decimal int32 of at least
// 0 (pqarrow reports -1 for a column without one).
func FieldID(f arrow.Field) (int32, bool) {
	v, ok := f.Metadata.GetValue(writer.FieldIDKey)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < 0 {
		return 0, false
	}
	return int32(n), true
}
