package catalog

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/sovm/sop-pme/writer"
)

// fieldID returns the field's ID (writer.FieldIDKey, a positive int32).
func fieldID(f arrow.Field) (int32, bool) {
	v, ok := f.Metadata.GetValue(writer.FieldIDKey)
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseInt(v, 10, 32)
	if err != nil || id < 1 {
		return 0, false
	}
	return int32(id), true
}

// setMeta returns md with key set to value, or removed if value is "".
func setMeta(md arrow.Metadata, key, value string) arrow.Metadata {
	keys, values := slices.Clone(md.Keys()), slices.Clone(md.Values())
	if i := md.FindKey(key); i >= 0 {
		keys, values = slices.Delete(keys, i, i+1), slices.Delete(values, i, i+1)
	}
	if value != "" {
		keys, values = append(keys, key), append(values, value)
	}
	return arrow.NewMetadata(keys, values)
}

func withID(f arrow.Field, id int32) arrow.Field {
	f.Metadata = setMeta(f.Metadata, writer.FieldIDKey, strconv.Itoa(int(id)))
	return f
}

// kids returns the child fields of a nested type (a struct's fields, a
// list's element, a map's key and value), nil for a leaf.
func kids(t arrow.DataType) []arrow.Field {
	switch t := t.(type) {
	case *arrow.MapType:
		return []arrow.Field{t.KeyField(), t.ItemField()}
	case arrow.ListLikeType:
		return []arrow.Field{t.ElemField()}
	case *arrow.StructType:
		return t.Fields()
	}
	return nil
}

func nested(t arrow.DataType) bool {
	switch t.(type) {
	case *arrow.MapType, arrow.ListLikeType, *arrow.StructType:
		return true
	}
	return false
}

// rebuild returns t with its child fields replaced by fs (as many as kids).
func rebuild(t arrow.DataType, fs []arrow.Field) arrow.DataType {
	switch t := t.(type) {
	case *arrow.MapType:
		m := arrow.MapOfWithMetadata(fs[0].Type, fs[0].Metadata, fs[1].Type, fs[1].Metadata)
		m.KeysSorted = t.KeysSorted
		m.SetItemNullable(fs[1].Nullable)
		return m
	case *arrow.ListType:
		return arrow.ListOfField(fs[0])
	case *arrow.LargeListType:
		return arrow.LargeListOfField(fs[0])
	case *arrow.FixedSizeListType:
		return arrow.FixedSizeListOfField(t.Len(), fs[0])
	case *arrow.StructType:
		return arrow.StructOf(fs...)
	}
	return t
}

// sameShape reports whether two nested types are of one kind.
func sameShape(a, b arrow.DataType) bool {
	if a.ID() != b.ID() {
		return false
	}
	if fa, ok := a.(*arrow.FixedSizeListType); ok {
		return fa.Len() == b.(*arrow.FixedSizeListType).Len()
	}
	return true
}

// mapFields applies fn to every field, children first then the field.
func mapFields(fs []arrow.Field, fn func(arrow.Field) arrow.Field) []arrow.Field {
	out := make([]arrow.Field, len(fs))
	for i, f := range fs {
		if k := kids(f.Type); k != nil {
			f.Type = rebuild(f.Type, mapFields(k, fn))
		}
		out[i] = fn(f)
	}
	return out
}

// plain returns a dictionary type's value type, an extension type's
// storage type, any other type as it is: the table holds these (an
// extension's name stays in the field's metadata once stored).
func plain(t arrow.DataType) arrow.DataType {
	switch d := t.(type) {
	case *arrow.DictionaryType:
		return plain(d.ValueType)
	case arrow.ExtensionType:
		return d.StorageType()
	}
	return t
}

