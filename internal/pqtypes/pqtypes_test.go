package pqtypes_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/sovm/sop-pme/internal/arrowfb"
	"github.com/sovm/sop-pme/internal/pqtypes"
	"github.com/sovm/sop-pme/internal/testkit/testtables"
)

// read reads a Parquet file in the types of pqtypes.Apply.
func read(t *testing.T, b []byte) (arrow.Table, error) {
	t.Helper()
	pf, err := file.NewParquetReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1 << 10}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	fields, _ := pqtypes.Apply(pf.MetaData().Schema, fr.Manifest, nil)
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := pqtypes.NewRecordReader(rr, fields)
	defer r.Release()
	var recs []arrow.RecordBatch
	for r.Next() {
		rec := r.RecordBatch()
		rec.Retain()
		recs = append(recs, rec)
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	return array.NewTableFromRecords(r.Schema(), recs), nil
}

func column(tbl arrow.Table, name string) string {
	return tbl.Column(tbl.Schema().FieldIndices(name)[0]).Data().Chunk(0).String()
}

// TestLegacyLists: the list layouts of parquet-testing's
// old_list_structure, repeated_no_annotation and repeated_primitive_no_list
// read as pyarrow reads them: a list of lists, not a list of structs, and
// elements that are not nullable.
func TestLegacyLists(t *testing.T) {
	t.Parallel()
	tbl, err := read(t, testtables.LegacyLists())
	if err != nil {
		t.Fatal(err)
	}
	elem := func(name string, dt arrow.DataType) arrow.Field { return arrow.Field{Name: name, Type: dt} }
	want := map[string]arrow.DataType{
		"a":    arrow.ListOfField(elem("array", arrow.ListOfField(elem("array", arrow.PrimitiveTypes.Int32)))),
		"ints": arrow.ListOfField(elem("ints", arrow.PrimitiveTypes.Int32)),
		"phones": arrow.StructOf(elem("phone", arrow.ListOfField(elem("phone", arrow.StructOf(
			elem("number", arrow.PrimitiveTypes.Int64), arrow.Field{Name: "kind", Type: arrow.BinaryTypes.String, Nullable: true}))))),
	}
	for name, w := range want {
		f := tbl.Schema().Field(tbl.Schema().FieldIndices(name)[0])
		if !arrow.TypeEqual(f.Type, w) {
			t.Errorf("%s: %v, want %v", name, f.Type, w)
		}
	}
	if got := column(tbl, "a"); got != "[[[1 2] [3 4]]]" {
		t.Errorf("a = %s", got)
	}
	if got := column(tbl, "ints"); got != "[[7 8 9]]" {
		t.Errorf("ints = %s", got)
	}
}

// TestTimestamps: INT96 and legacy TIMESTAMP_MICROS columns have no time
// zone; INT96 reads at microseconds, 9999-12-31 and 200000 BC included, and
// a value beyond the microsecond range fails with ErrInt96.
func TestTimestamps(t *testing.T) {
	t.Parallel()
	const day = 86_400_000_000
	y9999 := int32(testtables.Int96Epoch + 2_932_896) // 9999-12-31
	bc := int32(testtables.Int96Epoch - 73_769_900)   // about 200,000 BC
	vals := []parquet.Int96{
		testtables.Int96(testtables.Int96Epoch, 1_500), // 1.5 µs after the epoch
		testtables.Int96(y9999, 3_600_000_000_000),
		{},
		testtables.Int96(bc, 0),
	}
	tbl, err := read(t, testtables.Timestamps(vals))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"int96", "legacy"} {
		f := tbl.Schema().Field(tbl.Schema().FieldIndices(name)[0])
		if !arrow.TypeEqual(f.Type, &arrow.TimestampType{Unit: arrow.Microsecond}) {
			t.Errorf("%s: %v, want timestamp[us] without a time zone", name, f.Type)
		}
	}
	got := tbl.Column(0).Data().Chunk(0).(*array.Timestamp)
	want := []int64{1, 2_932_896*day + 3_600_000_000, 0, -73_769_900 * day}
	for i, w := range want {
		if i == 2 {
			if !got.IsNull(2) {
				t.Error("row 2 is not null")
			}
			continue
		}
		if int64(got.Value(i)) != w {
			t.Errorf("row %d: %d µs, want %d", i, got.Value(i), w)
		}
	}
	// 300,000 BC is beyond ±292,277 years of microseconds.
	far := append(vals, testtables.Int96(testtables.Int96Epoch-110_000_000, 0))
	if _, err := read(t, testtables.Timestamps(far)); !errors.Is(err, pqtypes.ErrInt96) {
		t.Errorf("a value beyond the µs range: %v", err)
	}
}

