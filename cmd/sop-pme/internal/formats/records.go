package formats

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// MaxRecordBytes is the longest CSV record or NDJSON line an import reads,
// by default (InputOptions.MaxRecordBytes): 8 MiB. A record is held whole
// by the CSV or JSON parser, again as Arrow values, then as the encoder's
// page, its compressed form and its modules, about twelve times its size in
// all (one 200 MB CSV cell took 2.5 GiB), which the import's bound of two
// row groups plus 128 MiB leaves no room for beyond a few MiB. DuckDB's CSV
// reader stops at 2 MB (max_line_size) by default.
const MaxRecordBytes = 8 << 20

// ErrRecordTooLong reports a CSV record or NDJSON line longer than the
// limit (InputOptions.MaxRecordBytes). Errors that match it match
// ErrFormat too.
var ErrRecordTooLong = errors.New("formats: record too long")

// recordGuard passes the bytes of a CSV or NDJSON input through and fails
// once a record runs longer than max bytes, before a parser holds it: a
// newline ends a record, outside double quotes in CSV (where a quoted
// field may hold newlines, and "" inside one is a quote, which toggles the
// state twice).
type recordGuard struct {
	r       io.Reader
	name    string
	kind    string // "CSV record" or "NDJSON line"
	quotes  bool   // CSV: newlines inside quotes do not end a record
	max     int64
	run     int64 // bytes of the current record so far
	records int64 // records ended so far
	inQuote bool
	err     error
}

func newRecordGuard(r io.Reader, name string, f Format, max int64) *recordGuard {
	g := &recordGuard{r: r, name: name, kind: "NDJSON line", max: max}
	if f == CSV {
		g.kind, g.quotes = "CSV record", true
	}
	if g.max <= 0 {
		g.max = MaxRecordBytes
	}
	return g
}

func (g *recordGuard) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	n, err := g.r.Read(p)
	stops := "\n"
	if g.quotes {
		stops = "\"\n"
	}
	// From one quote or newline to the next: the bytes between only
	// lengthen the record (a byte at a time, this loop took a seventh of
	// reading a CSV).
	for i := 0; i < n; {
		j := bytes.IndexAny(p[i:n], stops)
		if j < 0 {
			j = n - i
		}
		if g.run+int64(j) > g.max {
			return g.tooLong(i + int(g.max-g.run))
		}
		g.run += int64(j)
		if i += j; i == n {
			break
		}
		switch p[i] {
		case '"':
			g.inQuote = !g.inQuote
		case '\n':
			if !g.inQuote {
				g.run = 0
				g.records++
				i++
				continue
			}
		}
		if g.run++; g.run > g.max {
			return g.tooLong(i)
		}
		i++
	}
	return n, err
}

// tooLong fails the read at byte i of the buffer, where the record passed
// the limit.
func (g *recordGuard) tooLong(i int) (int, error) {
	g.err = fmt.Errorf("%w: %w: %s: %s %d is longer than %d bytes: import holds a record whole, several times over, and the reader returns a value in one batch; split the value, or import it from Parquet or Arrow", ErrFormat, ErrRecordTooLong, g.name, g.kind, g.records+1, g.max)
	return i, g.err
}
