package pqtypes

import (
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// collapseAll walks the Parquet schema beside the manifest, as pqarrow
// derived it, collapses every legacy list of lists that pqarrow read as a
// list of structs (see walkList), and marks the elements that repeated
// groups make not nullable.
func collapseAll(sc *schema.Schema, m *pqarrow.SchemaManifest) {
	root := sc.Root()
	for i := range m.Fields {
		if i < root.NumFields() {
			walkNode(root.Field(i), &m.Fields[i])
		}
	}
}

func isList(n schema.Node) bool { return n.LogicalType().Equals(schema.NewListLogicalType()) }

// walkNode visits the manifest node sf that pqarrow derived from n.
func walkNode(n schema.Node, sf *pqarrow.SchemaField) {
	g, ok := n.(*schema.GroupNode)
	if !ok {
		return
	}
	switch {
	case isList(g) || g.LogicalType().Equals(schema.MapLogicalType{}) && g.NumFields() == 1 && g.Field(0).Type() == schema.Group && g.Field(0).(*schema.GroupNode).NumFields() == 1:
		walkList(g, sf)
	case g.LogicalType().Equals(schema.MapLogicalType{}):
		if g.NumFields() == 1 && len(sf.Children) == 1 {
			if kv, ok := g.Field(0).(*schema.GroupNode); ok {
				walkStruct(kv, &sf.Children[0])
			}
		}
	case g.LogicalType().Equals(schema.VariantLogicalType{}):
	case g.RepetitionType() == parquet.Repetitions.Repeated:
		if len(sf.Children) == 1 {
			notNull(&sf.Children[0])
			walkStruct(g, &sf.Children[0])
		}
	default:
		walkStruct(g, sf)
	}
}

func walkStruct(g *schema.GroupNode, sf *pqarrow.SchemaField) {
	if len(sf.Children) != g.NumFields() {
		return
	}
	for i := range sf.Children {
		walkNode(g.Field(i), &sf.Children[i])
	}
}

// walkList visits a LIST group's node. pqarrow reads a LIST whose repeated
// group has one field and is named "array" (or NAME_tuple) as a list of
// structs, by the backward-compatibility rule for two-level lists. When
// that repeated group is itself a LIST over a repeated field, as
// parquet-mr writes a list of lists (old_list_structure.parquet:
// "required group a (LIST) { repeated group array (LIST) { repeated int32
// array; } }"), the element is that inner list, as pyarrow and DuckDB read
// it: collapse replaces the struct by its one field.
func walkList(g *schema.GroupNode, sf *pqarrow.SchemaField) {
	if g.NumFields() != 1 || len(sf.Children) != 1 {
		return
	}
	lg, ok := g.Field(0).(*schema.GroupNode)
	if !ok {
		return
	}
	if lg.NumFields() == 1 && lg.Name() != "array" && lg.Name() != g.Name()+"_tuple" {
		walkNode(lg.Field(0), &sf.Children[0])
		return
	}
	child := &sf.Children[0]
	if lg.NumFields() == 1 && isList(lg) && lg.RepetitionType() == parquet.Repetitions.Repeated &&
		lg.Field(0).RepetitionType() == parquet.Repetitions.Repeated && len(child.Children) == 1 {
		sf.Children[0] = child.Children[0]
		walkNode(lg.Field(0), &sf.Children[0])
		return
	}
	if lg.RepetitionType() == parquet.Repetitions.Repeated {
		notNull(child)
	}
	walkStruct(lg, child)
}

// notNull marks the element of a list that a repeated group makes: it is
// never null (pqarrow marks it nullable, as it would an optional group).
func notNull(sf *pqarrow.SchemaField) {
	f := *sf.Field
	f.Nullable = false
	sf.Field = &f
}