// TestGeospatial: GEOMETRY and GEOGRAPHY columns read as GeoType, and
// pqarrow writes them back with their logical types.
func TestGeospatial(t *testing.T) {
	t.Parallel()
	tbl, err := read(t, testtables.Geospatial())
	if err != nil {
		t.Fatal(err)
	}
	for i, geography := range []bool{false, true} {
		g, ok := tbl.Schema().Field(i).Type.(*pqtypes.GeoType)
		if !ok || g.Geography() != geography || g.ExtensionName() != pqtypes.GeoName {
			t.Fatalf("%s: %v", tbl.Schema().Field(i).Name, tbl.Schema().Field(i).Type)
		}
	}
	if got := tbl.Schema().Field(0).Type.(*pqtypes.GeoType).Serialize(); got != `{"crs":"srid:5070"}` {
		t.Errorf("geometry metadata %s", got)
	}
	if got := tbl.Schema().Field(1).Type.(*pqtypes.GeoType).Serialize(); got != `{"edges":"karney"}` {
		t.Errorf("geography metadata %s", got)
	}
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(tbl.Schema(), &buf, nil, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteTable(tbl, 10); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	pf, err := file.NewParquetReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	sc := pf.MetaData().Schema
	if lt, ok := sc.Column(0).LogicalType().(schema.GeometryLogicalType); !ok || lt.Crs != "srid:5070" {
		t.Errorf("written back as %v", sc.Column(0).LogicalType())
	}
	if lt, ok := sc.Column(1).LogicalType().(schema.GeographyLogicalType); !ok || lt.Algorithm != schema.GeographyEdgeKarney {
		t.Errorf("written back as %v", sc.Column(1).LogicalType())
	}
}

// TestDictionaryFallback: a dictionary column whose writer fell back to
// plain pages midway (the dictionary outgrew its page) reads in the
// dictionary type ARROW:schema gives it, values equal: accepting the
// refinement cannot make a readable column fail.
func TestDictionaryFallback(t *testing.T) {
	t.Parallel()
	dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	sc := arrow.NewSchema([]arrow.Field{{Name: "d", Type: dt, Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	db := b.Field(0).(*array.BinaryDictionaryBuilder)
	for i := range 5000 {
		if i%11 == 0 {
			db.AppendNull()
		} else if err := db.AppendString(fmt.Sprintf("value %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithDictionaryPageSizeLimit(1<<10), parquet.WithDataPageSize(1<<10))
	w, err := pqarrow.NewFileWriter(sc, &buf, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	pf, err := file.NewParquetReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if encs := pf.MetaData().RowGroup(0).NumColumns(); encs != 1 {
		t.Fatal(encs)
	}
	cc, _ := pf.MetaData().RowGroup(0).ColumnChunk(0)
	if !slices.Contains(cc.Encodings(), parquet.Encodings.Plain) {
		t.Fatalf("no fallback to plain pages: %v", cc.Encodings())
	}
	stored, err := arrowfb.DecodeSchemaEntry([]byte(*pf.MetaData().KeyValueMetadata().FindValue("ARROW:schema")))
	if err != nil {
		t.Fatal(err)
	}
	// pqarrow applies the stored schema itself; a manifest without it is
	// what the reader refines.
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 700}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	if fr.Manifest, err = pqarrow.NewSchemaManifest(pf.MetaData().Schema, nil, &fr.Props); err != nil {
		t.Fatal(err)
	}
	fields, used := pqtypes.Apply(pf.MetaData().Schema, fr.Manifest, stored)
	if !used || !arrow.TypeEqual(fields[0].Type, dt) {
		t.Fatalf("%v, applied %v", fields[0].Type, used)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	got, err := array.Concatenate(tbl.Column(0).Data().Chunks(), memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Release()
	if !arrow.TypeEqual(got.DataType(), dt) || !array.Equal(got, rec.Column(0)) {
		t.Errorf("read %v, values equal %v", got.DataType(), array.Equal(got, rec.Column(0)))
	}
}

// TestReadDates: ReadDates has pqarrow read a top-level DATE column as the
// int32 it decodes (zero-copy, where a date32 is copied value by value),
// leaves a nested one and other columns as they are, and Record types the
// batches read as date32 again, the same values and nulls.
func TestReadDates(t *testing.T) {
	t.Parallel()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "l", Type: arrow.ListOf(arrow.FixedWidthTypes.Date32), Nullable: true},
		{Name: "i", Type: arrow.PrimitiveTypes.Int32},
	}, nil)
	b := array.NewRecordBuilder(memory.NewGoAllocator(), sc)
	defer b.Release()
	const rows = 3000
	for i := range rows {
		if i%7 == 0 {
			b.Field(0).AppendNull()
		} else {
			b.Field(0).(*array.Date32Builder).Append(arrow.Date32(i*31 - 9000))
		}
		lb := b.Field(1).(*array.ListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.Date32Builder).Append(arrow.Date32(i))
		b.Field(2).(*array.Int32Builder).Append(int32(i))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	tbl := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
	defer tbl.Release()
	if err := pqarrow.WriteTable(tbl, &buf, rows, nil, pqarrow.NewArrowWriterProperties()); err != nil {
		t.Fatal(err)
	}
	pf, err := file.NewParquetReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1000}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	fields, _ := pqtypes.Apply(pf.MetaData().Schema, fr.Manifest, nil)
	pqtypes.ReadDates(pf.MetaData().Schema, fr.Manifest)
	for i, want := range []arrow.DataType{arrow.PrimitiveTypes.Int32, arrow.ListOf(arrow.FixedWidthTypes.Date32), arrow.PrimitiveTypes.Int32} {
		if got := fr.Manifest.Fields[i].Field.Type; !arrow.TypeEqual(got, want) {
			t.Errorf("manifest field %d: %s, want %s", i, got, want)
		}
	}
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := pqtypes.NewRecordReader(rr, fields)
	defer r.Release()
	n := 0
	for r.Next() {
		got := r.RecordBatch()
		d, ok := got.Column(0).(*array.Date32)
		if !ok {
			t.Fatalf("column d read as %s", got.Column(0).DataType())
		}
		for k := range d.Len() {
			w := rec.Column(0).(*array.Date32)
			if d.IsNull(k) != w.IsNull(n+k) || d.IsValid(k) && d.Value(k) != w.Value(n+k) {
				t.Fatalf("row %d: %s, want %s", n+k, d.ValueStr(k), w.ValueStr(n+k))
			}
		}
		n += d.Len()
	}
	if err := r.Err(); err != nil || n != rows {
		t.Fatalf("%d rows, %v", n, err)
	}
}
