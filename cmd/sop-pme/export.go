package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/sovm/sop-pme/cmd/sop-pme/internal/formats"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/table"
	"github.com/spf13/cobra"
)

func (a *app) exportCmd() *cobra.Command {
	var (
		flags  objectFlags
		out    string
		format string
		fields string
		limit  int64
		f      formats.Format // from --format or -o's name (PreRunE)
	)
	cmd := &cobra.Command{
		Use:   "export ID|TABLE",
		Short: "Write an object's or a table's rows out as Parquet, Arrow IPC, CSV or NDJSON",
		Long: `Export reads the rows of the object ID through byte ranges verified against
its storage_id, decrypts them with its DEK from the keyring, and writes them
to -o FILE or stdout. Every byte read is verified before it is decrypted; a
range that does not match stops the export with exit code 4, and -o FILE is
then not written (the rows go to a temporary file beside it, renamed over it
at the end). -o never replaces anything but a regular file: a FIFO, a
character device (such as a null device or a terminal) or a symlink's target
is written in place, as curl and duckdb do, and then holds what was written
before a failure.

Formats (--format, or from -o's extension):
  parquet  PLAINTEXT Parquet (zstd) with each field's Parquet field ID: the
           rows leave the encryption. Write it only to a trusted destination.
  arrow    Arrow IPC file; arrows: Arrow IPC stream
  csv      with a header row; nested values (lists, structs, maps) as JSON text
  ndjson   one JSON object per row, exact values
  table    a box of the first rows (--limit, default 40), for a terminal: the
           default when stdout is one and no -o is given

--fields selects fields by name (a dotted path for a nested one, such as
address.city) or by Parquet field ID, comma-separated; a nested field brings
its enclosing fields with it. A name is looked up first, then an ID.

Given a TABLE's name rather than an ID, export writes the rows of every object
of the table, in the order they were appended, as one output at the table's
current schema: columns are matched by field ID, so an object written before
a column was added reads it as nulls, one written before a rename or a
promotion reads under the new name and type, and a dropped column is gone.
Every object is read through verified ranges, as one is.

` + tablesHelp + `

` + keysHelp,
		Example: `  sop-pme export -s ./store ID -o orders.parquet
  sop-pme export -s ./store ID --fields customer,amount --format csv > orders.csv
  sop-pme export -s ./store ID --fields 2,3 --limit 10
  sop-pme export -s ./store orders -o orders.parquet`,
		Args: exactArgs(1, "one storage_id or table"),
		PreRunE: runE(func(_ *cobra.Command, args []string) (err error) {
			// The ID or table, then the format, are checked before
			// anything is opened.
			if isObjectArg(args[0]) {
				if _, err = parseIDArgs(args); err != nil {
					return err
				}
			} else if err = checkTableName(args[0]); err != nil {
				return err
			}
			if f, err = exportFormat(format, out, a.stdoutTTY); err != nil {
				return err
			}
			if limit < 0 || (limit == 0 && f == formats.Table) {
				limit = 40
			}
			return nil
		}),
		RunE: tableOr(func(cmd *cobra.Command, args []string) error {
			return a.exportTable(cmd.Context(), &flags, args[0], f, out, fields, limit)
		}, a.withObjects(&flags, nil, keysNow, func(ctx context.Context, objs *objects) error {
			id := objs.ids[0]
			m := a.newMeter("export", -1)
			if (out == "" || out == "-") && a.stdoutTTY && f != formats.Table {
				// Rows stream to the terminal the bar would be drawn on.
				m.bar = nil
			}
			r, err := objs.reader(ctx, countingSource{objs.st, m}, id)
			if err != nil {
				m.abort()
				return err
			}
			if m.bar != nil {
				m.bar.ChangeMax64(r.Size())
			}
			var opts []reader.ScanOption
			if fields != "" {
				ids, err := fieldIDs(r.Schema(), fields)
				if err != nil {
					m.abort()
					return err
				}
				opts = append(opts, reader.WithFields(ids...))
			}
			rr, err := r.Scan(ctx, opts...)
			// The meter counts what the store hands over, for the bar and
			// the rate; the summary reports the reader's own counts.
			if err != nil {
				m.abort()
				return about(id.String(), err)
			}
			defer rr.Release()
			rows, dest, err := a.writeRows(ctx, rr, f, out, limit, m, id.String())
			if err != nil {
				return err
			}
			stats := r.Stats()
			// From another node (iroh://), what crossed the network too.
			recv := ""
			if rs, ok := objs.st.(interface{ BytesReceived() uint64 }); ok {
				recv = fmt.Sprintf(", %d bytes received from the node", rs.BytesReceived())
			}
			m.done("exported %d %s of %s to %s (%s fetched, %s verified, %d modules opened%s)", rows, plural(int(rows), "row", "rows"), id, dest,
				mb(stats.BytesFetched), mb(stats.BytesVerified), stats.ModulesOpened, recv)
			return nil
		})),
	}
	flags.add(cmd, "")
	fl := cmd.Flags()
	fl.StringVarP(&out, "output", "o", "", "write to `file` (default stdout)")
	fl.StringVar(&format, "format", "", "output `format`: parquet (plaintext), arrow, arrows, csv, ndjson or table")
	fl.StringVar(&fields, "fields", "", "`names or IDs` of the fields to export, comma-separated (default all)")
	fl.Int64Var(&limit, "limit", 0, "export at most `n` rows (default all; 40 for table)")
	return cmd
}

