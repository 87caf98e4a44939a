package pme

import (
	"fmt"
	"strings"

	"github.com/sovm/sop-pme/internal/thrift"
)

// SchemaElement fields and annotations that decide which schema nodes are
// columns a user named, and which are the synthetic groups of the LIST and
// MAP encodings (parquet-format LogicalTypes.md, "Nested Types").
const (
	seConvertedType = 6
	seLogicalType   = 10

	convertedMap  = 1
	convertedList = 3

	logicalMap  = 2
	logicalList = 3
)

// A Field is a node of the Parquet schema that a user named: a column, a
// struct, a list or a map, or a list element, map key or map value. The root
// and the synthetic repeated groups of LIST and MAP are not Fields.
type Field struct {
	Path  string // dotted path from the root, synthetic groups omitted
	ID    int32  // SchemaElement.field_id
	HasID bool   // whether field_id is present
	// The leaf columns under this field (the field itself if it is a leaf)
	// are FirstLeaf, FirstLeaf+1, ..., FirstLeaf+NumLeaf-1, in the
	// column order of row groups.
	FirstLeaf int
	NumLeaf   int
}

// MaxPathBytes is the least limit, in bytes, on the schema's paths: the
// dotted paths of all the fields and leaf columns of a schema, added up
// (see Fields).
const MaxPathBytes = 1 << 20

// MaxSchemaDepth is the deepest schema nesting Fields accepts, counted in
// schema elements below the root (a LIST or MAP annotated group and its
// repeated group are two levels). A writer refuses a schema deeper than
// this, so that it never publishes an object its reader refuses.
const MaxSchemaDepth = 64

// MaxElements returns how many schema elements (columns and groups) a
// footer of footerLen bytes may have: 16,384, plus one per 96 bytes. A
// decoder spends about 1.2 KiB on each column (arrow-go v18.8.0 and
// pqarrow, measured) whatever its footer costs, and a schema element takes
// six bytes; an object with rows has a ColumnChunk of 60 bytes or more for
// each column in each row group, so only schemas of more than 16,384
// columns over no or few rows can reach the limit.
func MaxElements(footerLen int) int { return 1<<14 + footerLen/96 }

// Fields returns the named fields of the footer's schema in schema order
// (depth first), with their field IDs (Section 11.2).
//
// A field's path repeats the names of its ancestors, so paths can cost far
// more than the footer's bytes: one long group name over many children
// costs its length once per child. Fields refuses, with ErrFormat, a schema
// whose paths add up to more than MaxPathBytes or twice the footer's
// encoded length, whichever is larger (a real footer lists each leaf's path
// in every row group's ColumnMetaData, so its paths take less than its
// bytes), before it builds any path. Decoders that build paths of their own
// (arrow-go's schema) are bounded with it. It also refuses a schema of more
// than MaxElements elements.
func (f *Footer) Fields() ([]Field, error) {
	v, ok := f.root().Field(fmdSchema)
	if !ok || v.Type() != thrift.TypeList || v.Elem() != thrift.TypeStruct || v.Len() == 0 {
		return nil, fmt.Errorf("%w: FileMetaData.schema missing or malformed", ErrFormat)
	}
	if n := f.size(); v.Len() > MaxElements(n) {
		return nil, fmt.Errorf("%w: a schema of %d elements in a footer of %d bytes, at most %d", ErrFormat, v.Len(), n, MaxElements(n))
	}
	items := make([]thrift.Node, 0, v.Len())
	for it := range v.Children() {
		items = append(items, it)
	}
	if err := checkPaths(items, max(MaxPathBytes, 2*int64(f.size()))); err != nil {
		return nil, err
	}
	w := schemaWalk{items: items}
	nroot, err := numChildren(items[0])
	if err != nil {
		return nil, err
	}
	w.pos = 1
	for range nroot {
		if _, err := w.node(nil, false, 1); err != nil {
			return nil, err
		}
	}
	if w.pos != len(w.items) {
		return nil, fmt.Errorf("%w: schema has %d elements after the tree", ErrFormat, len(w.items)-w.pos)
	}
	return w.out, nil
}

type schemaWalk struct {
	items  []thrift.Node
	pos    int
	leaves int // leaves seen so far
	out    []Field
}