// walk calls fn for every field, depth first, with its dotted path and the
// ID of its parent (0 at the top level).
func walk(fs []arrow.Field, path string, parent int32, fn func(f arrow.Field, path string, parent int32) error) error {
	for _, f := range fs {
		p := join(path, f.Name)
		if err := fn(f, p, parent); err != nil {
			return err
		}
		id, _ := fieldID(f)
		if err := walk(kids(f.Type), p, id, fn); err != nil {
			return err
		}
	}
	return nil
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// allIDs reports whether every field at every depth carries a valid ID and
// no two share one, and returns the largest.
func allIDs(fs []arrow.Field) (maxID int32, ok bool) {
	seen := map[int32]bool{}
	err := walk(fs, "", 0, func(f arrow.Field, _ string, _ int32) error {
		id, ok := fieldID(f)
		if !ok || seen[id] {
			return ErrSchema
		}
		seen[id] = true
		maxID = max(maxID, id)
		return nil
	})
	return maxID, err == nil
}

// checkInput refuses a schema a table cannot take: nil, without fields,
// two fields of one name in one struct, an empty name, a type the catalog
// does not number (a union, an extension with nested fields). A name may
// hold a dot; such a column is not addressed by the dotted paths of the
// evolution methods.
func checkInput(s *arrow.Schema) error {
	if s == nil || s.NumFields() == 0 {
		return fmt.Errorf("%w: no fields", ErrSchema)
	}
	var check func(fs []arrow.Field, path string) error
	check = func(fs []arrow.Field, path string) error {
		names := map[string]bool{}
		for _, f := range fs {
			p := join(path, f.Name)
			if f.Type == nil {
				return colErr(p, ErrSchema, "no type")
			}
			if f.Name == "" {
				return colErr(p, ErrSchema, "an empty column name")
			}
			if names[f.Name] {
				return colErr(p, ErrSchema, "two columns of this name")
			}
			names[f.Name] = true
			switch t := f.Type.(type) {
			case arrow.UnionType:
				return colErr(p, ErrSchema, "union columns are not supported")
			case arrow.ExtensionType:
				if nested(t.StorageType()) {
					return colErr(p, ErrSchema, "extension type %s over a nested type is not supported", t.ExtensionName())
				}
			}
			if err := check(kids(f.Type), p); err != nil {
				return err
			}
		}
		return nil
	}
	return check(s.Fields(), "")
}

func isStruct(t arrow.DataType) bool { _, ok := t.(*arrow.StructType); return ok }

// stripIDs returns fs without field IDs at any depth, with dictionary
// types replaced by their value types (a table's schema holds value
// types).
func stripIDs(fs []arrow.Field) []arrow.Field {
	return mapFields(fs, func(f arrow.Field) arrow.Field {
		f.Type = plain(f.Type)
		f.Metadata = setMeta(f.Metadata, writer.FieldIDKey, "")
		return f
	})
}

// numberFresh numbers every field of fs (IDs removed first) in Iceberg's
// order, as writer.AssignFieldIDs does, from next+1; it returns the fields
// and the largest ID given.
func numberFresh(fs []arrow.Field, next int32) ([]arrow.Field, int32, error) {
	s, err := writer.AssignFieldIDs(arrow.NewSchema(stripIDs(fs), nil))
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", ErrSchema, err)
	}
	top := next
	var overflow bool
	out := mapFields(s.Fields(), func(f arrow.Field) arrow.Field {
		id, _ := fieldID(f)
		if int64(id)+int64(next) > math.MaxInt32 {
			overflow = true
			return f
		}
		top = max(top, id+next)
		return withID(f, id+next)
	})
	if overflow {
		return nil, 0, fmt.Errorf("%w: field IDs beyond int32", ErrEvolution)
	}
	return out, top, nil
}

