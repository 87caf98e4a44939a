package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/sovm/sop-pme/catalog"
	"github.com/sovm/sop-pme/storageid"
	"github.com/spf13/cobra"
)

// tablesHelp says what a table is, for the help of the commands that take
// one.
const tablesHelp = `Tables:
  A table is a name for a sequence of objects sharing a schema that evolves
  by Parquet field ID (import --table, sop-pme table). Its catalog (names,
  schema versions, objects, row counts and exact sizes) is kept on the
  trusted side, encrypted in the keyring file beside the DEKs: the store sees
  objects only, never a table or column name. A table name is any text that
  is not a storage_id or a prefix of one (8 or more hex digits).`

// isObjectArg reports whether an argument names an object (a storage_id or
// a prefix of one) rather than a table: a table's name never parses as
// one (checkTableName).
func isObjectArg(s string) bool {
	if _, err := storageid.Parse(s); err == nil {
		return true
	}
	return hexPrefix.MatchString(s)
}

// hexPrefix matches what a table name cannot be: 8 or more hex digits,
// which commands that take an ID read as a storage_id's prefix.
var hexPrefix = regexp.MustCompile(`^[0-9a-fA-F]{8,}$`)

// checkTableName refuses a table name that would be read as an ID.
func checkTableName(name string) error {
	switch {
	case name == "":
		return usagef("a table name cannot be empty")
	case isObjectArg(name):
		return usagef("%q cannot name a table: it reads as a storage_id or a prefix of one (8 or more hex digits), which commands that take IDs would take it for", name)
	case strings.TrimSpace(name) != name || strings.ContainsAny(name, "\x00\n\r\t"):
		return usagef("%q cannot name a table: no leading or trailing space, tab, newline or NUL", name)
	}
	return nil
}

// tableErr says what went wrong with a catalog operation on the table
// name, in one line: no such table is exit 3, an input or change that
// does not fit the schema is about its column.
func tableErr(name string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, catalog.ErrNoTable) {
		if strings.Trim(strings.ToLower(name), "0123456789abcdef") == "" {
			// Hex digits, too few for a prefix: meant as an ID.
			if _, perr := parseIDArg(name); perr != nil {
				return perr
			}
		}
		return &cmdError{exitNotFound, fmt.Sprintf("%s: no such table (sop-pme ls lists them)", name), err}
	}
	var ce *catalog.ColumnError
	if errors.As(err, &ce) {
		// The reason, without the sentinel's text before it.
		why := ce.Err.Error()
		for _, s := range []error{catalog.ErrSchema, catalog.ErrEvolution} {
			why = strings.TrimPrefix(why, s.Error()+": ")
		}
		code, hint := exitFailure, ""
		if errors.Is(err, catalog.ErrSchema) {
			why = evolveNote.ReplaceAllString(why, "")
			hint = " (the input does not fit the table: give --evolve to evolve the table's schema, or change it with sop-pme table)"
		} else if errors.Is(err, catalog.ErrEvolution) {
			code = exitUsage
		}
		return &cmdError{code, fmt.Sprintf("table %s: column %s: %s%s", name, ce.Column, cleanText(why), hint), err}
	}
	return &cmdError{exitFailure, fmt.Sprintf("table %s: %s", name, catalogText(err)), err}
}

// catalogText is a catalog error's text without its package prefix.
func catalogText(err error) string {
	return strings.ReplaceAll(clean(err), "catalog: ", "")
}

// catalogOf opens the catalog of the keyring k.
func catalogOf(k *keys) *catalog.Catalog { return catalog.New(k.ring) }

// openTables opens the store read-only and the keyring in mode, and
// returns them with the catalog.
func (a *app) openTables(ctx context.Context, store *storeFlag, ks *keySource, mode ringMode) (store, *keys, *catalog.Catalog, error) {
	sm := storeWrite
	if mode == ringRead {
		sm = storeRead
	}
	st, err := store.open(ctx, sm)
	if err != nil {
		return nil, nil, nil, err
	}
	k, err := ks.openRing(ctx, store.value, mode, a.stderr)
	if err != nil {
		return nil, nil, nil, err
	}
	return st, k, catalogOf(k), nil
}

// tableObjectIDs returns the storage_ids of a table's objects, in order.
func tableObjectIDs(t *catalog.Table) []storageid.ID {
	ids := make([]storageid.ID, len(t.Objects))
	for i, o := range t.Objects {
		ids[i] = o.ID
	}
	return ids
}

