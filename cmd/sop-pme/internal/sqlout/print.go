//go:build duckdb

// Package sqlout prints the rows of a query that `sop-pme sql` runs
// (sopsql.DB.QueryRows) as DuckDB's shell does: a box-drawn table, CSV or
// JSON, each value as DuckDB's CAST(... AS VARCHAR) renders it. It is the
// command's, not the library's: package sopsql returns rows, and this
// package formats them. It links DuckDB (its value types), so it is built
// only with the duckdb tag, as the sql command is.
package sqlout

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/sovm/sop-pme/duckdb/sopsql"
)

// ErrFormat reports an unknown output format.
var ErrFormat = errors.New("sqlout: unknown output format")

// A Format is an output format of rows.
type Format int

const (
	// Table is a box-drawn table, as the DuckDB shell prints one: column
	// names and types on top, numbers right-aligned, NULL as NULL.
	Table Format = iota
	// CSV is RFC 4180 CSV with a header line; NULL is an empty field.
	CSV
	// JSON is one JSON array of one object per row, a row per line.
	JSON
)

func (f Format) String() string {
	switch f {
	case Table:
		return "table"
	case CSV:
		return "csv"
	case JSON:
		return "json"
	}
	return "Format(" + strconv.Itoa(int(f)) + ")"
}

// ParseFormat returns the Format named "table", "csv" or "json".
func ParseFormat(s string) (Format, error) {
	for _, f := range []Format{Table, CSV, JSON} {
		if strings.EqualFold(s, f.String()) {
			return f, nil
		}
	}
	return 0, fmt.Errorf("%w: %q (want table, csv or json)", ErrFormat, s)
}

// A Printer writes Results, or rows as a query returns them (PrintRows).
//
// Values appear as DuckDB's CAST(... AS VARCHAR) renders them (in the table
// and CSV; JSON keeps numbers, booleans, lists, structs and maps as JSON),
// TIMESTAMP WITH TIME ZONE in UTC.
//
// CSV and JSON are written a row at a time. A table holds the rows it needs
// to size its columns: at most MaxRows rows, or with MaxRows 0 the first
// 1,000, after which it is written a row at a time in the widths those rows
// set (a later, wider value pushes the rest of its row to the right; it is
// never cut, unless MaxWidth says so).
type Printer struct {
	Format Format
	// MaxRows, for Table, is the most rows shown: above it the first and
	// last MaxRows/2 rows are shown, with a count of all (the DuckDB shell
	// shows 40). 0 shows every row.
	MaxRows int
	// MaxWidth, for Table, is the widest a value is shown, in terminal
	// columns; longer values end in "…". 0 is no limit.
	MaxWidth int
}

// A RowSource is a result read a row at a time, as *sopsql.Rows reads
// one: the Printer writes each row as it comes, and holds only the rows a
// table needs (see Printer).
type RowSource interface {
	Columns() []sopsql.Column
	// Next advances to the next row; false at the end or on an error.
	Next() bool
	// Row is the current row, valid until the next call to Next.
	Row() []any
	// Err is the error that ended the rows, if any.
	Err() error
}

var _ RowSource = (*sopsql.Rows)(nil)

// Print writes r, every row.
func (p Printer) Print(w io.Writer, r *sopsql.Result) error {
	return p.PrintRows(w, &resultRows{r: r, i: -1})
}

// resultRows reads a Result as a RowSource.
type resultRows struct {
	r *sopsql.Result
	i int
}

func (s *resultRows) Columns() []sopsql.Column { return s.r.Columns }
func (s *resultRows) Next() bool               { s.i++; return s.i < len(s.r.Rows) }
func (s *resultRows) Row() []any               { return s.r.Rows[s.i] }
func (s *resultRows) Err() error               { return nil }

