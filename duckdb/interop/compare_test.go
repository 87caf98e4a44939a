package interop

import (
	"bytes"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/duckdb/duckdb-go/v2"
	"github.com/sovm/sop-pme/duckdb/internal/ducktest"
)

// duckValue returns element i of arr as duckdb-go returns the value DuckDB
// reads from the Parquet column arr was written to: Go integers and floats
// of the same width, string, []byte, bool, duckdb.Decimal, time.Time (UTC),
// []any for lists, map[string]any for structs, duckdb.OrderedMap for maps
// (entries in their written order), and nil
// for null.
//
// One conversion is lossy by DuckDB's design: a Parquet TIMESTAMP(NANOS)
// with isAdjustedToUTC (Arrow timestamp[ns, tz]) is read as TIMESTAMP WITH
// TIME ZONE, whose unit is the microsecond, truncated toward zero (as
// DuckDB 1.5.6 reads it, plaintext or encrypted).
func duckValue(arr arrow.Array, i int) any {
	if arr.IsNull(i) {
		return nil
	}
	switch a := arr.(type) {
	case *array.Int8:
		return a.Value(i)
	case *array.Int16:
		return a.Value(i)
	case *array.Int32:
		return a.Value(i)
	case *array.Int64:
		return a.Value(i)
	case *array.Uint8:
		return a.Value(i)
	case *array.Uint16:
		return a.Value(i)
	case *array.Uint32:
		return a.Value(i)
	case *array.Uint64:
		return a.Value(i)
	case *array.Float32:
		return a.Value(i)
	case *array.Float64:
		return a.Value(i)
	case *array.Boolean:
		return a.Value(i)
	case *array.String:
		return a.Value(i)
	case *array.Binary:
		return bytes.Clone(a.Value(i))
	case *array.FixedSizeBinary:
		return bytes.Clone(a.Value(i))
	case *array.Decimal128:
		dt := a.DataType().(*arrow.Decimal128Type)
		return duckdb.Decimal{Width: uint8(dt.Precision), Scale: uint8(dt.Scale), Value: a.Value(i).BigInt()}
	case *array.Date32:
		return a.Value(i).ToTime()
	case *array.Timestamp:
		dt := a.DataType().(*arrow.TimestampType)
		v := int64(a.Value(i))
		if dt.Unit == arrow.Nanosecond && dt.TimeZone != "" {
			return time.UnixMicro(v / 1000).UTC() // Go's / truncates toward zero
		}
		return a.Value(i).ToTime(dt.Unit)
	case *array.Map: // before *array.List, which it embeds
		start, end := a.ValueOffsets(i)
		var m duckdb.OrderedMap
		for j := start; j < end; j++ {
			m.Set(duckValue(a.Keys(), int(j)), duckValue(a.Items(), int(j)))
		}
		return m
	case *array.List:
		start, end := a.ValueOffsets(i)
		out := make([]any, 0, end-start)
		for j := start; j < end; j++ {
			out = append(out, duckValue(a.ListValues(), int(j)))
		}
		return out
	case *array.Struct:
		m := map[string]any{}
		for k, f := range a.DataType().(*arrow.StructType).Fields() {
			m[f.Name] = duckValue(a.Field(k), i)
		}
		return m
	}
	panic("interop: no DuckDB value for " + arr.DataType().String())
}

// compareRows checks DuckDB's rows against rec value by value, one subtest
// per column, and reports up to 5 mismatches per column with the column,
// the row, the value written and the value read.
func compareRows(t *testing.T, rec arrow.RecordBatch, got [][]any) {
	t.Helper()
	if int64(len(got)) != rec.NumRows() {
		t.Fatalf("DuckDB returned %d rows, wrote %d", len(got), rec.NumRows())
	}
	for c, f := range rec.Schema().Fields() {
		t.Run(f.Name, func(t *testing.T) {
			col := rec.Column(c)
			bad := 0
			for row := range got {
				want, g := duckValue(col, row), got[row][c]
				if ducktest.SameValue(want, g) {
					continue
				}
				if bad++; bad <= 5 {
					t.Errorf("column %s row %d: want %s, got %s", f.Name, row, ducktest.Show(want), ducktest.Show(g))
				}
			}
			if bad > 5 {
				t.Errorf("column %s: %d rows differ in all", f.Name, bad)
			}
		})
	}
}
