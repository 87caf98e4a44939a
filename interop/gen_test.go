package interop

import (
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/sovm/sop-pme/internal/testkit/testtables"
	"github.com/sovm/sop-pme/writer"
)

// The test tables come from internal/testkit/testtables, which the library's test
// vectors share: a schema with one column of every type the suite covers,
// and deterministic rows for it. Every column is nullable and gets nulls;
// one row in every 64 (row%64 == testtables.AllNullRow), and the last row
// of every table, is null in every column.

func fid(id int) arrow.Metadata {
	return arrow.NewMetadata([]string{writer.FieldIDKey}, []string{strconv.Itoa(id)})
}

// allTypesSchema returns the schema of the type-coverage table.
func allTypesSchema() *arrow.Schema { return testtables.AllTypes() }

// makeRecord returns n deterministic rows of schema, drawn with seed.
func makeRecord(schema *arrow.Schema, n int, seed uint64) arrow.RecordBatch {
	return testtables.Record(schema, n, seed)
}
