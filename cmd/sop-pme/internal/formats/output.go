package formats

import (
	"bufio"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	arrowcsv "github.com/apache/arrow-go/v18/arrow/csv"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/sovm/sop-pme/internal/rowjson"
)

// An Output writes records in a format. Close flushes it; it does not close
// the io.Writer it writes to.
type Output interface {
	Write(rec arrow.RecordBatch) error
	Close() error
}

// NewOutput returns an Output that writes records of schema to w in format
// f. Parquet output is plaintext, zstd, with each field's Parquet field ID
// ("PARQUET:field_id") and the Arrow schema stored. CSV output has a
// header row; nested values (lists, structs, maps) are written as JSON text
// in their field, and nulls as empty fields. NDJSON output is one JSON
// object per row with exact values (see package rowjson).
func NewOutput(w io.Writer, f Format, schema *arrow.Schema) (Output, error) {
	switch f {
	case Parquet:
		props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd), parquet.WithStats(true))
		fw, err := pqarrow.NewFileWriter(schema, nopCloser{w}, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
		if err != nil {
			return nil, fmt.Errorf("parquet: %w", err)
		}
		return parquetOut{fw}, nil
	case ArrowFile:
		fw, err := ipc.NewFileWriter(w, ipc.WithSchema(schema))
		if err != nil {
			return nil, fmt.Errorf("arrow: %w", err)
		}
		return fw, nil
	case ArrowStream:
		return ipc.NewWriter(w, ipc.WithSchema(schema)), nil
	case CSV:
		return csvOut{arrowcsv.NewWriter(w, schema, arrowcsv.WithHeader(true), arrowcsv.WithNullWriter(""),
			arrowcsv.WithCustomTypeConverter(nestedAsJSON))}, nil
	case NDJSON:
		return &jsonOut{w: bufio.NewWriterSize(w, 1<<16)}, nil
	}
	return nil, fmt.Errorf("%w: %q", ErrFormat, f)
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

type parquetOut struct{ fw *pqarrow.FileWriter }

func (p parquetOut) Write(rec arrow.RecordBatch) error { return p.fw.WriteBuffered(rec) }
func (p parquetOut) Close() error                      { return p.fw.Close() }

type csvOut struct{ w *arrowcsv.Writer }

func (c csvOut) Write(rec arrow.RecordBatch) error { return c.w.Write(rec) }
func (c csvOut) Close() error                      { return c.w.Flush() }

// nestedAsJSON writes the values of nested columns as JSON text.
func nestedAsJSON(typ arrow.DataType, col arrow.Array) ([]string, bool) {
	switch typ.(type) {
	case arrow.NestedType:
	default:
		return nil, false
	}
	out := make([]string, col.Len())
	var buf []byte
	for i := range out {
		if col.IsNull(i) {
			continue
		}
		var err error
		if buf, err = rowjson.AppendValue(buf[:0], col, i); err != nil {
			return nil, false
		}
		out[i] = string(buf)
	}
	return out, true
}

type jsonOut struct {
	w   *bufio.Writer
	buf []byte
}

func (j *jsonOut) Write(rec arrow.RecordBatch) error {
	var err error
	if j.buf, err = rowjson.AppendRows(j.buf[:0], rec); err != nil {
		return err
	}
	_, err = j.w.Write(j.buf)
	return err
}

func (j *jsonOut) Close() error { return j.w.Flush() }

var _ Output = (*ipc.Writer)(nil)
var _ Output = (*ipc.FileWriter)(nil)
