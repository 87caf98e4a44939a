package writer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/padme"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/writer"
)

func ExampleSealFile() {
	ctx := context.Background()
	// A plaintext Parquet file without field IDs, as DuckDB and pyarrow
	// write them by default.
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String)},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2}, nil)
	tags := b.Field(1).(*array.ListBuilder)
	tags.Append(true)
	tags.ValueBuilder().(*array.StringBuilder).Append("a")
	tags.Append(true)
	rec := b.NewRecordBatch()
	var plain bytes.Buffer
	fw, _ := pqarrow.NewFileWriter(schema, &plain, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
	fw.Write(rec)
	fw.Close()

	dir, _ := os.MkdirTemp("", "store")
	defer os.RemoveAll(dir)
	store, _ := blobs.CreateDir(dir)
	file := bytes.NewReader(plain.Bytes())

	// Without IDs the file is refused, naming the fields (Section 11.2)...
	_, err := writer.SealFile(ctx, store, file, file.Size())
	fmt.Println(errors.Is(err, writer.ErrFieldID))
	// ...unless they are assigned, by the rule of AssignFieldIDs.
	obj, err := writer.SealFile(ctx, store, file, file.Size(), writer.WithAssignFieldIDs())
	if err != nil {
		panic(err)
	}
	target, _ := padme.Target(obj.UnpaddedSize)
	fmt.Println(obj.Size == target)

	r, err := reader.Open(ctx, store, obj.StorageID, resolver{obj.StorageID: obj.DEK})
	if err != nil {
		panic(err)
	}
	fmt.Println(ids(r.Schema()))
	// Output:
	// true
	// true
	// id=1 tags=2 tags.element=3
}