// node walks the element at w.pos and its subtree and returns how many
// leaves it has. synthetic marks the repeated group directly under a LIST or
// MAP annotated group.
func (w *schemaWalk) node(path []string, synthetic bool, depth int) (int, error) {
	if err := treeStep(w.pos, len(w.items), depth); err != nil {
		return 0, err
	}
	e := w.items[w.pos]
	w.pos++
	name, err := e.Binary(seName)
	if err != nil {
		return 0, fmt.Errorf("%w: SchemaElement.name: %w", ErrFormat, err)
	}
	n, err := numChildren(e)
	if err != nil {
		return 0, err
	}
	self := -1
	if !synthetic {
		path = append(path, string(name))
		fd := Field{Path: strings.Join(path, "."), FirstLeaf: w.leaves}
		if v, ok := e.Field(seFieldID); ok && v.Type() == thrift.TypeI32 {
			fd.ID, fd.HasID = int32(v.Int()), true
		}
		self = len(w.out)
		w.out = append(w.out, fd)
	}
	if n == 0 {
		if self >= 0 {
			w.out[self].NumLeaf = 1
		}
		w.leaves++
		return 1, nil
	}
	wrapper := isListOrMap(e)
	leaves := 0
	for range n {
		l, err := w.node(path, wrapper, depth+1)
		if err != nil {
			return 0, err
		}
		leaves += l
	}
	if self >= 0 {
		w.out[self].NumLeaf = leaves
	}
	return leaves, nil
}

// checkPaths walks the schema elements as a tree and adds up the lengths of
// the paths of every node below the root, the separating dots included,
// without building them; it fails once the sum exceeds limit. It also
// checks every element's name and num_children and the tree's depth.
func checkPaths(items []thrift.Node, limit int64) error {
	type frame struct {
		left int   // children not yet walked
		path int64 // length of the path of the node (0 for the root)
	}
	n, err := numChildren(items[0])
	if err != nil {
		return err
	}
	stack := []frame{{left: n}}
	var total int64
	for pos := 1; len(stack) > 0; {
		top := &stack[len(stack)-1]
		if top.left == 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		top.left--
		if err := treeStep(pos, len(items), len(stack)); err != nil {
			return err
		}
		e := items[pos]
		pos++
		name, err := e.Binary(seName)
		if err != nil {
			return fmt.Errorf("%w: SchemaElement.name: %w", ErrFormat, err)
		}
		path := top.path + int64(len(name))
		if top.path > 0 {
			path++
		}
		// Every node counts for at least a byte, so that the bound holds
		// the number of nodes too.
		if total += max(path, 1); total > limit {
			return fmt.Errorf("%w: the schema's paths take more than %d bytes", ErrFormat, limit)
		}
		if n, err = numChildren(e); err != nil {
			return err
		}
		if n > 0 {
			stack = append(stack, frame{left: n, path: path})
		}
	}
	return nil
}

// treeStep checks that the schema element at pos, depth levels below the
// root, exists and is not deeper than MaxSchemaDepth.
func treeStep(pos, n, depth int) error {
	if depth > MaxSchemaDepth {
		return fmt.Errorf("%w: the schema nests deeper than %d levels", ErrFormat, MaxSchemaDepth)
	}
	if pos >= n {
		return fmt.Errorf("%w: the schema tree is truncated: num_children counts more elements than there are", ErrFormat)
	}
	return nil
}

func numChildren(e thrift.Node) (int, error) {
	v, ok := e.Field(seNumChild)
	if !ok {
		return 0, nil
	}
	if v.Type() != thrift.TypeI32 || v.Int() < 0 || v.Int() > 1<<20 {
		return 0, fmt.Errorf("%w: SchemaElement.num_children", ErrFormat)
	}
	return int(v.Int()), nil
}

func isListOrMap(e thrift.Node) bool {
	if v, ok := e.Field(seConvertedType); ok && v.Type() == thrift.TypeI32 {
		switch v.Int() {
		case convertedMap, convertedList:
			return true
		}
	}
	if lt, err := e.Struct(seLogicalType); err == nil {
		_, isMap := lt.Field(logicalMap)
		_, isList := lt.Field(logicalList)
		return isMap || isList
	}
	return false
}
