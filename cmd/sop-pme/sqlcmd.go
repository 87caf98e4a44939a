package main

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/sovm/sop-pme/storageid"
	"github.com/spf13/cobra"
)

// sqlInstallHint is how to get a build with the sql command.
const sqlInstallHint = "go install -C cmd/sop-pme -tags duckdb ."

// errNoSQL is what the sql command of a build without DuckDB returns.
var errNoSQL = &cmdError{exitFailure, "this build has no SQL; build with: " + sqlInstallHint, nil}

// sqlFlags are the flags of the sql command. Both builds define them, so
// that a build without DuckDB answers any sql command line with errNoSQL.
type sqlFlags struct {
	store    storeFlag
	ks       keySource
	views    []string
	format   string
	csv      bool
	json     bool
	maxRows  int
	maxWidth int
}

// A sqlView is a --view NAME=ID.
type sqlView struct {
	name string
	id   storageid.ID
}

// sqlCmd is the sql command. Running a query is runSQL: sql.go in a build
// with the duckdb tag, sql_off.go (errNoSQL) in one without.
func (a *app) sqlCmd() *cobra.Command {
	var f sqlFlags
	short := "Query objects with DuckDB SQL, every byte verified against its storage_id"
	if !sqlBuilt {
		short += " (not in this build)"
	}
	cmd := &cobra.Command{
		Use:   "sql QUERY",
		Short: short,
		Long: `Sql runs DuckDB SQL over the objects of the store and prints the result of
its last statement (statements are separated by ";"): a table, as the DuckDB
shell prints one (at most 40 rows on a terminal, every row otherwise; see
--max-rows), or CSV or JSON. DuckDB runs the query to its end before the first
row is printed, so a query that fails prints no row; the rows are then printed
as they are read, and the command holds one at a time (a table holds the rows
it shows, or, showing every row, the first 1,000, which set its column widths:
a wider value further down pushes the rest of its row to the right).

Objects are tables through two functions:
  sop_scan('<storage_id>' [, row_groups := [0, 2]] [, batch_size := n])
      the object's rows, read through byte ranges verified against its
      storage_id and decrypted with its DEK from the keyring. A query fetches
      and verifies the footer and the column chunks it uses, no more; counts,
      min, max and filters come from the rows, never from the footer.
  sop_verify('<storage_id>')
      one row (storage_id, size, verified): every byte checked against the
      storage_id. Only this says an object is verified; a query that read
      part of it does not. (It needs the DEK; sop-pme verify does not.)
--view NAME=ID names sop_scan('ID') NAME, so that queries read naturally;
DuckDB opens the object, and verifies its footer, when it creates the view.

Every table of the store's catalog (import --table) is a view of its name,
with no --view needed: SELECT ... FROM orders reads every object of the
table orders at its current schema, by field ID (sop_scan('orders') too).
A table name is never a storage_id, so the two never clash.

Every byte DuckDB sees was verified first. Handing DuckDB the object's file
and its DEK (read_parquet) is not verified: a page module swapped inside the
object still decrypts, and DuckDB returns wrong rows without an error. Here a
chunk that does not match its storage_id fails the query with exit code 4,
and no row of its row group is printed.

The store and the keyring are opened read-only. DuckDB runs in memory, with
no temporary directory: it never spills decrypted rows to disk (a query that
outgrows its memory limit fails instead). A query cannot change that, nor any
other setting (SET and RESET are refused), read or write a file of the host
(COPY ... TO, read_csv, ATTACH, EXPORT DATABASE), or install or load an
extension: the command creates no file and reaches no network. Rows leave
only through standard output: redirect it (--csv > file), or use export.

DuckDB runs as many threads as GOMAXPROCS says (by default the CPUs the
process may use): GOMAXPROCS=1 sop-pme sql ... runs the whole command on one.

This command needs a build with DuckDB (cgo): ` + sqlInstallHint + `

` + keysHelp,
		Example: `  sop-pme sql "SELECT count(*), sum(amount) FROM sop_scan('ID')"
  sop-pme sql --view orders=ID "SELECT customer, sum(amount) FROM orders GROUP BY 1 ORDER BY 2 DESC LIMIT 5"
  sop-pme sql --view a=ID1 --view b=ID2 --csv "SELECT * FROM a JOIN b USING (order_id)" > joined.csv
  sop-pme sql --json "SELECT * FROM sop_verify('ID')"
  sop-pme sql "SELECT count(*) FROM orders"          # a table`,
		Args: exactArgs(1, "one query (quote it)"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			return a.runSQL(cmd, &f, args)
		}),
	}
	addStoreFlag(cmd, &f.store)
	addKeyFlags(cmd, &f.ks)
	fl := cmd.Flags()
	fl.StringArrayVar(&f.views, "view", nil, "`NAME=ID`: a view NAME over sop_scan('ID') (repeatable)")
	fl.StringVar(&f.format, "format", "", "output `format`: table, csv or json (default table)")
	fl.BoolVar(&f.csv, "csv", false, "print CSV with a header line (--format csv)")
	fl.BoolVar(&f.json, "json", false, "print a JSON array of one object per row (--format json)")
	fl.IntVar(&f.maxRows, "max-rows", -1, "table: show at most `n` rows, the first and last halves (0: all; default 40 on a terminal, all otherwise)")
	fl.IntVar(&f.maxWidth, "max-width", 0, "table: clip each value to `n` columns (0: no limit)")
	if !sqlBuilt {
		// Whatever the command line, a build without DuckDB says so.
		cmd.Args = cobra.ArbitraryArgs
		cmd.SetFlagErrorFunc(func(*cobra.Command, error) error { return errNoSQL })
	}
	return cmd
}

