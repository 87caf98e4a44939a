package formats

import (
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// csvDates converts the date columns of a CSV, which arrow-go's CSV
// reader reads as strings here, to date32. arrow-go parses each date with
// time.Parse, a fifth of reading TPC-H's lineitem (three date columns of
// sixteen); parseDate reads YYYY-MM-DD by hand, and gives anything else to
// time.Parse with arrow-go's layout, so that the dates accepted, their
// values and the errors are arrow-go's. A record with a value that is not a
// date fails the read (Err), as arrow-go's reader fails it.
type csvDates struct {
	array.RecordReader               // the CSV reader, dates as strings
	schema             *arrow.Schema // the dates as date32
	cols               map[int]bool  // the date columns
	mem                memory.Allocator
	name               string
	cur                arrow.RecordBatch
	err                error
}

func (c *csvDates) Schema() *arrow.Schema { return c.schema }

func (c *csvDates) Next() bool {
	c.release()
	if c.err != nil || !c.RecordReader.Next() {
		return false
	}
	rec := c.RecordReader.RecordBatch()
	cols := make([]arrow.Array, rec.NumCols())
	defer func() {
		for _, a := range cols {
			if a != nil {
				a.Release()
			}
		}
	}()
	for i, col := range rec.Columns() {
		if !c.cols[i] {
			col.Retain()
			cols[i] = col
			continue
		}
		a, err := toDate32(c.mem, col.(*array.String))
		if err != nil {
			c.err = fmt.Errorf("%w: %s: column %s: %v", ErrFormat, c.name, rec.ColumnName(i), err)
			return false
		}
		cols[i] = a
	}
	c.cur = array.NewRecordBatch(c.schema, cols, rec.NumRows())
	return true
}

func (c *csvDates) RecordBatch() arrow.RecordBatch { return c.cur }
func (c *csvDates) Record() arrow.RecordBatch      { return c.cur }

func (c *csvDates) Err() error {
	if c.err != nil {
		return c.err
	}
	return c.RecordReader.Err()
}

func (c *csvDates) release() {
	if c.cur != nil {
		c.cur.Release()
		c.cur = nil
	}
}

func (c *csvDates) Release() {
	c.release()
	c.RecordReader.Release()
}

// toDate32 parses the dates of s (nulls stay null).
func toDate32(mem memory.Allocator, s *array.String) (arrow.Array, error) {
	b := array.NewDate32Builder(mem)
	defer b.Release()
	b.Reserve(s.Len())
	for i := range s.Len() {
		if s.IsNull(i) {
			b.UnsafeAppendBoolToBitmap(false)
			continue
		}
		d, err := parseDate(s.Value(i))
		if err != nil {
			return nil, err
		}
		b.UnsafeAppend(d)
	}
	return b.NewArray(), nil
}

// parseDate parses a date as arrow-go's CSV reader does,
// time.Parse("2006-01-02", v), faster where v is YYYY-MM-DD of a valid
// day.
func parseDate(v string) (arrow.Date32, error) {
	if len(v) == 10 && v[4] == '-' && v[7] == '-' {
		y, ok1 := digits(v[0:4])
		m, ok2 := digits(v[5:7])
		d, ok3 := digits(v[8:10])
		if ok1 && ok2 && ok3 && m >= 1 && m <= 12 && d >= 1 && d <= daysIn(m, y) {
			return arrow.Date32FromTime(time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC)), nil
		}
	}
	t, err := time.Parse("2006-01-02", v)
	if err != nil {
		return 0, err
	}
	return arrow.Date32FromTime(t), nil
}

// digits parses s, ASCII digits only.
func digits(s string) (int, bool) {
	n := 0
	for i := range len(s) {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// daysIn returns the days of month m of year y (Gregorian, as time's).
func daysIn(m, y int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}