// PrintRows writes the rows of src as they come. It returns src's error
// after the rows that came before it (the caller decides what a partial
// output means; a table whose rows fail before it is sized prints
// nothing), and the first error writing to w.
func (p Printer) PrintRows(w io.Writer, src RowSource) error {
	bw := bufio.NewWriter(w)
	var err error
	switch p.Format {
	case Table:
		err = p.table(bw, src)
	case CSV:
		err = writeCSV(bw, src)
	case JSON:
		err = writeJSON(bw, src)
	default:
		return fmt.Errorf("%w: %v", ErrFormat, p.Format)
	}
	if err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return src.Err()
}

func columnTypes(cols []sopsql.Column) []*sqlType {
	types := make([]*sqlType, len(cols))
	for i, c := range cols {
		types[i] = parseType(c.Type)
	}
	return types
}

func writeCSV(w io.Writer, src RowSource) error {
	cw := csv.NewWriter(w)
	cols := src.Columns()
	rec := make([]string, len(cols))
	for i, c := range cols {
		rec[i] = c.Name
	}
	if err := cw.Write(rec); err != nil {
		return err
	}
	types := columnTypes(cols)
	for src.Next() {
		for i, v := range src.Row() {
			rec[i] = ""
			if v != nil {
				rec[i] = valueText(v, types[i])
			}
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// writeJSON writes the rows as one JSON array, 64 KiB at a time.
func writeJSON(w *bufio.Writer, src RowSource) error {
	cols := src.Columns()
	types := columnTypes(cols)
	var b bytes.Buffer
	b.WriteByte('[')
	for i := 0; src.Next(); i++ {
		if i > 0 {
			b.WriteString(",\n")
		}
		b.WriteByte('{')
		for j, v := range src.Row() {
			if j > 0 {
				b.WriteByte(',')
			}
			jsonString(&b, cols[j].Name)
			b.WriteByte(':')
			jsonValue(&b, v, types[j])
		}
		b.WriteByte('}')
		if b.Len() > 64<<10 {
			if _, err := w.Write(b.Bytes()); err != nil {
				return err
			}
			b.Reset()
		}
	}
	b.WriteString("]\n")
	_, err := w.Write(b.Bytes())
	return err
}

func jsonString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)           // a string always encodes
	b.Truncate(b.Len() - 1) // Encode's newline
}

// jsonValue writes v as JSON: numbers as numbers (NaN and infinities as
// the strings DuckDB prints for them), booleans, NULL as null, lists as
// arrays, structs and maps as objects (map keys as their text), JSON as it
// is, everything else as its text.
func jsonValue(b *bytes.Buffer, v any, t *sqlType) {
	if v == nil {
		b.WriteString("null")
		return
	}
	t = orNone(t)
	if writeParsedJSON(b, v, t) {
		return
	}
	switch v := v.(type) {
	case bool, int8, int16, int32, int64, int, uint8, uint16, uint32, uint64, *big.Int:
		b.WriteString(valueText(v, t))
	case float32:
		jsonFloat(b, float64(v), 32)
	case float64:
		jsonFloat(b, v, 64)
	case duckdb.Decimal:
		s := decimalText(v)
		if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "-.") {
			s = strings.Replace(s, ".", "0.", 1) // JSON wants the integer digit
		}
		b.WriteString(s)
	case duckdb.Union:
		jsonValue(b, v.Value, unionMember(t, v.Tag))
	case []any, map[string]any, duckdb.OrderedMap:
		writeComposite(b, v, t, jsonEntries(b))
	default:
		jsonString(b, valueText(v, t))
	}
}

// jsonEntries writes the entries of a list, struct or map as JSON: lists as
// arrays, structs and maps as objects (map keys as their text).
func jsonEntries(b *bytes.Buffer) entries {
	value := func(v any, t *sqlType) { jsonValue(b, v, t) }
	return entries{
		sep: ",",
		key: func(k any, t *sqlType) {
			jsonString(b, valueText(k, t))
			b.WriteByte(':')
		},
		field: func(name string) {
			jsonString(b, name)
			b.WriteByte(':')
		},
		elem:  value,
		value: value,
	}
}

func jsonFloat(b *bytes.Buffer, f float64, bits int) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		jsonString(b, floatText(f, bits))
		return
	}
	b.WriteString(strconv.FormatFloat(f, 'g', -1, bits))
}
