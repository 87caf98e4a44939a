package testtables

import (
	"bytes"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// DictionaryFlags are the values of DictionaryFile's flag column: short,
// empty, exactly 12 bytes (DuckDB's longest inlined string), and longer.
var DictionaryFlags = []string{"A", "N", "R", "a string longer than twelve bytes", "", "exactly12byt", "thirteen byte"}

// DictionaryFile writes, with arrow-go and dictionary encoding on (pages
// and dictionary pages of at most 1 KiB), rows of:
//
//	flag     string, nullable (every 13th row), DictionaryFlags[i*7 % 7]
//	mode     binary, 7 values with a zero byte
//	comment  string, nullable (every 17th row), rows/3 values: its
//	         dictionary outgrows its page, so that its chunks fall back
//	         to plain pages midway
//	n        int64, the row number
//
// in row groups of rowGroup rows, with field IDs 1 to 4.
func DictionaryFile(rows int, rowGroup int64) ([]byte, error) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "flag", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: FieldID(1)},
		{Name: "mode", Type: arrow.BinaryTypes.Binary, Metadata: FieldID(2)},
		{Name: "comment", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: FieldID(3)},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64, Metadata: FieldID(4)},
	}, nil)
	b := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
	defer b.Release()
	for i := range rows {
		if i%13 == 0 {
			b.Field(0).AppendNull()
		} else {
			b.Field(0).(*array.StringBuilder).Append(DictionaryFlags[i*7%len(DictionaryFlags)])
		}
		b.Field(1).(*array.BinaryBuilder).Append([]byte(fmt.Sprintf("MODE\x00%d", i%7)))
		if i%17 == 0 {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("comment number %d, somewhat long", i/3))
		}
		b.Field(3).(*array.Int64Builder).Append(int64(i))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	tbl := array.NewTableFromRecords(schema, []arrow.RecordBatch{rec})
	defer tbl.Release()
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithDictionaryDefault(true), parquet.WithDictionaryPageSizeLimit(1<<10), parquet.WithDataPageSize(1<<10))
	if err := pqarrow.WriteTable(tbl, &buf, rowGroup, props, pqarrow.NewArrowWriterProperties()); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
