package writer

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/sovm/sop-pme/padme"
)

// FieldIDKey is the Arrow field metadata key that carries a field's Parquet
// field ID, as arrow-go's pqarrow reads and writes it.
const FieldIDKey = "PARQUET:field_id"

// checkSchema enforces Section 11.2 before anything is written: every field,
// at every depth, carries a field ID that parses as a positive int32 and is
// unique in the schema. arrow-go silently drops negative or unparsable IDs,
// so they are refused here, and 0 with them: reader.Check reports a field ID
// below 1 (pqarrow's -1 stands for none, and Iceberg's IDs start at 1). It also refuses schema metadata keys
// reserved for padding (Section 11.8).
func checkSchema(s *arrow.Schema) error {
	if s == nil || s.NumFields() == 0 {
		return ErrSchema
	}
	md := s.Metadata()
	for _, k := range md.Keys() {
		if padme.IsReserved(k) {
			return fmt.Errorf("%w: schema metadata key %q", ErrReservedKey, k)
		}
	}
	seen := make(map[int32]string)
	for _, f := range s.Fields() {
		if err := checkField(f, f.Name, seen); err != nil {
			return err
		}
	}
	return nil
}

func checkField(f arrow.Field, path string, seen map[int32]string) error {
	v, ok := f.Metadata.GetValue(FieldIDKey)
	if !ok {
		return fmt.Errorf("%w: %s has none", ErrFieldID, path)
	}
	id, err := strconv.ParseInt(v, 10, 32)
	if err != nil || id < 1 {
		return fmt.Errorf("%w: %s has %q; field IDs are positive", ErrFieldID, path, v)
	}
	if other, dup := seen[int32(id)]; dup {
		return fmt.Errorf("%w: %s and %s share %d", ErrFieldID, other, path, id)
	}
	seen[int32(id)] = path
	return checkChildren(f.Type, path, seen)
}

func checkChildren(t arrow.DataType, path string, seen map[int32]string) error {
	switch t := t.(type) {
	case *arrow.MapType:
		// The repeated key_value group between a map and its key and value
		// is synthetic and never gets an ID.
		if err := checkField(t.KeyField(), path+".key", seen); err != nil {
			return err
		}
		return checkField(t.ItemField(), path+".value", seen)
	case arrow.ListLikeType:
		// The repeated "list" group is synthetic; the element field has an ID.
		return checkField(t.ElemField(), path+".element", seen)
	case *arrow.StructType:
		for _, c := range t.Fields() {
			if err := checkField(c, path+"."+c.Name, seen); err != nil {
				return err
			}
		}
	case arrow.ExtensionType:
		return checkChildren(t.StorageType(), path, seen)
	}
	return nil
}

