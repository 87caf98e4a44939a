package table_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/keyring"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/table"
	"github.com/sovm/sop-pme/writer"
)

// Example writes a table as two objects whose schemas differ, the second
// after a rename (city to town), a promotion (visits int32 to int64) and an
// added column, and reads both at the table's schema, by field ID.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "sop-pme-table")
	defer os.RemoveAll(dir)
	store, _ := blobs.CreateDir(dir)
	ring, _ := keyring.Open(ctx, dir+"/keyring", keyring.NewKEK(), keyring.WithCreate())

	id := func(n int) arrow.Metadata {
		return arrow.NewMetadata([]string{writer.FieldIDKey}, []string{strconv.Itoa(n)})
	}
	v1 := arrow.NewSchema([]arrow.Field{
		{Name: "city", Type: arrow.BinaryTypes.String, Metadata: id(1)},
		{Name: "visits", Type: arrow.PrimitiveTypes.Int32, Metadata: id(2)},
	}, nil)
	v2 := arrow.NewSchema([]arrow.Field{
		{Name: "town", Type: arrow.BinaryTypes.String, Metadata: id(1)},
		{Name: "visits", Type: arrow.PrimitiveTypes.Int64, Metadata: id(2)},
		{Name: "country", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: id(3)},
	}, nil)
	var objects []storageid.ID
	write := func(schema *arrow.Schema, rows string) {
		rec, _, _ := array.RecordFromJSON(memory.DefaultAllocator, schema, strings.NewReader(rows))
		defer rec.Release()
		w, _ := writer.New(ctx, store, schema)
		w.Write(rec)
		obj, _ := w.Close(ctx)
		ring.Put(ctx, obj.StorageID, obj.DEK)
		objects = append(objects, obj.StorageID)
	}
	write(v1, `[{"city":"Oslo","visits":3},{"city":"Lima","visits":5}]`)
	write(v2, `[{"town":"Pune","visits":8000000000,"country":"IN"}]`)

	// The table's schema is the latest: the catalog keeps it.
	rr, _ := table.Scan(ctx, store, ring, v2, objects)
	defer rr.Release()
	for rr.Next() {
		rec := rr.RecordBatch()
		for i := range int(rec.NumRows()) {
			fmt.Println(rec.Column(0).ValueStr(i), rec.Column(1).ValueStr(i), rec.Column(2).ValueStr(i))
		}
	}
	fmt.Println("scan:", rr.Err())

	// A projection by name resolves to field IDs in the table's schema.
	fields, _ := table.Resolve(v2, "visits")
	sum := int64(0)
	rs, _ := table.Scan(ctx, store, ring, v2, objects, table.WithFields(fields...))
	defer rs.Release()
	for rs.Next() {
		for _, v := range rs.RecordBatch().Column(0).(*array.Int64).Int64Values() {
			sum += v
		}
	}
	fmt.Println("visits:", sum)

	// Only Verify makes the objects count as verified (Section 11.10).
	results, _ := table.Verify(ctx, store, ring, objects)
	for _, r := range results {
		fmt.Println("object", r.Index, "verified:", r.Err == nil)
	}
	// Output:
	// Oslo 3 (null)
	// Lima 5 (null)
	// Pune 8000000000 IN
	// scan: <nil>
	// visits: 8000000008
	// object 0 verified: true
	// object 1 verified: true
}
