//go:build duckdb

package main

import (
	"context"
	"errors"
	"regexp"
	"runtime"
	"strings"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/sovm/sop-pme/catalog"
	"github.com/sovm/sop-pme/cmd/sop-pme/internal/sqlout"
	"github.com/sovm/sop-pme/duckdb/sopsql"
	"github.com/spf13/cobra"
)

// sqlBuilt says whether this build has the sql command: this one, built
// with the duckdb tag, links DuckDB (cgo) through the duckdb module.
const sqlBuilt = true

// sqlTableRows is how many rows a table shows on a terminal, as the DuckDB
// shell does.
const sqlTableRows = 40

// runSQL runs the statements of args[0] over the store's objects and
// prints the result of the last one.
func (a *app) runSQL(cmd *cobra.Command, f *sqlFlags, args []string) error {
	name, err := f.formatName()
	if err != nil {
		return err
	}
	format, err := sqlout.ParseFormat(name)
	if err != nil {
		return usagef("--format %q: one of table, csv, json", name)
	}
	views, err := f.parseViews(cmd.Context())
	if err != nil {
		return err
	}
	query := args[0]
	if strings.TrimSpace(query) == "" {
		return usagef("the query is empty")
	}
	p := sqlout.Printer{Format: format, MaxRows: f.maxRows, MaxWidth: f.maxWidth}
	if p.MaxRows < 0 {
		p.MaxRows = 0
		if a.stdoutTTY {
			p.MaxRows = sqlTableRows
		}
	}
	if p.MaxWidth < 0 {
		return usagef("--max-width %d: want 0 or more", p.MaxWidth)
	}

	ctx := cmd.Context()
	st, err := f.store.openReadOnly(ctx)
	if err != nil {
		return err
	}
	k, err := f.ks.openRing(ctx, f.store.value, ringRead, a.stderr)
	if err != nil {
		return err
	}
	defer k.Close()
	// An in-memory database, locked down by Open: no spill directory (a
	// query that outgrows DuckDB's memory limit fails instead of writing
	// decrypted rows to disk), no file of the host read or written, no
	// extension, no SET. DuckDB runs GOMAXPROCS threads (by default the
	// CPUs this process may use, which DuckDB's own default ignores: it
	// counts the machine's), so that GOMAXPROCS=n holds the whole command,
	// Go and DuckDB, to n threads.
	//
	// Every table of the catalog is a view of its name (WithTableViews),
	// and sop_scan('NAME') reads it.
	db, err := sopsql.Open(ctx, st, k.ring, sopsql.WithThreads(runtime.GOMAXPROCS(0)),
		sopsql.WithTables(catalogTables{catalogOf(k)}), sopsql.WithTableViews())
	if err != nil {
		return sqlFailure(ctx, err)
	}
	defer db.Close()
	for _, v := range views {
		// DuckDB binds a view's query when it creates the view, to learn
		// its columns: sop_scan opens the object and verifies its footer
		// then. Its errors are tracked as a query's are.
		vctx, wrap := sopsql.TrackErrors(ctx)
		if err := db.CreateView(vctx, v.name, v.id); err != nil {
			return sqlFailure(ctx, wrap(err))
		}
	}
	// DB.QueryRows tracks the errors of sop_scan and sop_verify, so that a
	// verification failure inside DuckDB still matches verify.ErrVerify.
	// DuckDB runs the query to its end before the first row comes, so a
	// query that fails prints no row; the rows are then printed as they
	// are read, one at a time.
	rows, err := db.QueryRows(ctx, query)
	if err != nil {
		return sqlFailure(ctx, err)
	}
	defer rows.Close()
	if err := p.PrintRows(a.stdout, rows); err != nil {
		var qe *sopsql.QueryError
		if errors.As(err, &qe) {
			return sqlFailure(ctx, err)
		}
		return err
	}
	return nil
}

// catalogTables is the catalog as sopsql's Tables: a table's current
// schema and its objects, with the catalog's row counts (the planner's
// estimates only).
type catalogTables struct{ c *catalog.Catalog }

func (t catalogTables) Names(ctx context.Context) ([]string, error) {
	tables, err := t.c.Tables(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(tables))
	for i, tb := range tables {
		names[i] = tb.Name
	}
	return names, nil
}

func (t catalogTables) Table(ctx context.Context, name string) (*sopsql.Table, error) {
	tb, err := t.c.Table(ctx, name)
	if errors.Is(err, catalog.ErrNoTable) {
		return nil, sopsql.ErrNoTable // sopsql names the argument
	}
	if err != nil {
		return nil, err
	}
	out := &sopsql.Table{Schema: tb.Current().Schema, Objects: make([]sopsql.TableObject, len(tb.Objects))}
	for i, o := range tb.Objects {
		out.Objects[i] = sopsql.TableObject{ID: o.ID, Rows: o.Rows}
	}
	return out, nil
}

// storageIDText finds a storage_id in an error's text.
var storageIDText = regexp.MustCompile(`\b[0-9a-f]{64}\b`)

// sqlFailure turns a failed query into the command's error: the error of
// sop_scan or sop_verify if one of them failed (a verification failure, a
// missing object, a missing DEK: their exit codes, about the storage_id
// concerned), a usage error for a query DuckDB cannot parse or bind, and
// DuckDB's message on one line otherwise.
func sqlFailure(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var qe *sopsql.QueryError
	if !errors.As(err, &qe) {
		return err
	}
	if len(qe.Cause) == 0 {
		var de *duckdb.Error
		if errors.As(qe.Err, &de) {
			switch de.Type {
			case duckdb.ErrorTypeParser, duckdb.ErrorTypeSyntax, duckdb.ErrorTypeBinder, duckdb.ErrorTypeCatalog,
				duckdb.ErrorTypeParameterNotResolved:
				return usagef("%s", oneLine(de.Msg))
			}
		}
		return errors.New(oneLine(qe.Err.Error()))
	}
	cause := qe.Cause[0]
	if errors.Is(err, sopsql.ErrArgument) || errors.Is(err, sopsql.ErrNoTable) {
		// An argument that names nothing: a usage error, as a table name
		// DuckDB does not know is (a Catalog Error).
		return usagef("%s", clean(cause))
	}
	if code, _ := classify(err, ""); code == exitFailure {
		// Not one of the failures with an exit code of their own: the
		// function's error, which names the object.
		return errors.New(clean(cause))
	}
	if id := storageIDText.FindString(cause.Error()); id != "" {
		return about(id, err)
	}
	return err
}

// oneLine returns s on one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