// AssignFieldIDs returns schema with a Parquet field ID on every field that
// lacks one, so that the schema meets Section 11.2 ("every column ... MUST
// carry a stable Parquet field ID"). It is deterministic, keeps every ID the
// schema already has, and refuses (ErrFieldID) a schema whose existing IDs
// are invalid or not unique.
//
// The rule, which the sop-pme command's import uses too:
//
//   - A field has an ID when its metadata has FieldIDKey with a positive
//     decimal int32. The value "-1", which pqarrow reports for a Parquet
//     column without a field_id, counts as missing, and so does "0", which
//     SOP-PME-1 does not take (reader.Check fails it) and DuckDB's
//     FIELD_IDS 'auto' gives its first column; any other value that is not
//     a positive int32 is an error.
//   - Missing IDs are numbered from one more than the largest existing ID
//     (from 1 if there is none), in the order Iceberg assigns fresh IDs: the
//     fields of a struct (the top level first) in order, then, in the same
//     order, the children of each of them; a list's element, and a map's key
//     then value, are that field's children.
//
// So a schema without any ID gets 1..n on its top-level fields, then IDs
// for nested fields after them; and adding IDs to the same schema again
// gives the same result. The synthetic repeated groups of Parquet's LIST and
// MAP encodings never get an ID. Other metadata is kept.
func AssignFieldIDs(schema *arrow.Schema) (*arrow.Schema, error) {
	if schema == nil {
		return nil, ErrSchema
	}
	next := int64(0)
	seen := map[int64]string{}
	var scan func(f arrow.Field, path string) error
	scan = func(f arrow.Field, path string) error {
		id, ok, err := fieldID(f, path)
		if err != nil {
			return err
		}
		if ok {
			if other, dup := seen[id]; dup {
				return fmt.Errorf("%w: %s and %s share %d", ErrFieldID, other, path, id)
			}
			seen[id] = path
			next = max(next, id)
		}
		for _, c := range childFields(f.Type) {
			if err := scan(c.field, path+"."+c.name); err != nil {
				return err
			}
		}
		return nil
	}
	for _, f := range schema.Fields() {
		if err := scan(f, f.Name); err != nil {
			return nil, err
		}
	}
	assign := func(f arrow.Field) (arrow.Field, error) {
		if _, ok, _ := fieldID(f, ""); ok {
			return f, nil
		}
		if next >= math.MaxInt32 {
			return f, fmt.Errorf("%w: field IDs beyond int32", ErrFieldID)
		}
		next++
		f.Metadata = withMetadata(f.Metadata, FieldIDKey, strconv.FormatInt(next, 10))
		return f, nil
	}
	// Breadth first within each struct: the fields of a level first, then
	// each field's subtree.
	var level func(fields []arrow.Field) ([]arrow.Field, error)
	level = func(fields []arrow.Field) ([]arrow.Field, error) {
		out := make([]arrow.Field, len(fields))
		for i, f := range fields {
			var err error
			if out[i], err = assign(f); err != nil {
				return nil, err
			}
		}
		for i := range out {
			var err error
			if out[i].Type, err = withChildren(out[i].Type, level); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	fields, err := level(schema.Fields())
	if err != nil {
		return nil, err
	}
	md := schema.Metadata()
	return arrow.NewSchema(fields, &md), nil
}

// fieldID reads a field's ID: ok is false if it has none, "-1" or "0".
func fieldID(f arrow.Field, path string) (id int64, ok bool, err error) {
	v, has := f.Metadata.GetValue(FieldIDKey)
	if !has || v == "-1" || v == "0" {
		return 0, false, nil
	}
	id, perr := strconv.ParseInt(v, 10, 32)
	if perr != nil || id < 1 {
		return 0, false, fmt.Errorf("%w: %s has %q; field IDs are positive", ErrFieldID, path, v)
	}
	return id, true, nil
}

type namedField struct {
	name  string
	field arrow.Field
}

// childFields returns the fields under t that carry field IDs.
func childFields(t arrow.DataType) []namedField {
	switch t := t.(type) {
	case *arrow.MapType:
		return []namedField{{"key", t.KeyField()}, {"value", t.ItemField()}}
	case arrow.ListLikeType:
		return []namedField{{"element", t.ElemField()}}
	case *arrow.StructType:
		out := make([]namedField, t.NumFields())
		for i, f := range t.Fields() {
			out[i] = namedField{f.Name, f}
		}
		return out
	case arrow.ExtensionType:
		return childFields(t.StorageType())
	}
	return nil
}

// withChildren returns t with its child fields replaced by what edit makes
// of them.
func withChildren(t arrow.DataType, edit func([]arrow.Field) ([]arrow.Field, error)) (arrow.DataType, error) {
	switch t := t.(type) {
	case *arrow.MapType:
		kv, err := edit([]arrow.Field{t.KeyField(), t.ItemField()})
		if err != nil {
			return nil, err
		}
		m := arrow.MapOfWithMetadata(kv[0].Type, kv[0].Metadata, kv[1].Type, kv[1].Metadata)
		m.KeysSorted = t.KeysSorted
		m.SetItemNullable(kv[1].Nullable)
		return m, nil
	case *arrow.ListType:
		e, err := edit([]arrow.Field{t.ElemField()})
		if err != nil {
			return nil, err
		}
		return arrow.ListOfField(e[0]), nil
	case *arrow.LargeListType:
		e, err := edit([]arrow.Field{t.ElemField()})
		if err != nil {
			return nil, err
		}
		return arrow.LargeListOfField(e[0]), nil
	case *arrow.FixedSizeListType:
		e, err := edit([]arrow.Field{t.ElemField()})
		if err != nil {
			return nil, err
		}
		return arrow.FixedSizeListOfField(t.Len(), e[0]), nil
	case *arrow.StructType:
		fs, err := edit(t.Fields())
		if err != nil {
			return nil, err
		}
		return arrow.StructOf(fs...), nil
	case *extensions.VariantType:
		// A VARIANT group's metadata, value and typed_value are columns
		// of their own, and carry IDs like a struct's fields (pqarrow
		// reads and writes them from the storage struct's fields).
		st, err := withChildren(t.StorageType(), edit)
		if err != nil {
			return nil, err
		}
		vt, err := extensions.NewVariantType(st)
		if err != nil {
			return nil, fmt.Errorf("%w: variant with numbered fields: %w", ErrFieldID, err)
		}
		return vt, nil
	case arrow.ExtensionType:
		// Another extension type cannot be rebuilt over a storage type
		// whose fields carry new IDs: its fields must have theirs.
		if missingUnder(t.StorageType()) {
			return nil, fmt.Errorf("%w: extension type %s has fields without IDs, which cannot be given any (give them in its storage type)", ErrFieldID, t.ExtensionName())
		}
	}
	return t, nil
}

// missingUnder reports whether a field nested in t lacks an ID.
func missingUnder(t arrow.DataType) bool {
	for _, c := range childFields(t) {
		if _, ok, _ := fieldID(c.field, ""); !ok || missingUnder(c.field.Type) {
			return true
		}
	}
	return false
}

// withMetadata returns md with key set to value.
func withMetadata(md arrow.Metadata, key, value string) arrow.Metadata {
	keys, values := slices.Clone(md.Keys()), slices.Clone(md.Values())
	if i := md.FindKey(key); i >= 0 {
		values[i] = value
	} else {
		keys, values = append(keys, key), append(values, value)
	}
	return arrow.NewMetadata(keys, values)
}

// FieldIDsFrom returns schema with the field IDs of from, whose fields are
// matched by name at every depth (a list's element and a map's key and
// value by their place; types are not compared), as WithFieldIDsFrom
// gives them to SealFile: so that records of schema, given the schema
// returned, are written with a table's IDs. A field of schema that from
// lacks, or whose counterpart has no valid ID, fails with ErrFieldID.
func FieldIDsFrom(schema, from *arrow.Schema) (*arrow.Schema, error) {
	if schema == nil || from == nil {
		return nil, ErrSchema
	}
	return idsFrom(schema, from)
}

func idsFrom(schema, from *arrow.Schema) (*arrow.Schema, error) {
	var level func(fields []arrow.Field, like []namedField, byPlace bool, prefix string) ([]arrow.Field, error)
	level = func(fields []arrow.Field, like []namedField, byPlace bool, prefix string) ([]arrow.Field, error) {
		out := make([]arrow.Field, len(fields))
		for i, f := range fields {
			path := f.Name
			if prefix != "" {
				path = prefix + "." + f.Name
			}
			var o arrow.Field
			found := false
			for j, l := range like {
				if byPlace && j == i || !byPlace && l.name == f.Name {
					o, found = l.field, true
					break
				}
			}
			if !found {
				return nil, fmt.Errorf("%w: %s is not in the schema whose IDs it is to take", ErrFieldID, path)
			}
			id, ok, err := fieldID(o, path)
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, fmt.Errorf("%w: %s has no ID in the schema whose IDs it is to take", ErrFieldID, path)
			}
			f.Metadata = withMetadata(f.Metadata, FieldIDKey, strconv.FormatInt(id, 10))
			sub := childFields(o.Type)
			place := !isStruct(f.Type)
			f.Type, err = withChildren(f.Type, func(cs []arrow.Field) ([]arrow.Field, error) {
				return level(cs, sub, place, path)
			})
			if err != nil {
				return nil, err
			}
			out[i] = f
		}
		return out, nil
	}
	like := make([]namedField, from.NumFields())
	for i, f := range from.Fields() {
		like[i] = namedField{f.Name, f}
	}
	fields, err := level(schema.Fields(), like, false, "")
	if err != nil {
		return nil, err
	}
	md := schema.Metadata()
	return arrow.NewSchema(fields, &md), nil
}

// isStruct reports whether t's children are a struct's fields, matched by
// name: a struct, or an extension type (a variant) stored as one.
func isStruct(t arrow.DataType) bool {
	switch t := t.(type) {
	case *arrow.StructType:
		return true
	case arrow.ExtensionType:
		return isStruct(t.StorageType())
	}
	return false
}
