package reader_test

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/keyring"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/writer"
)

// Example writes a table into a directory store, keeps its DEK wrapped in a
// keyring, and reads one column back through verified ranges.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "sop-pme-example")
	defer os.RemoveAll(dir)
	store, _ := blobs.CreateDir(dir)
	ring, _ := keyring.Open(ctx, dir+"/keyring", keyring.NewKEK(), keyring.WithCreate())

	id := func(n int) arrow.Metadata {
		return arrow.NewMetadata([]string{writer.FieldIDKey}, []string{strconv.Itoa(n)})
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "city", Type: arrow.BinaryTypes.String, Metadata: id(1)},
		{Name: "visits", Type: arrow.PrimitiveTypes.Int64, Metadata: id(2)},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	b.Field(0).(*array.StringBuilder).AppendValues([]string{"Oslo", "Lima", "Pune"}, nil)
	b.Field(1).(*array.Int64Builder).AppendValues([]int64{3, 5, 8}, nil)
	rec := b.NewRecordBatch()

	w, _ := writer.New(ctx, store, schema)
	w.Write(rec)
	obj, _ := w.Close(ctx)
	ring.Put(ctx, obj.StorageID, obj.DEK)
	fmt.Println("DEK:", obj.DEK)

	r, _ := reader.Open(ctx, store, obj.StorageID, ring)
	rr, _ := r.Scan(ctx, reader.WithFields(2))
	for rr.Next() {
		fmt.Println("visits:", rr.RecordBatch().Column(0))
	}
	fmt.Println("verified after a projection:", r.Verified())
	fmt.Println("verify:", r.Verify(ctx), "verified:", r.Verified())
	// Output:
	// DEK: pme.DEK(REDACTED)
	// visits: [3 5 8]
	// verified after a projection: false
	// verify: <nil> verified: true
}

// ExampleReader_Stats shows what a projection reads: the footer and one
// column's chunk, verified, then the whole object for Verify.
func ExampleReader_Stats() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "sop-pme-example")
	defer os.RemoveAll(dir)
	store, _ := blobs.CreateDir(dir)
	ring, _ := keyring.Open(ctx, dir+"/keyring", keyring.NewKEK(), keyring.WithCreate())
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "n", Type: arrow.PrimitiveTypes.Int64, Metadata: arrow.NewMetadata([]string{writer.FieldIDKey}, []string{"1"})},
		{Name: "sq", Type: arrow.PrimitiveTypes.Int64, Metadata: arrow.NewMetadata([]string{writer.FieldIDKey}, []string{"2"})},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	for i := range int64(100_000) {
		b.Field(0).(*array.Int64Builder).Append(i)
		b.Field(1).(*array.Int64Builder).Append(i * i)
	}
	rec := b.NewRecordBatch()
	w, _ := writer.New(ctx, store, schema)
	w.Write(rec)
	obj, _ := w.Close(ctx)
	ring.Put(ctx, obj.StorageID, obj.DEK)

	r, _ := reader.Open(ctx, store, obj.StorageID, ring)
	rr, _ := r.Scan(ctx, reader.WithFields(1))
	for rr.Next() {
	}
	rr.Release()
	s := r.Stats()
	fmt.Println("a projection verified less than the object:", s.BytesVerified < r.Size())
	fmt.Println("and fetched at least what it verified:", s.BytesFetched >= s.BytesVerified)
	r.Verify(ctx)
	fmt.Println("Verify added the whole object:", r.Stats().BytesVerified-s.BytesVerified == r.Size())
	// Output:
	// a projection verified less than the object: true
	// and fetched at least what it verified: true
	// Verify added the whole object: true
}
