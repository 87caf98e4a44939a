package formats_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sovm/sop-pme/cmd/sop-pme/internal/formats"
)

// readAll opens the text as a file of format f with a record limit and
// reads every row; it returns the rows and the error.
func readAll(t *testing.T, f formats.Format, text string, limit int64) (int64, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "in")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	in, err := formats.Open(context.Background(), path, formats.InputOptions{Format: f, MaxRecordBytes: limit})
	if err != nil {
		return 0, err
	}
	defer in.Close()
	var rows int64
	for in.Next() {
		rows += in.RecordBatch().NumRows()
	}
	return rows, in.Err()
}

// TestRecordLimit: a CSV record or NDJSON line longer than the limit fails
// the read with ErrRecordTooLong (and ErrFormat), in the rows that decide
// the types or after them, and one of exactly the limit reads; a quoted
// CSV field's newlines and doubled quotes do not end or confuse a record.
// Before, one 200 MB CSV cell was read whole, at 2.5 GiB of peak RSS.
func TestRecordLimit(t *testing.T) {
	t.Parallel()
	const limit = 100
	pad := func(prefix string, n int) string { return prefix + strings.Repeat("x", n-len(prefix)) }
	many := strings.Repeat("1,a\n", formats.SampleRows+10)
	for _, tc := range []struct {
		name string
		f    formats.Format
		text string
		rows int64 // -1: ErrRecordTooLong
	}{
		{"csv at the limit", formats.CSV, "id,s\n" + pad("1,", limit) + "\n", 1},
		{"csv past the limit", formats.CSV, "id,s\n" + pad("1,", limit+1) + "\n", -1},
		{"csv header past the limit", formats.CSV, pad("id,s", limit+1) + "\n1,a\n", -1},
		{"csv quoted newlines at the limit", formats.CSV, "id,s\n" + pad("1,\"a\n\"\"b\n", limit-1) + "\"\n", 1},
		{"csv quoted newlines past the limit", formats.CSV, "id,s\n" + pad("1,\"a\n\"\"b\n", limit) + "\"\n", -1},
		{"csv past the limit after the sample", formats.CSV, "id,s\n" + many + pad("2,", limit+1) + "\n", -1},
		{"ndjson at the limit", formats.NDJSON, pad(`{"s":"`, limit-2) + "\"}\n", 1},
		{"ndjson past the limit", formats.NDJSON, pad(`{"s":"`, limit-1) + "\"}\n", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows, err := readAll(t, tc.f, tc.text, limit)
			if tc.rows < 0 {
				if !errors.Is(err, formats.ErrRecordTooLong) || !errors.Is(err, formats.ErrFormat) {
					t.Fatalf("%d rows, %v; want ErrRecordTooLong", rows, err)
				}
				t.Logf("%v", err)
				return
			}
			if err != nil || rows != tc.rows {
				t.Fatalf("%d rows, %v; want %d rows", rows, err, tc.rows)
			}
		})
	}
	if rows, err := readAll(t, formats.CSV, "id,s\n"+many, 0); err != nil || rows != formats.SampleRows+10 {
		t.Errorf("the default limit: %d rows, %v", rows, err)
	}
}