// writeRows writes the rows of rr to out (stdout for "" or "-") in the
// format f, at most limit of them (0: all), and returns how many it wrote
// and where. A failure of rr is about subject (a storage_id or a table).
func (a *app) writeRows(ctx context.Context, rr array.RecordReader, f formats.Format, out string, limit int64, m *meter, subject string) (int64, string, error) {
	var err error
	var w io.Writer = a.stdout
	dest := "stdout"
	var of *outputFile
	if out != "" && out != "-" {
		dest = out
		if of, err = createOutput(ctx, out); err != nil {
			m.abort()
			return 0, "", about(out, err)
		}
		defer func() {
			if of != nil {
				of.abort()
			}
		}()
		w = of
	}
	var o formats.Output
	var table *formats.TableOutput
	if f == formats.Table {
		table = formats.NewTable(w, rr.Schema(), limit)
		o = table
	} else if o, err = formats.NewOutput(w, f, rr.Schema()); err != nil {
		m.abort()
		return 0, "", about(dest, err)
	}
	var rows int64
	more := false // rows were cut: the object has more than limit
	for rr.Next() {
		rec := rr.RecordBatch()
		if limit > 0 && rows >= limit {
			// The limit fell on the end of a batch: the table says
			// "the first rows" only if another batch has rows.
			if more = rec.NumRows() > 0; more {
				break
			}
			continue
		}
		if limit > 0 && rows+rec.NumRows() > limit {
			rec = rec.NewSlice(0, limit-rows)
			defer rec.Release()
			more = true
		}
		if err := o.Write(rec); err != nil {
			m.abort()
			return 0, "", about(dest, err)
		}
		rows += rec.NumRows()
		if more || limit > 0 && rows >= limit && table == nil {
			break
		}
	}
	if err := rr.Err(); err != nil {
		m.abort()
		if (of == nil || of.inPlace()) && f != formats.Table {
			return 0, "", about(subject, fmt.Errorf("%w (what was written to %s is incomplete)", err, dest))
		}
		return 0, "", about(subject, err)
	}
	if table != nil {
		table.More = more
	}
	// The bar goes before anything is drawn at the end: a table
	// starts on a line of its own.
	m.clear()
	if err := o.Close(); err != nil {
		m.abort()
		return 0, "", about(dest, err)
	}
	if of != nil {
		err := of.commit(ctx)
		of = nil
		if err != nil {
			return 0, "", about(out, err)
		}
	}
	return rows, dest, nil
}

// exportFormat decides the output format: --format, else -o's extension,
// else table on a terminal.
func exportFormat(format, out string, tty bool) (formats.Format, error) {
	if format == string(formats.Table) {
		return formats.Table, nil
	}
	if format != "" {
		f, err := formats.Parse(format)
		if err != nil {
			return "", usagef("--format %q: one of %s, table", format, formatList(formats.All))
		}
		return f, nil
	}
	if out != "" && out != "-" {
		switch strings.ToLower(filepath.Ext(out)) {
		case ".parquet", ".pq":
			return formats.Parquet, nil
		case ".arrow", ".feather", ".ipc":
			return formats.ArrowFile, nil
		case ".arrows":
			return formats.ArrowStream, nil
		case ".csv":
			return formats.CSV, nil
		case ".ndjson", ".jsonl", ".json":
			return formats.NDJSON, nil
		}
		return "", usagef("cannot tell the format of %s from its name: give --format", out)
	}
	if tty {
		return formats.Table, nil
	}
	return "", usagef("give --format (parquet, arrow, arrows, csv, ndjson) or -o FILE when stdout is not a terminal")
}

// fieldIDs resolves --fields with table.Resolve: each item is a field's name
// (a dotted path for a nested field) or, if no field has that name, a Parquet
// field ID.
func fieldIDs(schema *arrow.Schema, list string) ([]int32, error) {
	items := strings.Split(list, ",")
	for i := range items {
		items[i] = strings.TrimSpace(items[i])
	}
	ids, err := table.Resolve(schema, items...)
	if ce := (*table.ColumnError)(nil); errors.As(err, &ce) {
		return nil, usagef("--fields: no field named %q, and no field with that ID (sop-pme schema lists them)", ce.Column)
	}
	return ids, err
}