// formatName returns the output format the flags ask for: "table", "csv"
// or "json".
func (f *sqlFlags) formatName() (string, error) {
	var given []string
	name := "table"
	if f.format != "" {
		given = append(given, "--format")
		name = strings.ToLower(f.format)
		switch name {
		case "table", "csv", "json":
		default:
			return "", usagef("--format %q: one of table, csv, json", f.format)
		}
	}
	if f.csv {
		given = append(given, "--csv")
		name = "csv"
	}
	if f.json {
		given = append(given, "--json")
		name = "json"
	}
	if len(given) > 1 {
		return "", usagef("give one of %s", strings.Join(given, ", "))
	}
	return name, nil
}

// parseViews parses the --view flags: NAME=ID, each NAME once, where ID may
// be a unique prefix of a storage_id in the store (see resolveIDs).
func (f *sqlFlags) parseViews(ctx context.Context) ([]sqlView, error) {
	var views []sqlView
	var args []idArg
	seen := map[string]bool{}
	for _, v := range f.views {
		name, idText, ok := strings.Cut(v, "=")
		name, idText = strings.TrimSpace(name), strings.TrimSpace(idText)
		if !ok || name == "" || idText == "" {
			return nil, usagef("--view %q: want NAME=ID", v)
		}
		arg, err := parseIDArg(idText)
		if err != nil {
			return nil, usagef("--view %s: %s", name, clean(err))
		}
		// DuckDB identifiers are case-insensitive.
		key := strings.ToLower(name)
		if seen[key] {
			return nil, usagef("--view %s given twice", name)
		}
		seen[key] = true
		views = append(views, sqlView{name: name, id: arg.id})
		args = append(args, arg)
	}
	if !slices.ContainsFunc(args, func(a idArg) bool { return a.prefix != "" }) {
		return views, nil
	}
	st, err := f.store.openReadOnly(ctx)
	if err != nil {
		return nil, err
	}
	for i, a := range args {
		if a.prefix == "" {
			continue
		}
		ids, err := resolveIDs(ctx, st, []idArg{a})
		var ue *usageError
		var ce *cmdError
		switch {
		case errors.As(err, &ue):
			return nil, usagef("--view %s: %s", views[i].name, ue.msg)
		case errors.As(err, &ce):
			return nil, &cmdError{ce.code, "--view " + views[i].name + ": " + ce.msg, ce.err}
		case err != nil:
			return nil, err
		}
		views[i].id = ids[0]
	}
	return views, nil
}
