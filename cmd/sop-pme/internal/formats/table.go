package formats

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/sovm/sop-pme/internal/rowjson"
)

// Table is an output format for terminals, not an interchange format: a box
// of the first rows, as the duckdb shell draws one. It is written by
// NewTable, not NewOutput, and never read.
const Table Format = "table"

// maxCell is the widest cell a table shows, in characters; longer values
// are cut with an ellipsis.
const maxCell = 40

// A TableOutput draws the first rows it is given as a box. Close draws it.
type TableOutput struct {
	w      io.Writer
	schema *arrow.Schema
	limit  int64
	rows   [][]string
	right  []bool
	total  int64
	// More says that the rows given are not all the table's rows.
	More bool
}

// NewTable returns an Output that draws the first limit rows of schema's
// records as a box on w, with each column's name and type, and the number
// of rows it was given below. Nested values are shown as JSON text.
func NewTable(w io.Writer, schema *arrow.Schema, limit int64) *TableOutput {
	t := &TableOutput{w: w, schema: schema, limit: limit, right: make([]bool, schema.NumFields())}
	for i, f := range schema.Fields() {
		t.right[i] = arrow.IsInteger(f.Type.ID()) || arrow.IsFloating(f.Type.ID()) || arrow.IsDecimal(f.Type.ID())
	}
	return t
}

// Write adds rec's rows, keeping the first limit.
func (t *TableOutput) Write(rec arrow.RecordBatch) error {
	var buf []byte
	for i := int64(0); i < rec.NumRows() && int64(len(t.rows)) < t.limit; i++ {
		row := make([]string, rec.NumCols())
		for j, col := range rec.Columns() {
			switch {
			case col.IsNull(int(i)):
				row[j] = "NULL"
			case isNested(col.DataType()):
				var err error
				if buf, err = rowjson.AppendValue(buf[:0], col, int(i)); err != nil {
					return err
				}
				row[j] = string(buf)
			default:
				row[j] = col.ValueStr(int(i))
			}
			row[j] = cut(strings.ReplaceAll(row[j], "\n", "\\n"))
		}
		t.rows = append(t.rows, row)
	}
	t.total += rec.NumRows()
	return nil
}

func isNested(dt arrow.DataType) bool {
	_, ok := dt.(arrow.NestedType)
	return ok
}

func cut(s string) string {
	if utf8.RuneCountInString(s) <= maxCell {
		return s
	}
	r := []rune(s)
	return string(r[:maxCell-1]) + "…"
}

// Total returns the number of rows given to Write.
func (t *TableOutput) Total() int64 { return t.total }

// Close draws the table.
func (t *TableOutput) Close() error {
	n := t.schema.NumFields()
	head := [2][]string{make([]string, n), make([]string, n)}
	width := make([]int, n)
	for i, f := range t.schema.Fields() {
		head[0][i], head[1][i] = cut(f.Name), cut(f.Type.String())
		width[i] = max(utf8.RuneCountInString(head[0][i]), utf8.RuneCountInString(head[1][i]))
	}
	for _, row := range t.rows {
		for i, c := range row {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	rule := func(l, m, r string) {
		b.WriteString(l)
		for i, w := range width {
			if i > 0 {
				b.WriteString(m)
			}
			b.WriteString(strings.Repeat("─", w+2))
		}
		b.WriteString(r + "\n")
	}
	line := func(cells []string, align func(i int) int) {
		for i, c := range cells {
			pad := width[i] - utf8.RuneCountInString(c)
			left := 0
			switch align(i) {
			case 1:
				left = pad
			case 2:
				left = pad / 2
			}
			b.WriteString("│ " + strings.Repeat(" ", left) + c + strings.Repeat(" ", pad-left) + " ")
		}
		b.WriteString("│\n")
	}
	center := func(int) int { return 2 }
	rule("┌", "┬", "┐")
	line(head[0], center)
	line(head[1], center)
	rule("├", "┼", "┤")
	for _, row := range t.rows {
		line(row, func(i int) int {
			if t.right[i] {
				return 1
			}
			return 0
		})
	}
	rule("└", "┴", "┘")
	switch {
	case int64(len(t.rows)) < t.total:
		fmt.Fprintf(&b, "%d rows (%d shown)\n", t.total, len(t.rows))
	case t.More:
		fmt.Fprintf(&b, "the first %d rows (more with --limit)\n", t.total)
	default:
		fmt.Fprintf(&b, "%d rows\n", t.total)
	}
	_, err := io.WriteString(t.w, b.String())
	return err
}
