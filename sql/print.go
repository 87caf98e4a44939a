package sopsql

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/duckdb/duckdb-go/v2"
)

// A Format is an output format of a Result.
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

// A Printer writes Results.
//
// Values appear as DuckDB's CAST(... AS VARCHAR) renders them (in the table
// and CSV; JSON keeps numbers, booleans, lists, structs and maps as JSON),
// TIMESTAMP WITH TIME ZONE in UTC.
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

// Write writes r in format f, every row.
func (r *Result) Write(w io.Writer, f Format) error {
	return Printer{Format: f}.Print(w, r)
}

// Print writes r.
func (p Printer) Print(w io.Writer, r *Result) error {
	bw := bufio.NewWriter(w)
	var err error
	switch p.Format {
	case Table:
		err = p.table(bw, r)
	case CSV:
		err = writeCSV(bw, r)
	case JSON:
		err = writeJSON(bw, r)
	default:
		return fmt.Errorf("%w: %v", ErrFormat, p.Format)
	}
	if err != nil {
		return err
	}
	return bw.Flush()
}

func columnTypes(r *Result) []*sqlType {
	types := make([]*sqlType, len(r.Columns))
	for i, c := range r.Columns {
		types[i] = parseType(c.Type)
	}
	return types
}

func writeCSV(w io.Writer, r *Result) error {
	cw := csv.NewWriter(w)
	rec := make([]string, len(r.Columns))
	for i, c := range r.Columns {
		rec[i] = c.Name
	}
	if err := cw.Write(rec); err != nil {
		return err
	}
	types := columnTypes(r)
	for _, row := range r.Rows {
		for i, v := range row {
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

func writeJSON(w *bufio.Writer, r *Result) error {
	types := columnTypes(r)
	var b bytes.Buffer
	b.WriteByte('[')
	for i, row := range r.Rows {
		if i > 0 {
			b.WriteString(",\n")
		}
		b.WriteByte('{')
		for j, v := range row {
			if j > 0 {
				b.WriteByte(',')
			}
			jsonString(&b, r.Columns[j].Name)
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
	if t == nil {
		t = &sqlType{}
	}
	if t.name == "JSON" && v != nil {
		if j, err := json.Marshal(v); err == nil {
			b.Write(j)
			return
		}
	}
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
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
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			jsonValue(b, e, t.elem)
		}
		b.WriteByte(']')
	case map[string]any:
		b.WriteByte('{')
		for i, f := range structFields(v, t) {
			if i > 0 {
				b.WriteByte(',')
			}
			jsonString(b, f.name)
			b.WriteByte(':')
			jsonValue(b, v[f.name], f.typ)
		}
		b.WriteByte('}')
	case duckdb.OrderedMap:
		b.WriteByte('{')
		keys, vals := v.Keys(), v.Values()
		for i := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			jsonString(b, valueText(keys[i], t.key))
			b.WriteByte(':')
			jsonValue(b, vals[i], t.value)
		}
		b.WriteByte('}')
	default:
		jsonString(b, valueText(v, t))
	}
}

func jsonFloat(b *bytes.Buffer, f float64, bits int) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		jsonString(b, floatText(f, bits))
		return
	}
	b.WriteString(strconv.FormatFloat(f, 'g', -1, bits))
}

