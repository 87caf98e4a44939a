package formats

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	arrowcsv "github.com/apache/arrow-go/v18/arrow/csv"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestParseDate: parseDate accepts exactly what arrow-go's CSV reader
// accepts as a date (time.Parse with its layout), with the same value,
// and refuses the rest with time.Parse's error.
func TestParseDate(t *testing.T) {
	t.Parallel()
	cases := []string{"2024-02-29", "2023-02-29", "1900-02-29", "2000-02-29", "0000-01-01", "9999-12-31",
		"2024-13-01", "2024-00-10", "2024-04-31", "2024-04-30", "2024-1-01", "+024-01-01", "2024-01-01 ",
		"2024/01/01", "", "x", "1970-01-01", "1969-12-31", "2024-01-001", "２０２４-01-01"}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 20000 {
		cases = append(cases, fmt.Sprintf("%04d-%02d-%02d", rng.IntN(10000), rng.IntN(14), rng.IntN(33)))
	}
	for _, v := range cases {
		got, err := parseDate(v)
		tm, werr := time.Parse("2006-01-02", v)
		if (err != nil) != (werr != nil) || (err != nil && err.Error() != werr.Error()) {
			t.Fatalf("%q: error %v, time.Parse's %v", v, err, werr)
		}
		if err == nil && got != arrow.Date32FromTime(tm) {
			t.Fatalf("%q: %v, want %v", v, got, arrow.Date32FromTime(tm))
		}
	}
}

// TestCSVDates: a CSV's date columns read as arrow-go's CSV reader reads
// them (values and nulls), and a date that is not one, after the rows that
// decide the types, fails the read naming it.
func TestCSVDates(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("id,d,s\n")
	for i := range 3000 {
		d := time.Date(1992, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, i*7).Format(time.DateOnly)
		if i%11 == 0 {
			d = ""
		}
		fmt.Fprintf(&b, "%d,%s,x%d\n", i, d, i)
	}
	in, err := OpenStream(context.Background(), strings.NewReader(b.String()), "t.csv", InputOptions{Format: CSV, BatchRows: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	schema := in.Schema()
	if schema.Field(1).Type.ID() != arrow.DATE32 {
		t.Fatalf("d is %s", schema.Field(1).Type)
	}
	want := arrowcsv.NewReader(strings.NewReader(b.String()), schema, arrowcsv.WithHeader(true), arrowcsv.WithChunk(1000),
		arrowcsv.WithNullReader(true, ""), arrowcsv.WithAllocator(memory.DefaultAllocator))
	defer want.Release()
	n := 0
	for in.Next() {
		if !want.Next() {
			t.Fatal("more records than arrow-go's reader")
		}
		if !array.RecordEqual(in.RecordBatch(), want.RecordBatch()) {
			t.Fatalf("record %d differs from arrow-go's", n)
		}
		n++
	}
	if err := in.Err(); err != nil || want.Next() || n != 3 {
		t.Fatalf("%d records, %v", n, err)
	}

	late := "d\n" + strings.Repeat("2024-01-02\n", SampleRows+5) + "2024-02-30\n"
	in2, err := OpenStream(context.Background(), strings.NewReader(late), "late.csv", InputOptions{Format: CSV})
	if err != nil {
		t.Fatal(err)
	}
	defer in2.Close()
	for in2.Next() {
	}
	if err := in2.Err(); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "day out of range") || !strings.Contains(err.Error(), "late.csv") {
		t.Errorf("a late bad date: %v", err)
	}
}

// FuzzParseDate: parseDate, a parser of the CSV's bytes, agrees with
// time.Parse (arrow-go's rule) on every input: the same error text or the
// same day.
func FuzzParseDate(f *testing.F) {
	for _, s := range []string{"2024-02-29", "2023-02-29", "0000-01-01", "9999-12-31", "2024-1-01", "+024-01-01", "", "２０２４-01-01"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		got, err := parseDate(v)
		tm, werr := time.Parse("2006-01-02", v)
		if (err != nil) != (werr != nil) || (err != nil && err.Error() != werr.Error()) {
			t.Fatalf("%q: error %v, time.Parse's %v", v, err, werr)
		}
		if err == nil && got != arrow.Date32FromTime(tm) {
			t.Fatalf("%q: %v, want %v", v, got, arrow.Date32FromTime(tm))
		}
	})
}