// promotable reports whether Iceberg lets a column of type from be read
// as, or promoted to, type to: a wider integer, float32 to float64, a
// decimal of the same scale and a larger precision.
func promotable(from, to arrow.DataType) bool {
	from, to = plain(from), plain(to)
	rank := func(t arrow.DataType) int {
		switch t.ID() {
		case arrow.INT8:
			return 1
		case arrow.INT16:
			return 2
		case arrow.INT32:
			return 3
		case arrow.INT64:
			return 4
		}
		return 0
	}
	if rf, rt := rank(from), rank(to); rf > 0 && rt > 0 {
		return rf < rt && rt >= 3
	}
	if from.ID() == arrow.FLOAT32 && to.ID() == arrow.FLOAT64 {
		return true
	}
	df, ok1 := from.(arrow.DecimalType)
	dt, ok2 := to.(arrow.DecimalType)
	if ok1 && ok2 {
		return df.GetScale() == dt.GetScale() && dt.GetPrecision() > df.GetPrecision() &&
			decWidth(to) >= decWidth(from)
	}
	return false
}

func leafEqual(a, b arrow.DataType) bool { return arrow.TypeEqual(plain(a), plain(b)) }

// merger maps an input schema onto a table's current one (Plan).
type merger struct {
	byID    bool
	evolve  bool
	high    int32 // the table's high water, raised by added columns
	changes []string
}

// fields maps the input fields in onto the table fields tab (siblings in
// one struct, or the top level) at path. It returns the input's fields
// carrying the table's IDs, and the table's fields as evolved.
func (m *merger) fields(in, tab []arrow.Field, path string) (out, next []arrow.Field, err error) {
	next = slices.Clone(tab)
	matched := make([]bool, len(tab))
	for _, f := range in {
		p := join(path, f.Name)
		idx := -1
		for i, t := range tab {
			if m.byID {
				a, _ := fieldID(f)
				if b, _ := fieldID(t); a == b {
					idx = i
					break
				}
			} else if t.Name == f.Name {
				idx = i
				break
			}
		}
		if idx < 0 {
			if !m.evolve {
				return nil, nil, colErr(p, ErrSchema, "not in the table (evolve to add it)")
			}
			fresh, high, err := numberFresh([]arrow.Field{f}, m.high)
			if err != nil {
				return nil, nil, &ColumnError{Column: p, Err: err}
			}
			m.high = high
			nf := fresh[0]
			nf.Nullable = true
			next = append(next, nf)
			m.changes = append(m.changes, "add "+p)
			of := fresh[0]
			of.Nullable = f.Nullable
			out = append(out, withInputTypes(of, f))
			continue
		}
		if matched[idx] {
			return nil, nil, colErr(p, ErrSchema, "two input columns map to table column %q", tab[idx].Name)
		}
		matched[idx] = true
		o, n, err := m.field(f, tab[idx], p)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, o)
		next[idx] = n
	}
	for i, t := range tab {
		if !matched[i] && !t.Nullable {
			return nil, nil, colErr(join(path, t.Name), ErrSchema, "a required column is missing")
		}
	}
	return out, next, nil
}

// withInputTypes returns numbered (the input field f numbered fresh) with
// f's own leaf types (dictionaries kept).
func withInputTypes(numbered, f arrow.Field) arrow.Field {
	if !nested(f.Type) {
		numbered.Type = f.Type
		return numbered
	}
	nk, fk := kids(numbered.Type), kids(f.Type)
	out := make([]arrow.Field, len(nk))
	for i := range nk {
		out[i] = withInputTypes(nk[i], fk[i])
	}
	numbered.Type = rebuild(numbered.Type, out)
	return numbered
}

