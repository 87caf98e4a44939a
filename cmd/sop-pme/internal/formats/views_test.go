package formats_test

import (
	"os"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/sovm/sop-pme/cmd/sop-pme/internal/formats"
	"github.com/sovm/sop-pme/internal/testkit/testtables"
)

// TestArrowViews: Arrow IPC files and streams that
// pyarrow 26 wrote with string_view, binary_view, list_view and
// large_list_view columns (testdata/pyarrow/gen.py) read as string,
// binary, list and large_list, the forms Parquet holds, with the values
// pyarrow wrote.
func TestArrowViews(t *testing.T) {
	t.Parallel()
	want, err := os.ReadFile("testdata/pyarrow/views.json")
	if err != nil {
		t.Fatal(err)
	}
	elem := func(dt arrow.DataType) arrow.Field { return arrow.Field{Name: "element", Type: dt, Nullable: true} }
	types := []arrow.DataType{
		arrow.BinaryTypes.String,
		arrow.BinaryTypes.Binary,
		arrow.ListOfField(elem(arrow.PrimitiveTypes.Int32)),
		// arrow.TypeEqual compares a large list's element field whole,
		// metadata included.
		arrow.LargeListOfField(arrow.Field{Name: "element", Type: arrow.BinaryTypes.String, Nullable: true,
			Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{"6"})}),
		arrow.StructOf(arrow.Field{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true}),
	}
	for _, tc := range []struct {
		file string
		f    formats.Format
	}{{"views.arrow", formats.ArrowFile}, {"views.arrows", formats.ArrowStream}} {
		schema, rows := readRows(t, "testdata/pyarrow/"+tc.file, tc.f)
		for i, w := range types {
			if f := schema.Field(i); !arrow.TypeEqual(f.Type, w) {
				t.Errorf("%s %s: %v, want %v", tc.file, f.Name, f.Type, w)
			}
			if v, _ := schema.Field(i).Metadata.GetValue("PARQUET:field_id"); v == "" {
				t.Errorf("%s %s: the field ID is lost", tc.file, schema.Field(i).Name)
			}
		}
		if rows != string(want) {
			t.Errorf("%s: rows\n%s\nwant\n%s", tc.file, rows, want)
		}
	}
}

// TestOutputArrowTypes: export writes every type the reader returns in
// every format: the types of testtables.ArrowTypes, durations and times
// included (arrow-go's CSV writer panicked on durations, times and
// dictionaries, and pqarrow writes no durations: they go as INT64, values
// equal).
func TestOutputArrowTypes(t *testing.T) {
	t.Parallel()
	var g testtables.FieldIDs
	fields := append([]arrow.Field(nil), testtables.ArrowTypes().Fields()...)
	g.Last = 1000
	fields = append(fields, g.Field("dur", &arrow.DurationType{Unit: arrow.Millisecond}),
		g.Field("st_dur", arrow.StructOf(g.Field("d", &arrow.DurationType{Unit: arrow.Second}))))
	schema := arrow.NewSchema(fields, nil)
	rec := testtables.Record(schema, 200, 3)
	defer rec.Release()
	for _, f := range formats.All {
		path := writeFile(t, f, rec)
		if f != formats.Parquet {
			continue
		}
		got, _ := readRows(t, path, f)
		for _, name := range []string{"dur", "st_dur"} {
			fd, _ := got.FieldsByName(name)
			if len(fd) != 1 || !strings.Contains(fd[0].Type.String(), "int64") {
				t.Errorf("%s written as %v", name, fd)
			}
		}
	}
}
