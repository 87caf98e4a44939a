package formats_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/sovm/sop-pme/cmd/sop-pme/internal/formats"
	"github.com/sovm/sop-pme/internal/pqtypes"
	"github.com/sovm/sop-pme/internal/testkit/testtables"
)

func writeBytes(t *testing.T, b []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "in.parquet")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestParquetLegacyLists: a Parquet input in the
// list layouts of parquet-testing's old_list_structure,
// repeated_no_annotation and repeated_primitive_no_list, which import
// re-encodes, reads as pyarrow reads it: a list of lists (not a list of
// structs of "array"), elements that are not nullable.
func TestParquetLegacyLists(t *testing.T) {
	t.Parallel()
	schema, rows := readRows(t, writeBytes(t, testtables.LegacyLists()), formats.Parquet)
	elem := func(name string, dt arrow.DataType) arrow.Field { return arrow.Field{Name: name, Type: dt} }
	want := []arrow.DataType{
		arrow.ListOfField(elem("array", arrow.ListOfField(elem("array", arrow.PrimitiveTypes.Int32)))),
		arrow.ListOfField(elem("ints", arrow.PrimitiveTypes.Int32)),
		arrow.StructOf(elem("phone", arrow.ListOfField(elem("phone", arrow.StructOf(
			elem("number", arrow.PrimitiveTypes.Int64), arrow.Field{Name: "kind", Type: arrow.BinaryTypes.String, Nullable: true}))))),
	}
	for i, w := range want {
		if f := schema.Field(i); !arrow.TypeEqual(f.Type, w) {
			t.Errorf("%s: %v, want %v", f.Name, f.Type, w)
		}
	}
	const wantRows = `{"a":[[1,2],[3,4]],"ints":[7,8,9],"phones":{"phone":[{"number":5,"kind":"home"}]}}` + "\n"
	if rows != wantRows {
		t.Errorf("rows %s, want %s", rows, wantRows)
	}
}

// TestParquetTimestampsGeospatial (as in parquet-testing's files): INT96 and
// legacy timestamps read without a time zone, INT96 at microseconds, and
// GEOMETRY and GEOGRAPHY columns as the GeoArrow type that writes their
// logical type back, so that a re-encoded import keeps them.
func TestParquetTimestampsGeospatial(t *testing.T) {
	t.Parallel()
	schema, _ := readRows(t, writeBytes(t, testtables.Timestamps(nil)), formats.Parquet)
	for _, f := range schema.Fields() {
		if !arrow.TypeEqual(f.Type, &arrow.TimestampType{Unit: arrow.Microsecond}) {
			t.Errorf("%s: %v", f.Name, f.Type)
		}
	}
	schema, _ = readRows(t, writeBytes(t, testtables.Geospatial()), formats.Parquet)
	for _, f := range schema.Fields() {
		if _, ok := f.Type.(*pqtypes.GeoType); !ok {
			t.Errorf("%s: %v", f.Name, f.Type)
		}
	}
}
