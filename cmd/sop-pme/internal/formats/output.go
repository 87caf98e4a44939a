package formats

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	arrowcsv "github.com/apache/arrow-go/v18/arrow/csv"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/sovm/sop-pme/internal/pqtypes"
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
		// pqarrow writes no durations: they go as INT64, as pyarrow
		// writes them, with the same values.
		ws := writableSchema(schema)
		fw, err := pqarrow.NewFileWriter(ws, nopCloser{w}, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
		if err != nil {
			return nil, fmt.Errorf("parquet: %w", err)
		}
		return parquetOut{fw, ws}, nil
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

type parquetOut struct {
	fw     *pqarrow.FileWriter
	schema *arrow.Schema // the schema written: durations as int64
}

func (p parquetOut) Write(rec arrow.RecordBatch) error {
	out, err := pqtypes.Record(p.schema, rec)
	if err != nil {
		return err
	}
	defer out.Release()
	return p.fw.WriteBuffered(out)
}

func (p parquetOut) Close() error { return p.fw.Close() }

// writableSchema returns schema with every duration, at any depth, as an
// int64 (the same buffers: pqtypes.Record relabels them).
func writableSchema(schema *arrow.Schema) *arrow.Schema {
	fs := make([]arrow.Field, schema.NumFields())
	for i, f := range schema.Fields() {
		f.Type = writableType(f.Type)
		fs[i] = f
	}
	md := schema.Metadata()
	return arrow.NewSchema(fs, &md)
}

func writableType(dt arrow.DataType) arrow.DataType {
	field := func(f arrow.Field) arrow.Field { f.Type = writableType(f.Type); return f }
	switch t := dt.(type) {
	case *arrow.DurationType:
		return arrow.PrimitiveTypes.Int64
	case *arrow.StructType:
		fs := make([]arrow.Field, t.NumFields())
		for i, f := range t.Fields() {
			fs[i] = field(f)
		}
		return arrow.StructOf(fs...)
	case *arrow.MapType:
		m := arrow.MapOfFields(field(t.KeyField()), field(t.ItemField()))
		m.KeysSorted = t.KeysSorted
		return m
	case *arrow.ListType:
		return arrow.ListOfField(field(t.ElemField()))
	case *arrow.LargeListType:
		return arrow.LargeListOfField(field(t.ElemField()))
	case *arrow.FixedSizeListType:
		return arrow.FixedSizeListOfField(t.Len(), field(t.ElemField()))
	}
	return dt
}

type csvOut struct{ w *arrowcsv.Writer }

func (c csvOut) Write(rec arrow.RecordBatch) error { return c.w.Write(rec) }
func (c csvOut) Close() error                      { return c.w.Flush() }

// nestedAsJSON writes the values of nested columns as JSON text, and those
// of the types arrow-go's CSV writer does not take (it panics on them:
// durations, times, intervals, dictionaries, extension types) as the text
// of their JSON values.
func nestedAsJSON(typ arrow.DataType, col arrow.Array) ([]string, bool) {
	nested := false
	switch typ.(type) {
	case arrow.ExtensionType, *arrow.DurationType, *arrow.DictionaryType, *arrow.Time32Type, *arrow.Time64Type,
		*arrow.MonthIntervalType, *arrow.DayTimeIntervalType, *arrow.MonthDayNanoIntervalType:
	case arrow.NestedType:
		nested = true
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
		if !nested && len(buf) > 0 && buf[0] == '"' {
			// A JSON string: its text.
			if err := json.Unmarshal(buf, &out[i]); err != nil {
				return nil, false
			}
		}
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
