package writer_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/sovm/sop-pme/internal/testkit/memstore"
	"github.com/sovm/sop-pme/writer"
)

// variantRecord returns a record of an int32 id and a VARIANT column
// (arrow-go's canonical extension type over a struct of metadata and
// value, and typed_value if shredded), n rows, no field IDs anywhere.
func variantRecord(t *testing.T, n int, shredded bool) arrow.RecordBatch {
	t.Helper()
	mem := memory.DefaultAllocator
	fields := []arrow.Field{
		{Name: "metadata", Type: arrow.BinaryTypes.Binary},
		{Name: "value", Type: arrow.BinaryTypes.Binary, Nullable: true},
	}
	if shredded {
		fields = append(fields, arrow.Field{Name: "typed_value", Type: arrow.PrimitiveTypes.Int64, Nullable: true})
	}
	storage := arrow.StructOf(fields...)
	vt, err := extensions.NewVariantType(storage)
	if err != nil {
		t.Fatal(err)
	}
	ids := array.NewInt32Builder(mem)
	defer ids.Release()
	sb := array.NewStructBuilder(mem, storage)
	defer sb.Release()
	md, val := sb.FieldBuilder(0).(*array.BinaryBuilder), sb.FieldBuilder(1).(*array.BinaryBuilder)
	for i := range n {
		ids.Append(int32(i))
		sb.Append(true)
		// An empty metadata dictionary (version 1), and an int8 value:
		// primitive type 3, basic type 0.
		md.Append([]byte{0x01, 0x00, 0x00})
		if shredded && i%2 == 0 {
			val.AppendNull()
			sb.FieldBuilder(2).(*array.Int64Builder).Append(int64(i) * 1000)
			continue
		}
		val.Append([]byte{3 << 2, byte(i)})
		if shredded {
			sb.FieldBuilder(2).(*array.Int64Builder).AppendNull()
		}
	}
	st := sb.NewArray()
	defer st.Release()
	idArr := ids.NewArray()
	defer idArr.Release()
	v := array.NewExtensionArrayWithStorage(vt, st)
	defer v.Release()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int32},
		{Name: "var", Type: vt, Nullable: true},
	}, nil)
	return array.NewRecordBatch(schema, []arrow.Array{idArr, v}, int64(n))
}

// TestAssignFieldIDsVariant: the columns of a VARIANT group (metadata,
// value, typed_value) get field IDs like a struct's fields, so that a
// schema with a variant, numbered by AssignFieldIDs, is one the writer
// takes. Before, AssignFieldIDs numbered the variant's fields and then lost
// the numbers (the extension type was not rebuilt), and SealFile failed
// with "internal error: AssignFieldIDs left var.metadata without an ID"
// (136 of the 137 files of parquet-testing's shredded_variant/).
func TestAssignFieldIDsVariant(t *testing.T) {
	t.Parallel()
	for _, shredded := range []bool{false, true} {
		rec := variantRecord(t, 40, shredded)
		defer rec.Release()
		s, err := writer.AssignFieldIDs(rec.Schema())
		if err != nil {
			t.Fatal(err)
		}
		want := "id=1 var=2 var.metadata=3 var.value=4"
		if shredded {
			want += " var.typed_value=5"
		}
		if got := ids(s); got != want {
			t.Errorf("shredded=%v: got %s, want %s", shredded, got, want)
		}
		if _, ok := s.Field(1).Type.(*extensions.VariantType); !ok {
			t.Fatalf("the variant field became %T", s.Field(1).Type)
		}
		// The writer takes it (every field has an ID), and the rows come
		// back with the IDs.
		st := memstore.New()
		obj := writeObject(t, st, s, []arrow.RecordBatch{withSchema(rec, s)})
		gotSchema, got := readSealed(t, st, obj)
		if g := ids(gotSchema); g != want {
			t.Errorf("shredded=%v: the object's field IDs: %s, want %s", shredded, g, want)
		}
		sameRows(t, array.NewTableFromRecords(rec.Schema(), []arrow.RecordBatch{rec}), got)
		got.Release()
	}
}

// TestSealFileVariant: a Parquet file with a VARIANT column and no field
// IDs seals with WithAssignFieldIDs, the variant's columns numbered, and
// reads back as the file does.
func TestSealFileVariant(t *testing.T) {
	t.Parallel()
	for _, shredded := range []bool{false, true} {
		rec := variantRecord(t, 300, shredded)
		defer rec.Release()
		plain := plainParquet(t, rec)
		_, want := readPlain(t, plain)
		st := memstore.New()
		obj, err := writer.SealFile(context.Background(), st, bytes.NewReader(plain), int64(len(plain)), writer.WithAssignFieldIDs())
		if err != nil {
			t.Fatalf("shredded=%v: %v", shredded, err)
		}
		gotSchema, got := readSealed(t, st, obj)
		sameRows(t, want, got)
		got.Release()
		want.Release()
		if g := ids(gotSchema); !strings.Contains(g, "var.metadata=3 var.value=4") {
			t.Errorf("shredded=%v: field IDs %s", shredded, g)
		}
		// Without WithAssignFieldIDs the variant's columns are named.
		_, err = writer.SealFile(context.Background(), st, bytes.NewReader(plain), int64(len(plain)))
		if !errors.Is(err, writer.ErrFieldID) || !strings.Contains(err.Error(), "var.metadata") {
			t.Errorf("shredded=%v: without WithAssignFieldIDs: %v, want ErrFieldID naming var.metadata", shredded, err)
		}
	}
}
