package reader_test

import (
	"context"
	"os"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/writer"
)

// TestPyarrowArrowTypes: a file pyarrow 26 wrote
// (testdata/pyarrow/gen.py), sealed byte for byte, reads back in the Arrow
// types pyarrow stored in ARROW:schema where they refine the Parquet ones
// (durations, which arrow-go cannot write itself, a time zone, large
// offsets, a dictionary, date64, decimal256), and in the Parquet types
// where they do not (a dictionary with 8-bit indices, a string view).
func TestPyarrowArrowTypes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f, err := os.Open("testdata/pyarrow/arrowtypes.parquet")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	st := newMemStore()
	obj, err := writer.SealFile(ctx, st, f, fi.Size(), writer.WithAssignFieldIDs())
	if err != nil {
		t.Fatal(err)
	}
	r, err := reader.Open(ctx, st, obj.StorageID, keys{obj.StorageID: obj.DEK})
	if err != nil {
		t.Fatal(err)
	}
	str := arrow.BinaryTypes.String
	want := map[string]arrow.DataType{
		"dur_s":  &arrow.DurationType{Unit: arrow.Second},
		"dur_ms": &arrow.DurationType{Unit: arrow.Millisecond},
		"dur_us": &arrow.DurationType{Unit: arrow.Microsecond},
		"dur_ns": &arrow.DurationType{Unit: arrow.Nanosecond},
		"paris":  &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "Europe/Paris"},
		"ls":     arrow.BinaryTypes.LargeString,
		"lbin":   arrow.BinaryTypes.LargeBinary,
		"dict32": &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: str},
		"dict8":  str,
		"d64":    arrow.FixedWidthTypes.Date64,
		"dec256": &arrow.Decimal256Type{Precision: 20, Scale: 2},
		"sview":  str,
	}
	schema := r.Schema()
	for name, w := range want {
		f, ok := schema.FieldsByName(name)
		if !ok || !arrow.TypeEqual(f[0].Type, w) {
			t.Errorf("%s: %v, want %v", name, f, w)
		}
	}
	if ll, ok := schema.FieldsByName("ll"); !ok || ll[0].Type.ID() != arrow.LARGE_LIST || ll[0].Type.(*arrow.LargeListType).Elem().ID() != arrow.INT64 {
		t.Errorf("ll: %v", ll)
	}
	cols := readAll(t, r)
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	col := func(name string) arrow.Array { return cols[schema.FieldIndices(name)[0]] }
	for i := range 20 {
		for name, v := range map[string]int64{"dur_s": int64(i - 5), "dur_ms": int64(i*1000 - 5), "dur_us": int64(i) * 1e6, "dur_ns": -int64(i) * 1e9} {
			d := col(name).(*array.Duration)
			if i == 3 != d.IsNull(i) || i != 3 && int64(d.Value(i)) != v {
				t.Errorf("%s[%d] = %s, want %d", name, i, d.ValueStr(i), v)
			}
		}
	}
	if got := col("ls").(*array.LargeString).Value(7); got != "large 7" {
		t.Errorf("ls[7] = %q", got)
	}
	if got := col("d64").(*array.Date64).Value(2).ToTime().Format("2006-01-02"); got != "2000-01-03" {
		t.Errorf("d64[2] = %s", got)
	}
}