// tableCmd is sop-pme table: the schema changes of a table.
func (a *app) tableCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "table",
		Short: "Change a table's schema: add, rename, drop or promote a column",
		Long: `Table changes the schema of a table, making a new version of it (sop-pme
schema NAME --history lists them). Columns are known by their Parquet field
ID: a column added gets an ID never used in the table before, a rename keeps
the ID (objects written before it read under the new name), a dropped
column's ID is never reused, and a promotion widens the type (int32 to
int64, float32 to float64, decimal(P,S) to decimal(P',S) with P' > P). No
object is rewritten: each is read at the table's current schema, with nulls
for a column it lacks.

A PATH is a column's name, or a dotted path for a nested one
(address.city). A TYPE is one of: bool, int8, int16, int32, int64, uint8,
uint16, uint32, uint64, float32, float64, string, large_string, binary,
date32, date64, timestamp[s|ms|us|ns] (timestamp[us, UTC] for one with a time
zone), time32[ms], time64[us], decimal(P,S).

` + tablesHelp + `

` + keysHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.SetOut(a.stderr)
			cmd.Help()
			return usagef("table: give a subcommand: add-column, rename-column, drop-column or promote")
		},
	}
	type change struct {
		use, short, what string
		n                int
		do               func(ctx context.Context, c *catalog.Catalog, args []string) (catalog.Version, error)
	}
	changes := []change{
		{"add-column NAME PATH TYPE", "Add a column (nullable, under a new field ID)", "a table, a column path and a type", 3,
			func(ctx context.Context, c *catalog.Catalog, args []string) (catalog.Version, error) {
				t, err := parseType(args[2])
				if err != nil {
					return catalog.Version{}, err
				}
				return c.AddColumn(ctx, args[0], args[1], t)
			}},
		{"rename-column NAME PATH NEWNAME", "Rename a column (its field ID stays)", "a table, a column path and a new name", 3,
			func(ctx context.Context, c *catalog.Catalog, args []string) (catalog.Version, error) {
				return c.RenameColumn(ctx, args[0], args[1], args[2])
			}},
		{"drop-column NAME PATH", "Drop a column (its field ID is never reused)", "a table and a column path", 2,
			func(ctx context.Context, c *catalog.Catalog, args []string) (catalog.Version, error) {
				return c.DropColumn(ctx, args[0], args[1])
			}},
		{"promote NAME PATH TYPE", "Widen a column's type (int32 to int64, float32 to float64, decimal precision)", "a table, a column path and a type", 3,
			func(ctx context.Context, c *catalog.Catalog, args []string) (catalog.Version, error) {
				t, err := parseType(args[2])
				if err != nil {
					return catalog.Version{}, err
				}
				return c.Promote(ctx, args[0], args[1], t)
			}},
	}
	for _, ch := range changes {
		var (
			store  storeFlag
			ks     keySource
			asJSON bool
		)
		sub := &cobra.Command{
			Use:   ch.use,
			Short: ch.short,
			Long:  ch.short + ", making a new version of the table's schema (see sop-pme table -h).\n\n" + keysHelp,
			Args:  exactArgs(ch.n, ch.what),
			RunE: runE(func(cmd *cobra.Command, args []string) error {
				name := args[0]
				if err := checkTableName(name); err != nil {
					return err
				}
				if ch.n == 3 && strings.HasSuffix(ch.use, "TYPE") {
					if _, err := parseType(args[2]); err != nil {
						return err
					}
				}
				ctx := cmd.Context()
				_, k, c, err := a.openTables(ctx, &store, &ks, ringWrite)
				if err != nil {
					return err
				}
				defer k.Close()
				v, err := ch.do(ctx, c, args)
				if err != nil {
					return tableErr(name, err)
				}
				if asJSON {
					return printJSON(a.stdout, versionJSON(v))
				}
				fmt.Fprintf(a.stdout, "%s: version %d: %s\n", name, v.ID, v.Change)
				return nil
			}),
		}
		addStoreFlag(sub, &store)
		addKeyFlags(sub, &ks)
		sub.Flags().BoolVar(&asJSON, "json", false, "print the new version as JSON")
		cmd.AddCommand(sub)
	}
	return cmd
}

// tableVersion is a version of a table's schema, for --json.
type tableVersion struct {
	Version int           `json:"version"`
	Created string        `json:"created"`
	Change  string        `json:"change"`
	Fields  []schemaField `json:"fields"`
}

