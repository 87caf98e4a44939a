package sopsql_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/duckdb/sopsql"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/writer"
)

// oneKey resolves the DEK of one object (package keyring does this for a
// store).
type oneKey struct {
	id  storageid.ID
	dek pme.DEK
}

func (k oneKey) ResolveDEK(_ context.Context, id storageid.ID) (pme.DEK, error) {
	if id != k.id {
		return pme.DEK{}, reader.ErrNoKey
	}
	return k.dek, nil
}

// An object is written into a directory store, then queried with SQL as the
// view "orders", every byte verified against its storage_id.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "sopsql-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	store, err := blobs.CreateDir(dir)
	if err != nil {
		log.Fatal(err)
	}

	fid := func(id string) arrow.Metadata { return arrow.NewMetadata([]string{writer.FieldIDKey}, []string{id}) }
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "customer", Type: arrow.BinaryTypes.String, Metadata: fid("1")},
		{Name: "amount", Type: arrow.PrimitiveTypes.Int64, Metadata: fid("2")},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	b.Field(0).(*array.StringBuilder).AppendValues([]string{"ada", "bob", "ada"}, nil)
	b.Field(1).(*array.Int64Builder).AppendValues([]int64{30, 12, 5}, nil)
	rec := b.NewRecordBatch()
	w, err := writer.New(ctx, store, schema)
	if err != nil {
		log.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		log.Fatal(err)
	}
	obj, err := w.Close(ctx)
	if err != nil {
		log.Fatal(err)
	}

	db, err := sopsql.Open(ctx, store, oneKey{obj.StorageID, obj.DEK}, sopsql.WithView("orders", obj.StorageID))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	res, err := db.Query(ctx, "SELECT customer, sum(amount) AS total FROM orders GROUP BY customer ORDER BY customer")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Columns)
	for _, row := range res.Rows {
		fmt.Println(row...)
	}
	fmt.Println(len(res.Rows), "rows")
	// Output:
	// [{customer VARCHAR} {total HUGEINT}]
	// ada 35
	// bob 12
	// 2 rows
}
