package writer

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// EncodePlain encodes rec as the Writer encodes a row group (one row group,
// the default options), into a plaintext Parquet file, and returns it with
// what readableRowGroups estimates decoding rec as one batch takes, by leaf
// column: at the column's peak (needs) and after (retained).
func EncodePlain(rec arrow.RecordBatch) (file []byte, needs, retained []int64, err error) {
	cfg := defaultConfig()
	p := &pipeline{schema: rec.Schema(), cfg: cfg}
	buf := new(segments)
	props := append(p.encodingChoices([]arrow.RecordBatch{rec}), parquet.WithMaxRowGroupLength(max(rec.NumRows(), 1)))
	fw, err := pqarrow.NewFileWriter(rec.Schema(), buf, cfg.parquetProps(props...), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return nil, nil, nil, err
	}
	if err := fw.WriteBuffered(rec); err != nil {
		return nil, nil, nil, err
	}
	if err := fw.Close(); err != nil {
		return nil, nil, nil, err
	}
	meta, err := fw.FileMetadata()
	if err != nil {
		return nil, nil, nil, err
	}
	if meta.NumRowGroups() != 1 {
		return nil, nil, nil, fmt.Errorf("%d row groups", meta.NumRowGroups())
	}
	costs, err := batchCosts([]arrow.RecordBatch{rec}, meta, 0, 0, rec.NumRows(), cfg.dataPageSize)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, c := range costs {
		needs, retained = append(needs, c.need), append(retained, c.retained)
	}
	file = make([]byte, buf.Len())
	if _, err := buf.ReadAt(file, 0); err != nil {
		return nil, nil, nil, err
	}
	return file, needs, retained, nil
}

// NumLeaves returns the Parquet leaf columns of a field of type t.
func NumLeaves(t arrow.DataType) int { return numLeaves(t) }

// WithoutDecodeCheck makes SealFile publish row groups without decoding
// them first: for tests that measure what the reader needs to read a row
// group larger than its default limit allows.
func WithoutDecodeCheck() Option {
	return func(c *config) error { c.noDecodeCheck = true; return nil }
}
