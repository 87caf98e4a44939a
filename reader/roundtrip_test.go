package reader_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/writer"
)

func fid(id int) arrow.Metadata {
	return arrow.NewMetadata([]string{writer.FieldIDKey}, []string{strconv.Itoa(id)})
}

func TestRoundTripSmoke(t *testing.T) {
	t.Parallel()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64, Metadata: fid(1)},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: fid(2)},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := 0; i < 100000; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append("v" + strconv.Itoa(i))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	st := newMemStore()
	obj := writeObject(t, st, schema, rec, writer.WithRowGroupRows(30000))
	ctx := context.Background()
	r, err := reader.Open(ctx, st, obj.StorageID, keys{obj.StorageID: obj.DEK})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("schema %v, %d row groups, fetched %d bytes in %d slices of a %d-byte object", r.Schema(), r.NumRowGroups(), st.Fetched.Load(), st.Slices.Load(), obj.Size)
	rr, err := r.Scan(ctx, reader.WithFields(1))
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Release()
	var n, sum int64
	for rr.Next() {
		rec := rr.RecordBatch()
		col := rec.Column(0).(*array.Int64)
		for i := 0; i < col.Len(); i++ {
			sum += col.Value(i)
		}
		n += rec.NumRows()
	}
	if err := rr.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("n=%d sum=%d fetched %d bytes in %d slices", n, sum, st.Fetched.Load(), st.Slices.Load())
	if n != 100000 || sum != 99999*100000/2 {
		t.Fatalf("n=%d sum=%d", n, sum)
	}
	if r.Verified() {
		t.Fatal("verified after a projection")
	}
	if err := r.Verify(ctx); err != nil || !r.Verified() {
		t.Fatal(err)
	}
}

// TestMetadata: footer key-value entries come back through Metadata; the
// padding entry and the stored Arrow schema do not.
func TestMetadata(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema, rec := fiveColumns(t, 10)
	defer rec.Release()
	st := newMemStore()
	w, err := writer.New(ctx, st, schema, writer.WithMetadata("team", "blue"))
	if err != nil {
		t.Fatal(err)
	}
	w.Write(rec)
	obj, err := w.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r, err := reader.Open(ctx, st, obj.StorageID, keys{obj.StorageID: obj.DEK})
	if err != nil {
		t.Fatal(err)
	}
	md := r.Metadata()
	if v, ok := md.GetValue("team"); !ok || v != "blue" || md.Len() != 1 {
		t.Fatalf("Metadata() = %v", md)
	}
}
