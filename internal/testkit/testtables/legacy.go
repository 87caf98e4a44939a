package testtables

import (
	"bytes"
	"encoding/binary"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// Parquet files in layouts that arrow-go's Arrow writer does not make, as
// older writers (parquet-mr, Spark, Impala) and the files of Apache
// parquet-testing have them, written with arrow-go's low-level writer.
// Every element of their schemas has a field ID (its position, from 1),
// so that they can be sealed as they are.

// writeParquet writes one row group of root, whose columns cols writes in
// order.
func writeParquet(root *schema.GroupNode, cols ...func(file.ColumnChunkWriter) error) []byte {
	var buf bytes.Buffer
	w := file.NewParquetWriter(&buf, root, file.WithWriterProps(parquet.NewWriterProperties(parquet.WithDictionaryDefault(false))))
	rg := must(w.AppendRowGroupChecked())
	for _, c := range cols {
		cw, err := rg.NextColumn()
		if err != nil {
			panic(err)
		}
		if err := c(cw); err != nil {
			panic(err)
		}
		if err := cw.Close(); err != nil {
			panic(err)
		}
	}
	if err := rg.Close(); err != nil {
		panic(err)
	}
	if err := w.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// LegacyLists returns a Parquet file of one row with the list layouts of
// parquet-testing's old_list_structure, repeated_no_annotation and
// repeated_primitive_no_list:
//
//	required group a (LIST) {            [[1, 2], [3, 4]]
//	  repeated group array (LIST) {
//	    repeated int32 array; } }
//	repeated int32 ints;                 [7, 8, 9]
//	optional group phones {              {phone: [{number: 5, kind: "home"}]}
//	  repeated group phone {
//	    required int64 number;
//	    optional binary kind (STRING); } }
//
// pyarrow reads them as a: list<list<int32 not null> not null>, ints:
// list<int32 not null>, phones: struct<phone: list<struct<number: int64
// not null, kind: string> not null>>.
func LegacyLists() []byte {
	inner := must(schema.NewPrimitiveNode("array", parquet.Repetitions.Repeated, parquet.Types.Int32, 3, -1))
	arr := must(schema.NewGroupNodeLogical("array", parquet.Repetitions.Repeated, schema.FieldList{inner}, schema.NewListLogicalType(), 2))
	a := must(schema.NewGroupNodeLogical("a", parquet.Repetitions.Required, schema.FieldList{arr}, schema.NewListLogicalType(), 1))
	ints := must(schema.NewPrimitiveNode("ints", parquet.Repetitions.Repeated, parquet.Types.Int32, 4, -1))
	number := must(schema.NewPrimitiveNode("number", parquet.Repetitions.Required, parquet.Types.Int64, 7, -1))
	kind := must(schema.NewPrimitiveNodeLogical("kind", parquet.Repetitions.Optional, schema.StringLogicalType{}, parquet.Types.ByteArray, -1, 8))
	phone := must(schema.NewGroupNode("phone", parquet.Repetitions.Repeated, schema.FieldList{number, kind}, 6))
	phones := must(schema.NewGroupNode("phones", parquet.Repetitions.Optional, schema.FieldList{phone}, 5))
	root := must(schema.NewGroupNode("schema", parquet.Repetitions.Required, schema.FieldList{a, ints, phones}, -1))
	return writeParquet(root,
		func(cw file.ColumnChunkWriter) error {
			_, err := cw.(*file.Int32ColumnChunkWriter).WriteBatch([]int32{1, 2, 3, 4}, []int16{2, 2, 2, 2}, []int16{0, 2, 1, 2})
			return err
		},
		func(cw file.ColumnChunkWriter) error {
			_, err := cw.(*file.Int32ColumnChunkWriter).WriteBatch([]int32{7, 8, 9}, []int16{1, 1, 1}, []int16{0, 1, 1})
			return err
		},
		func(cw file.ColumnChunkWriter) error {
			_, err := cw.(*file.Int64ColumnChunkWriter).WriteBatch([]int64{5}, []int16{2}, []int16{0})
			return err
		},
		func(cw file.ColumnChunkWriter) error {
			_, err := cw.(*file.ByteArrayColumnChunkWriter).WriteBatch([]parquet.ByteArray{[]byte("home")}, []int16{3}, []int16{0})
			return err
		})
}

// Int96 returns the INT96 value of a Julian day and the nanoseconds of
// that day.
func Int96(julianDay int32, nanos uint64) parquet.Int96 {
	var v parquet.Int96
	binary.LittleEndian.PutUint64(v[:8], nanos)
	binary.LittleEndian.PutUint32(v[8:], uint32(julianDay))
	return v
}

// Int96Epoch is the Julian day of 1970-01-01.
const Int96Epoch = 2_440_588

// Timestamps returns a Parquet file of len(int96) rows with the timestamp
// columns of Spark and of old writers: "int96", an optional INT96 column
// with these values (a zero value is a null), and "legacy", a required
// INT64 annotated only by the legacy converted type TIMESTAMP_MICROS (no
// logical type), whose value is the row's index in microseconds.
func Timestamps(int96 []parquet.Int96) []byte {
	i96 := must(schema.NewPrimitiveNode("int96", parquet.Repetitions.Optional, parquet.Types.Int96, 1, -1))
	legacy := must(schema.NewPrimitiveNodeConverted("legacy", parquet.Repetitions.Required, parquet.Types.Int64, schema.ConvertedTypes.TimestampMicros, 0, 0, 0, 2))
	root := must(schema.NewGroupNode("schema", parquet.Repetitions.Required, schema.FieldList{i96, legacy}, -1))
	var vals []parquet.Int96
	def := make([]int16, len(int96))
	for i, v := range int96 {
		if v != (parquet.Int96{}) {
			vals, def[i] = append(vals, v), 1
		}
	}
	micros := make([]int64, len(int96))
	for i := range micros {
		micros[i] = int64(i)
	}
	return writeParquet(root,
		func(cw file.ColumnChunkWriter) error {
			_, err := cw.(*file.Int96ColumnChunkWriter).WriteBatch(vals, def, nil)
			return err
		},
		func(cw file.ColumnChunkWriter) error {
			_, err := cw.(*file.Int64ColumnChunkWriter).WriteBatch(micros, nil, nil)
			return err
		})
}

// Geospatial returns a Parquet file of two rows with a GEOMETRY column
// (CRS "srid:5070") and a GEOGRAPHY column (default CRS, Karney edges),
// each holding the WKB of POINT(1 2) and a null.
func Geospatial() []byte {
	geom := must(schema.NewPrimitiveNodeLogical("geom", parquet.Repetitions.Optional, schema.GeometryLogicalType{Crs: "srid:5070"}, parquet.Types.ByteArray, -1, 1))
	geog := must(schema.NewPrimitiveNodeLogical("geog", parquet.Repetitions.Optional, schema.GeographyLogicalType{Algorithm: schema.GeographyEdgeKarney}, parquet.Types.ByteArray, -1, 2))
	root := must(schema.NewGroupNode("schema", parquet.Repetitions.Required, schema.FieldList{geom, geog}, -1))
	point := binary.LittleEndian.AppendUint32([]byte{1}, 1) // little-endian WKB, type 1: a point
	point = binary.LittleEndian.AppendUint64(point, 0x3ff0000000000000)
	point = binary.LittleEndian.AppendUint64(point, 0x4000000000000000)
	col := func(cw file.ColumnChunkWriter) error {
		_, err := cw.(*file.ByteArrayColumnChunkWriter).WriteBatch([]parquet.ByteArray{point}, []int16{1, 0}, nil)
		return err
	}
	return writeParquet(root, col, col)
}
