package hostile

import (
	"context"
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/sovm/sop-pme/internal/testkit/memstore"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/writer"
)

func fid(id int) arrow.Metadata {
	return arrow.NewMetadata([]string{writer.FieldIDKey}, []string{strconv.Itoa(id)})
}

// Write writes rec with the writer and returns the object's bytes and DEK.
func Write(rec arrow.RecordBatch, opts ...writer.Option) ([]byte, pme.DEK, error) {
	st := memstore.New()
	w, err := writer.New(context.Background(), st, rec.Schema(), opts...)
	if err != nil {
		return nil, pme.DEK{}, err
	}
	if err := w.Write(rec); err != nil {
		return nil, pme.DEK{}, err
	}
	obj, err := w.Close(context.Background())
	if err != nil {
		return nil, pme.DEK{}, err
	}
	return st.Bytes(obj.StorageID), obj.DEK, nil
}

// FlatRecord returns n deterministic rows of a flat table: a int64 (field
// ID 1, required), s string (2, nullable, every seventh row null, seven
// distinct values), x float64 (3, required).
func FlatRecord(n int) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64, Metadata: fid(1)},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: fid(2)},
		{Name: "x", Type: arrow.PrimitiveTypes.Float64, Metadata: fid(3)},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		if i%7 == 6 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprint("v", i%7))
		}
		b.Field(2).(*array.Float64Builder).Append(float64(i) / 4)
	}
	return b.NewRecordBatch()
}

// NestedRecord returns n deterministic rows of a nested table: st
// struct<x int64, y string> (field IDs 1; 2, 3), l list<int32> (4; element
// 5), m map<string, int64> (6; key 7, value 8).
func NestedRecord(n int) arrow.RecordBatch {
	elem := arrow.Field{Name: "element", Type: arrow.PrimitiveTypes.Int32, Nullable: true, Metadata: fid(5)}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "st", Type: arrow.StructOf(
			arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true, Metadata: fid(2)},
			arrow.Field{Name: "y", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: fid(3)},
		), Nullable: true, Metadata: fid(1)},
		{Name: "l", Type: arrow.ListOfField(elem), Nullable: true, Metadata: fid(4)},
		{Name: "m", Type: arrow.MapOfWithMetadata(arrow.BinaryTypes.String, fid(7), arrow.PrimitiveTypes.Int64, fid(8)), Nullable: true, Metadata: fid(6)},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range n {
		sb := b.Field(0).(*array.StructBuilder)
		sb.Append(true)
		sb.FieldBuilder(0).(*array.Int64Builder).Append(int64(i))
		sb.FieldBuilder(1).(*array.StringBuilder).Append(fmt.Sprint("y", i%5))
		lb := b.Field(1).(*array.ListBuilder)
		lb.Append(true)
		for k := range i % 4 {
			lb.ValueBuilder().(*array.Int32Builder).Append(int32(i + k))
		}
		mb := b.Field(2).(*array.MapBuilder)
		mb.Append(true)
		for k := range i % 3 {
			mb.KeyBuilder().(*array.StringBuilder).Append(fmt.Sprint("k", k))
			mb.ItemBuilder().(*array.Int64Builder).Append(int64(i * k))
		}
	}
	return b.NewRecordBatch()
}

// Base writes one of the base tables and opens it: "flat" (FlatRecord) or
// "nested" (NestedRecord), with rows rows and the writer's options.
func Base(kind string, rows int, opts ...writer.Option) (*Object, error) {
	var rec arrow.RecordBatch
	switch kind {
	case "flat":
		rec = FlatRecord(rows)
	case "nested":
		rec = NestedRecord(rows)
	default:
		return nil, fmt.Errorf("hostile: no base table %q", kind)
	}
	defer rec.Release()
	obj, dek, err := Write(rec, opts...)
	if err != nil {
		return nil, err
	}
	return Open(obj, dek)
}
