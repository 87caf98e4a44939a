//go:build duckdb

package sqlout

import (
	"bufio"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sovm/sop-pme/duckdb/sopsql"
)

// tableWidthRows is how many rows set the column widths of a table that
// shows every row (MaxRows 0): the table is printed from there on a row at
// a time, and a later value wider than its column is not cut (MaxWidth
// aside): it pushes the rest of its row to the right.
const tableWidthRows = 1000

// table writes the box-drawn table of the DuckDB shell: every row, or with
// MaxRows the first and last halves of MaxRows and a count of all. It
// holds at most MaxRows rows, or tableWidthRows.
func (p Printer) table(w *bufio.Writer, src RowSource) error {
	cols := src.Columns()
	if len(cols) == 0 {
		return nil
	}
	t := tableWriter{p: p, w: w, cols: cols, types: columnTypes(cols)}
	if p.MaxRows > 0 {
		return t.cut(src)
	}
	var head [][]any
	for len(head) < tableWidthRows && src.Next() {
		head = append(head, slices.Clone(src.Row()))
	}
	more := len(head) == tableWidthRows && src.Next()
	if err := src.Err(); err != nil {
		return err
	}
	cells := t.render(head)
	note := ""
	if len(head) == 0 {
		note = "0 rows"
	}
	t.layout(note, cells)
	t.top(len(cells) > 0)
	for _, c := range cells {
		t.row(c, t.values)
	}
	for ; more; more = src.Next() {
		t.row(t.render([][]any{src.Row()})[0], t.values)
	}
	t.bottom(note)
	return nil
}

// cut writes the table of at most MaxRows rows: all of them, or the first
// and last MaxRows/2 (at least 1) and a count of all.
func (t *tableWriter) cut(src RowSource) error {
	half := max(t.p.MaxRows/2, 1)
	// head: the first rows; tail, once there are more than MaxRows, a ring
	// of the last half rows, the oldest at next.
	var head, tail [][]any
	next, n := 0, 0
	for ; src.Next(); n++ {
		row := slices.Clone(src.Row())
		if n < t.p.MaxRows {
			head = append(head, row)
			continue
		}
		if tail == nil {
			tail = slices.Clone(head[len(head)-half:])
			head = head[:half]
		}
		tail[next] = row
		next = (next + 1) % half
	}
	if err := src.Err(); err != nil {
		return err
	}
	tail = append(tail[next:], tail[:next]...)
	var note string
	switch {
	case tail != nil:
		note = fmt.Sprintf("%d rows (%d shown)", n, len(head)+len(tail))
	case n == 0:
		note = "0 rows"
	}
	hc, tc := t.render(head), t.render(tail)
	t.layout(note, hc, tc)
	t.top(len(hc) > 0)
	for _, c := range hc {
		t.row(c, t.values)
	}
	if tail != nil {
		dots := make([]string, len(t.cols))
		for j := range dots {
			dots[j] = "·"
		}
		for range 3 {
			t.row(dots, t.center)
		}
		for _, c := range tc {
			t.row(c, t.values)
		}
	}
	t.bottom(note)
	return nil
}

// tableWriter writes the parts of a table.
type tableWriter struct {
	p      Printer
	w      *bufio.Writer
	cols   []sopsql.Column
	types  []*sqlType
	names  []string
	tnames []string
	widths []int
	inner  int // the width between the outer borders
}

// render returns the cells of rows.
func (t *tableWriter) render(rows [][]any) [][]string {
	out := make([][]string, len(rows))
	for i, row := range rows {
		out[i] = make([]string, len(t.cols))
		for j, v := range row {
			out[i][j] = t.p.cell(v, t.types[j])
		}
	}
	return out
}

// layout sets the column widths from the names, the types, the cells and
// the note under the table.
func (t *tableWriter) layout(note string, cells ...[][]string) {
	n := len(t.cols)
	t.names, t.tnames, t.widths = make([]string, n), make([]string, n), make([]int, n)
	for j, c := range t.cols {
		t.names[j] = t.p.clip(escapeControl(c.Name))
		t.tnames[j] = t.p.clip(t.types[j].display())
		t.widths[j] = max(textWidth(t.names[j]), textWidth(t.tnames[j]), 1)
	}
	for _, rows := range cells {
		for _, row := range rows {
			for j, s := range row {
				t.widths[j] = max(t.widths[j], textWidth(s))
			}
		}
	}
	t.inner = 3*n - 1 // between the outer borders: " x │ y "
	for _, wd := range t.widths {
		t.inner += wd
	}
	if need := textWidth(note) + 2; need > t.inner {
		t.widths[n-1] += need - t.inner
		t.inner = need
	}
}

func (t *tableWriter) line(left, mid, right string) {
	t.w.WriteString(left)
	for j, wd := range t.widths {
		if j > 0 {
			t.w.WriteString(mid)
		}
		t.w.WriteString(strings.Repeat("─", wd+2))
	}
	t.w.WriteString(right)
	t.w.WriteByte('\n')
}

func (t *tableWriter) row(cells []string, align func(j int) int) {
	t.w.WriteString("│")
	for j, s := range cells {
		if j > 0 {
			t.w.WriteString("│")
		}
		t.w.WriteByte(' ')
		t.w.WriteString(pad(s, t.widths[j], align(j)))
		t.w.WriteByte(' ')
	}
	t.w.WriteString("│\n")
}

func (t *tableWriter) center(int) int { return 0 }

func (t *tableWriter) values(j int) int {
	if t.types[j].numeric() {
		return 1
	}
	return -1
}

// top writes the header: the names and types, and the line under them when
// rows follow.
func (t *tableWriter) top(rows bool) {
	t.line("┌", "┬", "┐")
	t.row(t.names, t.center)
	t.row(t.tnames, t.center)
	if rows {
		t.line("├", "┼", "┤")
	}
}

// bottom closes the table, with the note if there is one.
func (t *tableWriter) bottom(note string) {
	if note == "" {
		t.line("└", "┴", "┘")
		return
	}
	t.line("├", "┴", "┤")
	t.w.WriteString("│ ")
	t.w.WriteString(pad(note, t.inner-2, -1))
	t.w.WriteString(" │\n")
	t.w.WriteString("└" + strings.Repeat("─", t.inner) + "┘\n")
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
