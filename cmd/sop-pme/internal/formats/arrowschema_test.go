package formats_test

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/sovm/sop-pme/cmd/sop-pme/internal/formats"
)

// TestParquetHostileArrowSchema: a Parquet input whose ARROW:schema entry
// states an IPC body of 32 GiB (one changed byte; arrow-go's IPC reader
// allocated it: "fatal error: runtime: out of memory") reads, its schema
// decoded by arrowfb, which allocates no body (the large string it states
// refines the Parquet string).
func TestParquetHostileArrowSchema(t *testing.T) {
	t.Parallel()
	schema := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.BinaryTypes.LargeString, Nullable: true}}, nil)
	msg := flight.SerializeSchema(schema, memory.DefaultAllocator)
	// Grow the Message vtable by one entry: bodyLength then reads 8 bytes
	// of the table, 0x0000000800080004 here.
	binary.LittleEndian.PutUint16(msg[8+6:], 12)
	md := arrow.NewMetadata([]string{"ARROW:schema"}, []string{base64.StdEncoding.EncodeToString(msg)})
	plain := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.BinaryTypes.String, Nullable: true}}, &md)
	b := array.NewRecordBuilder(memory.DefaultAllocator, plain)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).AppendValues([]string{"x", "y"}, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(plain, &buf, nil, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, rows := readRows(t, writeBytes(t, buf.Bytes()), formats.Parquet)
	if !arrow.TypeEqual(got.Field(0).Type, arrow.BinaryTypes.LargeString) || rows != "{\"a\":\"x\"}\n{\"a\":\"y\"}\n" {
		t.Errorf("%v: %s", got, rows)
	}
}
