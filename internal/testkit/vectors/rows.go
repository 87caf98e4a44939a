package vectors

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/sovm/sop-pme/internal/rowjson"
)

// RowsJSON appends to dst the rows of rec in the vectors' text form, that
// of rowjson.AppendRows: one JSON object per row and line, with exact
// values (see testdata/vectors/README.md).
func RowsJSON(dst []byte, rec arrow.RecordBatch) ([]byte, error) {
	return rowjson.AppendRows(dst, rec)
}
