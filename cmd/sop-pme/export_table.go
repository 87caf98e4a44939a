package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/sovm/sop-pme/cmd/sop-pme/internal/formats"
	"github.com/sovm/sop-pme/table"
	"github.com/spf13/cobra"
)

// tableOr returns the RunE of a command that takes one storage_id or one
// table: onTable for a table's name, onObject for an ID.
func tableOr(onTable func(cmd *cobra.Command, args []string) error, onObject func(*cobra.Command, []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == 1 && !isObjectArg(args[0]) {
			return runE(func(cmd *cobra.Command, args []string) error {
				if err := checkTableName(args[0]); err != nil {
					return err
				}
				return onTable(cmd, args)
			})(cmd, args)
		}
		return onObject(cmd, args)
	}
}

// exportTable writes the rows of every object of the table name (export
// TABLE).
func (a *app) exportTable(ctx context.Context, flags *objectFlags, name string, f formats.Format, out, fields string, limit int64) error {
	st, k, c, err := a.openTables(ctx, &flags.store, &flags.ks, ringRead)
	if err != nil {
		return err
	}
	defer k.Close()
	t, err := c.Table(ctx, name)
	if err != nil {
		return tableErr(name, err)
	}
	schema := t.Current().Schema
	var opts []table.Option
	if fields != "" {
		var cols []string
		for _, c := range strings.Split(fields, ",") {
			cols = append(cols, strings.TrimSpace(c))
		}
		ids, err := table.Resolve(schema, cols...)
		if err != nil {
			var ce *table.ColumnError
			if errors.As(err, &ce) {
				return usagef("--fields: no field named %q, and no field with that ID (sop-pme schema %s lists them)", ce.Column, name)
			}
			return err
		}
		opts = append(opts, table.WithFields(ids...))
	}
	m := a.newMeter("export", -1)
	if (out == "" || out == "-") && a.stdoutTTY && f != formats.Table {
		m.bar = nil
	}
	rr, err := table.Scan(ctx, countingSource{st, m}, k.ring, schema, tableObjectIDs(t), opts...)
	if err != nil {
		m.abort()
		return objectErr(name, err)
	}
	defer rr.Release()
	rows, dest, err := a.writeRows(ctx, tableRows{rr, name}, f, out, limit, m, "table "+name)
	if err != nil {
		return err
	}
	m.done("exported %d %s of table %s (%d %s) to %s", rows, plural(int(rows), "row", "rows"), name, len(t.Objects), plural(len(t.Objects), "object", "objects"), dest)
	return nil
}

// objectErr makes the error of an object of the table name (a
// *table.ObjectError) about the object's storage_id.
func objectErr(name string, err error) error {
	var oe *table.ObjectError
	if errors.As(err, &oe) {
		return about(fmt.Sprintf("%s (object %d of table %s)", oe.ID, oe.Index+1, name), oe.Err)
	}
	var ce *table.ColumnError
	if errors.As(err, &ce) {
		return &cmdError{exitFailure, fmt.Sprintf("table %s: column %s: %s", name, ce.Column, strings.ReplaceAll(clean(ce.Err), "table: ", "")), err}
	}
	return about("table "+name, err)
}

// tableRows is a table's scan, its error about the object that failed.
type tableRows struct {
	array.RecordReader
	name string
}

func (r tableRows) Err() error {
	if err := r.RecordReader.Err(); err != nil {
		return objectErr(r.name, err)
	}
	return nil
}
