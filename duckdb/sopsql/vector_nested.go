package sopsql

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/duckdb/duckdb-go/v2/mapping"
)

// The writers of LIST, MAP and STRUCT vectors. A LIST vector is one
// duckdb_list_entry {uint64 offset, length} per row and a child vector of
// the elements; the rows of a chunk have their elements in the child from
// 0 on, reserved (duckdb_list_vector_reserve, which may move the child's
// memory: its pointers are fetched after) and sized before the child is
// written. A STRUCT vector has no data, a child vector per field over the
// same rows; a NULL struct has NULL fields (DuckDB's convention, which
// Vector::SetValue and duckdb-go follow), whatever its Arrow children hold.
// A MAP vector is a LIST of STRUCT(key, value).

// nestedWriter returns the writer of a list or struct type whose elements
// or fields all have writers, or nil.
func nestedWriter(dt arrow.DataType) vecWriter {
	switch dt := dt.(type) {
	case *arrow.MapType:
		return mapWriter(dt)
	case arrow.ListLikeType:
		if dt.ID() == arrow.LIST_VIEW || dt.ID() == arrow.LARGE_LIST_VIEW {
			return nil // offsets in any order: the value-by-value path
		}
		elem := bulkWriter(dt.Elem())
		if elem == nil {
			return nil
		}
		return listWriter(elem)
	case *arrow.StructType:
		if dt.NumFields() == 0 {
			return nil
		}
		fields := make([]vecWriter, dt.NumFields())
		for i, f := range dt.Fields() {
			if fields[i] = bulkWriter(f.Type); fields[i] == nil {
				return nil
			}
		}
		return structWriter(fields)
	case arrow.ExtensionType:
		// An extension type as its storage, as read_parquet reads it.
		storage := bulkWriter(dt.StorageType())
		if storage == nil {
			return nil
		}
		return func(ws *writeState, v mapping.Vector, arr arrow.Array, off, n int) error {
			a, ok := arr.(array.ExtensionArray)
			if !ok {
				return mismatch(arr)
			}
			return storage(ws, v, a.Storage(), off, n)
		}
	}
	return nil
}

// listEntry is DuckDB's duckdb_list_entry.
type listEntry struct{ offset, length uint64 }

func listWriter(elem vecWriter) vecWriter {
	return func(ws *writeState, v mapping.Vector, arr arrow.Array, off, n int) error {
		a, ok := arr.(array.ListLike)
		if !ok || off < 0 || off+n > a.Len() {
			return mismatch(arr)
		}
		mask, nulls, err := writeValidity(v, arr, off, n)
		if err != nil || n == 0 {
			return err
		}
		child := a.ListValues()
		base, _ := a.ValueOffsets(off)
		prev := base
		if base < 0 {
			return fmt.Errorf("%w: list offset %d", ErrData, base)
		}
		entries := vecData[listEntry](v, n)
		for i := range n {
			start, end := a.ValueOffsets(off + i)
			if start < prev || end < start || end > int64(child.Len()) {
				return fmt.Errorf("%w: list offsets [%d, %d) of %d values", ErrData, start, end, child.Len())
			}
			prev = end
			entries[i] = listEntry{offset: uint64(start - base), length: uint64(end - start)}
			if nulls && !valid(mask, i) {
				entries[i].length = 0
			}
		}
		total := prev - base
		if mapping.ListVectorReserve(v, mapping.IdxT(total)) != mapping.StateSuccess ||
			mapping.ListVectorSetSize(v, mapping.IdxT(total)) != mapping.StateSuccess {
			return fmt.Errorf("sopsql: DuckDB refused a list vector of %d elements", total)
		}
		// The child's memory is fetched after the reserve.
		return elem(ws, mapping.ListVectorGetChild(v), child, int(base), int(total))
	}
}

func structWriter(fields []vecWriter) vecWriter {
	return func(ws *writeState, v mapping.Vector, arr arrow.Array, off, n int) error {
		a, ok := arr.(*array.Struct)
		if !ok || a.NumField() != len(fields) || off < 0 || off+n > a.Len() {
			return mismatch(arr)
		}
		mask, nulls, err := writeValidity(v, arr, off, n)
		if err != nil || n == 0 {
			return err
		}
		for f, w := range fields {
			c := mapping.StructVectorGetChild(v, mapping.IdxT(f))
			if err := w(ws, c, a.Field(f), off, n); err != nil {
				return err
			}
			if nulls {
				nullChildren(c, a.Field(f).DataType(), mask, n)
			}
		}
		return nil
	}
}

// nullChildren makes the rows [0, n) of v that mask has NULL NULL in v,
// and in its fields if it is a struct.
func nullChildren(v mapping.Vector, dt arrow.DataType, mask []uint64, n int) {
	m := validity(v, n)
	for i := range m {
		m[i] &= mask[i]
	}
	if ext, ok := dt.(arrow.ExtensionType); ok {
		dt = ext.StorageType()
	}
	if st, ok := dt.(*arrow.StructType); ok {
		for f, fd := range st.Fields() {
			nullChildren(mapping.StructVectorGetChild(v, mapping.IdxT(f)), fd.Type, mask, n)
		}
	}
}

// mapWriter writes maps as DuckDB's MAP, a list of (key, value) structs,
// refusing, as the value-by-value path does, a null key and two equal keys
// in one map (compared as the Go values duckdb-go would have been given).
func mapWriter(dt *arrow.MapType) vecWriter {
	keyConv, err := newConv(dt.KeyType())
	if err != nil {
		return nil
	}
	key, item := bulkWriter(dt.KeyType()), bulkWriter(dt.ItemType())
	if key == nil || item == nil {
		return nil
	}
	list := listWriter(structWriter([]vecWriter{key, item}))
	return func(ws *writeState, v mapping.Vector, arr arrow.Array, off, n int) error {
		a, ok := arr.(*array.Map)
		if !ok || off < 0 || off+n > a.Len() {
			return mismatch(arr)
		}
		keys := a.Keys()
		seen := map[any]struct{}{}
		for i := off; i < off+n; i++ {
			if a.IsNull(i) {
				continue
			}
			start, end := a.ValueOffsets(i)
			if start < 0 || end < start || end > int64(keys.Len()) {
				return fmt.Errorf("%w: map offsets [%d, %d) of %d keys", ErrData, start, end, keys.Len())
			}
			clear(seen)
			for k := int(start); k < int(end); k++ {
				if keys.IsNull(k) {
					return fmt.Errorf("%w: null map key", ErrData)
				}
				kv, err := keyConv.value(keys, k)
				if err != nil {
					return err
				}
				if _, dup := seen[kv]; dup {
					return fmt.Errorf("%w: duplicate map key %v", ErrData, kv)
				}
				seen[kv] = struct{}{}
			}
		}
		return list(ws, v, arr, off, n)
	}
}