// field maps one input field f onto the table field t at path p.
func (m *merger) field(f, t arrow.Field, p string) (out, next arrow.Field, err error) {
	id, _ := fieldID(t)
	out, next = withID(f, id), t
	if f.Nullable && !t.Nullable {
		if !m.evolve {
			return out, next, colErr(p, ErrSchema, "nullable in the input, required in the table (evolve to make it optional)")
		}
		next.Nullable = true
		m.changes = append(m.changes, "make "+p+" optional")
	}
	fn, tn := nested(plain(f.Type)), nested(t.Type)
	switch {
	case fn != tn || (fn && !sameShape(plain(f.Type), t.Type)):
		return out, next, colErr(p, ErrSchema, "type %s in the input, %s in the table", f.Type, t.Type)
	case fn && isStruct(t.Type):
		o, n, err := m.fields(kids(f.Type), kids(t.Type), p)
		if err != nil {
			return out, next, err
		}
		out.Type, next.Type = rebuild(f.Type, o), rebuild(t.Type, n)
	case fn:
		fk, tk := kids(f.Type), kids(t.Type)
		o, n := make([]arrow.Field, len(fk)), make([]arrow.Field, len(tk))
		for i := range fk {
			if o[i], n[i], err = m.field(fk[i], tk[i], join(p, tk[i].Name)); err != nil {
				return out, next, err
			}
		}
		out.Type, next.Type = rebuild(f.Type, o), rebuild(t.Type, n)
	case leafEqual(f.Type, t.Type), promotable(f.Type, t.Type):
		// The object keeps its narrower type; readers widen it.
	case promotable(t.Type, f.Type):
		if !m.evolve {
			return out, next, colErr(p, ErrSchema, "type %s in the input is wider than %s in the table (evolve to promote it)", f.Type, t.Type)
		}
		next.Type = plain(f.Type)
		m.changes = append(m.changes, fmt.Sprintf("promote %s from %s to %s", p, t.Type, next.Type))
	default:
		return out, next, colErr(p, ErrSchema, "type %s in the input, %s in the table", f.Type, t.Type)
	}
	return out, next, nil
}

// mapsByID reports whether the input can be mapped by field ID: every
// input field carries an ID that the table has, under the same parent.
func mapsByID(in, tab []arrow.Field) bool {
	parent := map[int32]int32{}
	walk(tab, "", 0, func(f arrow.Field, _ string, p int32) error {
		id, _ := fieldID(f)
		parent[id] = p
		return nil
	})
	seen := map[int32]bool{}
	err := walk(in, "", 0, func(f arrow.Field, _ string, p int32) error {
		id, ok := fieldID(f)
		if !ok || seen[id] {
			return ErrSchema
		}
		seen[id] = true
		if tp, ok := parent[id]; !ok || tp != p {
			return ErrSchema
		}
		return nil
	})
	return err == nil
}

// edit finds the struct that holds the last segment of path in fs, and
// returns fs with that struct's fields replaced by what fn makes of them
// (fn gets them and the last segment).
func edit(fs []arrow.Field, path string, fn func(fs []arrow.Field, name string) ([]arrow.Field, error)) ([]arrow.Field, error) {
	segs := strings.Split(path, ".")
	var rec func(fs []arrow.Field, i int, at string) ([]arrow.Field, error)
	rec = func(fs []arrow.Field, i int, at string) ([]arrow.Field, error) {
		if i == len(segs)-1 {
			return fn(fs, segs[i])
		}
		p := join(at, segs[i])
		j := slices.IndexFunc(fs, func(f arrow.Field) bool { return f.Name == segs[i] })
		if j < 0 {
			return nil, colErr(p, ErrEvolution, "no such column")
		}
		if !isStruct(fs[j].Type) {
			return nil, colErr(p, ErrEvolution, "a %s, not a struct: list elements and map entries are not addressed by name", fs[j].Type)
		}
		sub, err := rec(kids(fs[j].Type), i+1, p)
		if err != nil {
			return nil, err
		}
		out := slices.Clone(fs)
		out[j].Type = arrow.StructOf(sub...)
		return out, nil
	}
	if path == "" || slices.Contains(segs, "") {
		return nil, colErr(path, ErrEvolution, "not a column path")
	}
	return rec(fs, 0, "")
}

func index(fs []arrow.Field, name string) int {
	return slices.IndexFunc(fs, func(f arrow.Field) bool { return f.Name == name })
}

// decWidth ranks the decimal types by width.
func decWidth(t arrow.DataType) int {
	switch t.ID() {
	case arrow.DECIMAL32:
		return 1
	case arrow.DECIMAL64:
		return 2
	case arrow.DECIMAL128:
		return 3
	}
	return 4
}
