package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/sovm/sop-pme/internal/testkit/testtables"
)

// TestImportInt96Range (parquet-testing's int96_from_spark.parquet):
// INT96 values that fit microseconds (9999-12-31, 200,000 BC) import,
// export and read back at microseconds without a time zone; a file with a
// value beyond the microsecond range is refused by import, sealed or
// re-encoded, and leaves no object, rather than acknowledged and
// unreadable.
func TestImportInt96Range(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := t.TempDir()
	vals := []parquet.Int96{
		testtables.Int96(testtables.Int96Epoch+2_932_896, 0),  // 9999-12-31
		testtables.Int96(testtables.Int96Epoch-73_769_900, 0), // about 200,000 BC
	}
	good := filepath.Join(dir, "good.parquet")
	os.WriteFile(good, testtables.Timestamps(vals), 0o600)
	id := e.importJSON(good).StorageID
	out := filepath.Join(dir, "out.parquet")
	e.ok("export", id, "-o", out)
	b, _ := os.ReadFile(out)
	pf, err := file.NewParquetReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		lt, ok := pf.MetaData().Schema.Column(i).LogicalType().(schema.TimestampLogicalType)
		if !ok || lt.IsAdjustedToUTC() || lt.TimeUnit() != schema.TimeUnitMicros {
			t.Errorf("column %d exported as %v, want a timestamp of microseconds not adjusted to UTC", i, pf.MetaData().Schema.Column(i).LogicalType())
		}
	}

	bad := filepath.Join(dir, "bad.parquet")
	os.WriteFile(bad, testtables.Timestamps(append(vals, testtables.Int96(testtables.Int96Epoch-110_000_000, 0))), 0o600)
	before, _ := os.ReadDir(e.store)
	for _, flags := range [][]string{nil, {"--reencode"}} {
		e.fails(exitFailure, []string{"bad", "INT96", "timestamp[us]"}, append([]string{"import", bad}, flags...)...)
	}
	after, _ := os.ReadDir(e.store)
	if len(after) != len(before) {
		t.Errorf("a refused import left %d entries in the store, %d before", len(after), len(before))
	}
}

// TestExportGeospatial (parquet-testing's data/geospatial): a sealed
// file's GEOMETRY and GEOGRAPHY columns export with their logical types
// (DuckDB then reads GEOMETRY, not BLOB), and --reencode keeps them in the
// object.
func TestExportGeospatial(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "geo.parquet")
	os.WriteFile(in, testtables.Geospatial(), 0o600)
	for _, flags := range [][]string{nil, {"--reencode"}} {
		id := e.importJSON(in, flags...).StorageID
		out := filepath.Join(dir, "out.parquet")
		e.ok("export", id, "-o", out)
		b, _ := os.ReadFile(out)
		pf, err := file.NewParquetReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		sc := pf.MetaData().Schema
		if lt, ok := sc.Column(0).LogicalType().(schema.GeometryLogicalType); !ok || lt.Crs != "srid:5070" {
			t.Errorf("import %v: geom exported as %v", flags, sc.Column(0).LogicalType())
		}
		if lt, ok := sc.Column(1).LogicalType().(schema.GeographyLogicalType); !ok || lt.Algorithm != schema.GeographyEdgeKarney {
			t.Errorf("import %v: geog exported as %v", flags, sc.Column(1).LogicalType())
		}
	}
}
