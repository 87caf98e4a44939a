//go:build duckdb

package sqlout

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sovm/sop-pme/duckdb/sopsql"
)

// countingSource is a RowSource of n rows (i BIGINT, s VARCHAR) made as
// they are asked for, in one row slice it reuses, as Rows does. long, if
// set, is the s of row longAt.
type countingSource struct {
	n, next int
	row     []any
	long    string
	longAt  int
	err     error // returned after the n rows
}

func (s *countingSource) Columns() []sopsql.Column {
	return []sopsql.Column{{Name: "i", Type: "BIGINT"}, {Name: "s", Type: "VARCHAR"}}
}

func (s *countingSource) Next() bool {
	if s.next >= s.n {
		return false
	}
	if s.row == nil {
		s.row = make([]any, 2)
	}
	s.row[0], s.row[1] = int64(s.next), fmt.Sprintf("r%d", s.next%10)
	if s.long != "" && s.next == s.longAt {
		s.row[1] = s.long
	}
	s.next++
	return true
}

func (s *countingSource) Row() []any { return s.row }
func (s *countingSource) Err() error { return s.err }

// result returns the rows of a countingSource like src as a Result.
func (s *countingSource) result() *sopsql.Result {
	c := &countingSource{n: s.n, long: s.long, longAt: s.longAt}
	r := &sopsql.Result{Columns: c.Columns()}
	for c.Next() {
		r.Rows = append(r.Rows, []any{c.row[0], c.row[1]})
	}
	return r
}

// firstWrite is a writer that records how many rows its source had made
// when the first bytes arrived.
type firstWrite struct {
	bytes.Buffer
	src   *countingSource
	first int // -1: nothing written yet
}

func (w *firstWrite) Write(p []byte) (int, error) {
	if w.first < 0 {
		w.first = w.src.next
	}
	return w.Buffer.Write(p)
}

// TestPrintRowsStreams: PrintRows writes CSV, JSON and a table of every row
// while the rows still come, a table once the first tableWidthRows rows
// have set its widths; a table with MaxRows holds only the rows it shows.
// Each prints what Print prints for the same rows as a Result, although the
// source reuses its row slice.
func TestPrintRowsStreams(t *testing.T) {
	t.Parallel()
	const n = 50_000
	for _, c := range []struct {
		p         Printer
		streams   bool
		firstMost int // the most rows made before the first write
	}{
		{Printer{Format: CSV}, true, 1000},
		{Printer{Format: JSON}, true, 5000}, // 64 KiB of JSON at a time
		{Printer{Format: Table}, true, tableWidthRows + 1 + 200},
		{Printer{Format: Table, MaxRows: 40}, false, n},
		{Printer{Format: Table, MaxRows: 7}, false, n},
	} {
		t.Run(fmt.Sprintf("%v/max-rows=%d", c.p.Format, c.p.MaxRows), func(t *testing.T) {
			src := &countingSource{n: n}
			w := &firstWrite{src: src, first: -1}
			if err := c.p.PrintRows(w, src); err != nil {
				t.Fatal(err)
			}
			if w.first < 0 || w.first > c.firstMost || (c.streams && w.first >= n) {
				t.Errorf("the first bytes came after %d of %d rows, want at most %d", w.first, n, c.firstMost)
			}
			var want bytes.Buffer
			if err := c.p.Print(&want, src.result()); err != nil {
				t.Fatal(err)
			}
			if w.String() != want.String() {
				t.Errorf("PrintRows and Print differ:\n%.2000s\nwant:\n%.2000s", w.String(), want.String())
			}
		})
	}
}

// TestPrintTableWidths: a table of every row takes its column widths from
// the first tableWidthRows rows; a wider value after them is printed whole,
// and pushes the rest of its own row only.
func TestPrintTableWidths(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("long value ", 5)
	src := &countingSource{n: tableWidthRows + 500, long: long, longAt: tableWidthRows + 100}
	var b bytes.Buffer
	if err := (Printer{Format: Table}).PrintRows(&b, src); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 4+src.n+1 {
		t.Fatalf("%d lines, want %d", len(lines), 4+src.n+1)
	}
	width := len([]rune(lines[0]))
	for i, l := range lines {
		row := i - 4 // the rows start after the top, the names, the types and a line
		got := len([]rune(l))
		switch {
		case row == src.longAt:
			// The column is as wide as its widest text in the first
			// rows, its type's name.
			if wider := len(long) - len("varchar"); !strings.Contains(l, long) || got != width+wider {
				t.Errorf("line %d: %q, want the whole value, %d columns wider", i, l, wider)
			}
		case got != width:
			t.Errorf("line %d is %d columns wide, want %d: %q", i, got, width, l)
		}
	}
	// The same rows within tableWidthRows: the table fits the long value.
	src = &countingSource{n: 500, long: long, longAt: 100}
	b.Reset()
	if err := (Printer{Format: Table}).PrintRows(&b, src); err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		if got, want := len([]rune(l)), len([]rune(strings.SplitN(b.String(), "\n", 2)[0])); got != want {
			t.Fatalf("line %d is %d columns wide, want %d", i, got, want)
		}
	}
}

// TestPrintRowsError: a source's error is returned; a table whose rows
// fail before it is sized prints nothing.
func TestPrintRowsError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	for _, p := range []Printer{{Format: Table}, {Format: Table, MaxRows: 10}, {Format: CSV}, {Format: JSON}} {
		var b bytes.Buffer
		err := p.PrintRows(&b, &countingSource{n: 20, err: boom})
		if !errors.Is(err, boom) {
			t.Errorf("%v: %v, want the source's error", p.Format, err)
		}
		if p.Format == Table && b.Len() != 0 {
			t.Errorf("%v, max rows %d: printed a table of failed rows:\n%s", p.Format, p.MaxRows, b.String())
		}
	}
}