func versionJSON(v catalog.Version) tableVersion {
	tv := tableVersion{Version: v.ID, Created: v.Created.UTC().Format(timeFormat), Change: v.Change}
	if v.Schema != nil {
		tv.Fields = schemaTree(v.Schema.Fields())
	}
	return tv
}

// timeFormat is how times are printed: RFC 3339 in UTC, to the second.
const timeFormat = "2006-01-02T15:04:05Z07:00"

// parseType parses a column type of sop-pme table: a usage error names
// the types it takes.
func parseType(s string) (arrow.DataType, error) {
	t := strings.ToLower(strings.Join(strings.Fields(s), ""))
	simple := map[string]arrow.DataType{
		"bool": arrow.FixedWidthTypes.Boolean, "boolean": arrow.FixedWidthTypes.Boolean,
		"int8": arrow.PrimitiveTypes.Int8, "int16": arrow.PrimitiveTypes.Int16,
		"int32": arrow.PrimitiveTypes.Int32, "int64": arrow.PrimitiveTypes.Int64,
		"uint8": arrow.PrimitiveTypes.Uint8, "uint16": arrow.PrimitiveTypes.Uint16,
		"uint32": arrow.PrimitiveTypes.Uint32, "uint64": arrow.PrimitiveTypes.Uint64,
		"float32": arrow.PrimitiveTypes.Float32, "float64": arrow.PrimitiveTypes.Float64,
		"float": arrow.PrimitiveTypes.Float32, "double": arrow.PrimitiveTypes.Float64,
		"string": arrow.BinaryTypes.String, "utf8": arrow.BinaryTypes.String,
		"large_string": arrow.BinaryTypes.LargeString, "binary": arrow.BinaryTypes.Binary,
		"date32": arrow.FixedWidthTypes.Date32, "date": arrow.FixedWidthTypes.Date32,
		"date64":     arrow.FixedWidthTypes.Date64,
		"time32[s]":  arrow.FixedWidthTypes.Time32s,
		"time32[ms]": arrow.FixedWidthTypes.Time32ms,
		"time64[us]": arrow.FixedWidthTypes.Time64us,
		"time64[ns]": arrow.FixedWidthTypes.Time64ns,
		"timestamp":  &arrow.TimestampType{Unit: arrow.Microsecond},
	}
	if dt, ok := simple[t]; ok {
		return dt, nil
	}
	if m := timestampType.FindStringSubmatch(t); m != nil {
		unit := map[string]arrow.TimeUnit{"s": arrow.Second, "ms": arrow.Millisecond, "us": arrow.Microsecond, "ns": arrow.Nanosecond}[m[1]]
		tz := ""
		if m[2] != "" {
			// The zone as given, not lower-cased.
			tz = strings.TrimSpace(s[strings.LastIndex(s, ",")+1 : strings.LastIndex(s, "]")])
			if strings.EqualFold(tz, "utc") {
				tz = "UTC"
			}
		}
		return &arrow.TimestampType{Unit: unit, TimeZone: tz}, nil
	}
	if m := decimalType.FindStringSubmatch(t); m != nil {
		p, _ := strconv.Atoi(m[1])
		sc, _ := strconv.Atoi(m[2])
		switch {
		case p < 1 || p > 76 || sc > p:
			return nil, usagef("type %q: a decimal's precision is 1 to 76, and its scale at most its precision", s)
		case p <= 38:
			return &arrow.Decimal128Type{Precision: int32(p), Scale: int32(sc)}, nil
		}
		return &arrow.Decimal256Type{Precision: int32(p), Scale: int32(sc)}, nil
	}
	return nil, usagef("type %q: one of bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float32, float64, string, large_string, binary, date32, date64, time32[ms], time64[us], timestamp[s|ms|us|ns] (timestamp[us, UTC] with a zone), decimal(P,S)", s)
}

// evolveNote matches the catalog's note on what evolving would do, which
// the command's hint replaces.
var evolveNote = regexp.MustCompile(` \(evolve to [^)]*\)$`)

var (
	timestampType = regexp.MustCompile(`^timestamp\[(s|ms|us|ns)(,[^\]]+)?\]$`)
	decimalType   = regexp.MustCompile(`^decimal(?:128|256)?\((\d{1,3}),(\d{1,3})\)$`)
)
