package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/sovm/sop-pme/table"
	"github.com/sovm/sop-pme/writer"
	"github.com/spf13/cobra"
)

// schemaField is a field of an object's schema, for --json.
type schemaField struct {
	Name     string        `json:"name"`
	Type     string        `json:"type"`
	Nullable bool          `json:"nullable"`
	FieldID  *int64        `json:"field_id"`
	Children []schemaField `json:"children,omitempty"`
}

func (a *app) schemaCmd() *cobra.Command {
	var (
		flags   objectFlags
		history bool
	)
	cmd := &cobra.Command{
		Use:   "schema ID|TABLE",
		Short: "Show an object's or a table's fields: names, types, nullability and field IDs, as a tree",
		Long: `Schema shows the fields of the object ID as a tree: each field's name, type,
whether it may be null, and its Parquet field ID (what export --fields and
reader.WithFields take). A list's element and a map's key and value are fields
of their own. The schema is in the encrypted footer: it needs the DEK, and it
is read through verified ranges.

Given a TABLE's name, schema shows the table's current schema, from its
catalog in the keyring; --history lists every version of it instead, with
the change that made it (--json: each version with its fields).

` + tablesHelp + `

` + keysHelp,
		Args: exactArgs(1, "one storage_id or table"),
		RunE: tableOr(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			name := args[0]
			_, k, c, err := a.openTables(ctx, &flags.store, &flags.ks, ringRead)
			if err != nil {
				return err
			}
			defer k.Close()
			t, err := c.Table(ctx, name)
			if err != nil {
				return tableErr(name, err)
			}
			if history {
				vs := make([]tableVersion, len(t.Versions))
				for i, v := range t.Versions {
					vs[i] = versionJSON(v)
				}
				if flags.asJSON {
					return printJSON(a.stdout, vs)
				}
				tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "VERSION\tCREATED\tFIELDS\tCHANGE")
				for _, v := range vs {
					fmt.Fprintf(tw, "%d\t%s\t%d\t%s\n", v.Version, v.Created, len(v.Fields), v.Change)
				}
				return tw.Flush()
			}
			tree := schemaTree(t.Current().Schema.Fields())
			if flags.asJSON {
				return printJSON(a.stdout, tree)
			}
			return printTree(a.stdout, tree)
		}, a.withObjects(&flags, nil, keysNow, func(ctx context.Context, objs *objects) error {
			if history {
				return usagef("--history is for a table: an object's schema has one version")
			}
			r, err := objs.reader(ctx, objs.st, objs.ids[0])
			if err != nil {
				return err
			}
			tree := schemaTree(r.Schema().Fields())
			if flags.asJSON {
				return printJSON(a.stdout, tree)
			}
			return printTree(a.stdout, tree)
		})),
	}
	flags.add(cmd, "print the tree as JSON")
	cmd.Flags().BoolVar(&history, "history", false, "for a table: every version of its schema, with its change")
	return cmd
}

// printTree prints a schema's fields as a tree.
func printTree(w io.Writer, tree []schemaField) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FIELD\tTYPE\tNULL\tFIELD_ID")
	var draw func(fs []schemaField, indent string)
	draw = func(fs []schemaField, indent string) {
		for i, f := range fs {
			branch, next := "├─ ", "│  "
			if i == len(fs)-1 {
				branch, next = "└─ ", "   "
			}
			if indent == "" && len(fs) > 0 {
				branch, next = "", ""
			}
			fid := "-"
			if f.FieldID != nil {
				fid = strconv.FormatInt(*f.FieldID, 10)
			}
			null := "not null"
			if f.Nullable {
				null = "null"
			}
			fmt.Fprintf(tw, "%s%s%s\t%s\t%s\t%s\n", indent, branch, f.Name, f.Type, null, fid)
			draw(f.Children, indent+next+" ")
		}
	}
	draw(tree, "")
	return tw.Flush()
}

// schemaTree describes fields and the fields nested in them.
func schemaTree(fields []arrow.Field) []schemaField {
	out := make([]schemaField, len(fields))
	for i, f := range fields {
		sf := schemaField{Name: f.Name, Type: typeName(f.Type), Nullable: f.Nullable}
		if v, ok := f.Metadata.GetValue(writer.FieldIDKey); ok {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				sf.FieldID = &n
			}
		}
		sf.Children = schemaTree(table.Children(f.Type))
		out[i] = sf
	}
	return out
}

// typeName is a type's name, without its children for a nested type (the
// tree shows them).
func typeName(dt arrow.DataType) string {
	switch dt.(type) {
	case *arrow.MapType:
		return "map"
	case *arrow.StructType:
		return "struct"
	case *arrow.ListType:
		return "list"
	case *arrow.LargeListType:
		return "large_list"
	case *arrow.FixedSizeListType:
		return "fixed_size_list"
	}
	return dt.String()
}
