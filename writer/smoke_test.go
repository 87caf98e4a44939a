package writer_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/sovm/sop-pme/writer"
)

func fid(id int) arrow.Metadata {
	return arrow.NewMetadata([]string{writer.FieldIDKey}, []string{strconv.Itoa(id)})
}

func TestSmoke(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64, Metadata: fid(1)},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: fid(2)},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := 0; i < 1000; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append("v" + strconv.Itoa(i))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	st := newMemStore()
	w, err := writer.New(st, schema, writer.WithRowGroupRows(300))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	obj, err := w.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	data := st.get(obj.StorageID)
	t.Logf("%v size=%d unpadded=%d len=%d head=%q tail=%q", obj, obj.Size, obj.UnpaddedSize, len(data), data[:4], data[len(data)-4:])
}