// table writes the box-drawn table of the DuckDB shell.
func (p Printer) table(w *bufio.Writer, r *Result) error {
	n := len(r.Columns)
	if n == 0 {
		return nil
	}
	types := columnTypes(r)
	// The rows shown: all, or the first and last halves of MaxRows.
	shown := r.Rows
	var tail [][]any
	if p.MaxRows > 0 && len(r.Rows) > p.MaxRows {
		half := max(p.MaxRows/2, 1)
		shown, tail = r.Rows[:half], r.Rows[len(r.Rows)-half:]
	}
	render := func(rows [][]any) [][]string {
		out := make([][]string, len(rows))
		for i, row := range rows {
			out[i] = make([]string, n)
			for j, v := range row {
				out[i][j] = p.cell(v, types[j])
			}
		}
		return out
	}
	head, foot := render(shown), render(tail)
	names := make([]string, n)
	typeNames := make([]string, n)
	widths := make([]int, n)
	for j, c := range r.Columns {
		names[j] = p.clip(escapeControl(c.Name))
		typeNames[j] = p.clip(types[j].display())
		widths[j] = max(textWidth(names[j]), textWidth(typeNames[j]), 1)
	}
	for _, rows := range [][][]string{head, foot} {
		for _, row := range rows {
			for j, s := range row {
				widths[j] = max(widths[j], textWidth(s))
			}
		}
	}
	var note string
	switch {
	case tail != nil:
		note = fmt.Sprintf("%d rows (%d shown)", len(r.Rows), len(shown)+len(tail))
	case len(r.Rows) == 0:
		note = "0 rows"
	}
	inner := 3*n - 1 // between the outer borders: " x │ y "
	for _, wd := range widths {
		inner += wd
	}
	if need := textWidth(note) + 2; need > inner {
		widths[n-1] += need - inner
		inner = need
	}

	line := func(left, mid, right string) {
		w.WriteString(left)
		for j, wd := range widths {
			if j > 0 {
				w.WriteString(mid)
			}
			w.WriteString(strings.Repeat("─", wd+2))
		}
		w.WriteString(right)
		w.WriteByte('\n')
	}
	row := func(cells []string, align func(j int) int) {
		w.WriteString("│")
		for j, s := range cells {
			if j > 0 {
				w.WriteString("│")
			}
			w.WriteByte(' ')
			w.WriteString(pad(s, widths[j], align(j)))
			w.WriteByte(' ')
		}
		w.WriteString("│\n")
	}
	center := func(int) int { return 0 }
	values := func(j int) int {
		if types[j].numeric() {
			return 1
		}
		return -1
	}
	line("┌", "┬", "┐")
	row(names, center)
	row(typeNames, center)
	if len(head) > 0 {
		line("├", "┼", "┤")
	}
	for _, cells := range head {
		row(cells, values)
	}
	if tail != nil {
		dots := make([]string, n)
		for j := range dots {
			dots[j] = "·"
		}
		for range 3 {
			row(dots, center)
		}
		for _, cells := range foot {
			row(cells, values)
		}
	}
	if note != "" {
		line("├", "┴", "┤")
		w.WriteString("│ ")
		w.WriteString(pad(note, inner-2, -1))
		w.WriteString(" │\n")
		w.WriteString("└" + strings.Repeat("─", inner) + "┘\n")
		return nil
	}
	line("└", "┴", "┘")
	return nil
}

// cell is a value's text in a table cell.
func (p Printer) cell(v any, t *sqlType) string {
	if v == nil {
		return "NULL"
	}
	return p.clip(escapeControl(valueText(v, t)))
}

// clip shortens s to MaxWidth columns, ending it in "…".
func (p Printer) clip(s string) string {
	if p.MaxWidth <= 0 || textWidth(s) <= p.MaxWidth {
		return s
	}
	var b strings.Builder
	wd := 0
	for _, r := range s {
		rw := runeWidth(r)
		if wd+rw > p.MaxWidth-1 {
			break
		}
		b.WriteRune(r)
		wd += rw
	}
	b.WriteString("…")
	return b.String()
}

// escapeControl writes control characters as the DuckDB shell does in a
// table: \n, \t, \r, ... and \x.. for the others.
func escapeControl(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r < 32 || r == 127 }) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 32 || r == 127:
			fmt.Fprintf(&b, `\x%02X`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// pad pads s to width columns: align < 0 left, 0 centered, > 0 right.
func pad(s string, width, align int) string {
	gap := width - textWidth(s)
	if gap <= 0 {
		return s
	}
	switch {
	case align < 0:
		return s + strings.Repeat(" ", gap)
	case align > 0:
		return strings.Repeat(" ", gap) + s
	}
	return strings.Repeat(" ", gap/2) + s + strings.Repeat(" ", gap-gap/2)
}

// textWidth is the width of s on a terminal: combining marks take none,
// East Asian wide characters and emoji two columns.
func textWidth(s string) int {
	if isASCII(s) {
		return len(s)
	}
	n := 0
	for _, r := range s {
		n += runeWidth(r)
	}
	return n
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func runeWidth(r rune) int {
	switch {
	case unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r) || r == 0x200B:
		return 0
	case r >= 0x1100 && r <= 0x115F, r >= 0x2E80 && r <= 0x303E, r >= 0x3041 && r <= 0x33FF,
		r >= 0x3400 && r <= 0x4DBF, r >= 0x4E00 && r <= 0x9FFF, r >= 0xA000 && r <= 0xA4CF,
		r >= 0xAC00 && r <= 0xD7A3, r >= 0xF900 && r <= 0xFAFF, r >= 0xFE30 && r <= 0xFE4F,
		r >= 0xFF00 && r <= 0xFF60, r >= 0xFFE0 && r <= 0xFFE6, r >= 0x1F300 && r <= 0x1F64F,
		r >= 0x1F900 && r <= 0x1F9FF, r >= 0x20000 && r <= 0x3FFFD:
		return 2
	}
	return 1
}
