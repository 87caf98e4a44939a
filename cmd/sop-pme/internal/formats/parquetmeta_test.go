package formats_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/sovm/sop-pme/cmd/sop-pme/internal/formats"
	"github.com/sovm/sop-pme/internal/thrift"
)

// stringsRecord returns a record of two string columns, s and t, n rows.
func stringsRecord(n int) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "t", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.StringBuilder).Append("known " + string(rune('a'+i%26)))
		b.Field(1).(*array.StringBuilder).Append("unknown " + string(rune('a'+i%26)))
	}
	return b.NewRecordBatch()
}

// parquetBytes writes rec with arrow-go and props.
func parquetBytes(t *testing.T, rec arrow.RecordBatch, props ...parquet.WriterProperty) []byte {
	t.Helper()
	var buf bytes.Buffer
	fw, err := pqarrow.NewFileWriter(rec.Schema(), &buf, parquet.NewWriterProperties(props...), pqarrow.NewArrowWriterProperties())
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// withUnknownLogicalType returns the plaintext Parquet file b with the
// logicalType of its schema element elem replaced by a member of the
// LogicalType union no reader knows (field 99, an empty struct), as
// parquet-testing's unknown-logical-type.parquet has, and its converted
// type dropped.
func withUnknownLogicalType(t *testing.T, b []byte, elem int) []byte {
	t.Helper()
	flen := int(binary.LittleEndian.Uint32(b[len(b)-8:]))
	start := len(b) - 8 - flen
	md, err := thrift.DecodeExact(b[start:len(b)-8], thrift.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	schema, err := md.List(2)
	if err != nil {
		t.Fatal(err)
	}
	se := schema.Items[elem].Struct
	se.Delete(6) // converted_type
	se.Set(10, thrift.StructValue(thrift.NewStruct(thrift.Field{ID: 99, Value: thrift.StructValue(thrift.NewStruct())})))
	out := md.Append(bytes.Clone(b[:start]))
	out = binary.LittleEndian.AppendUint32(out, uint32(len(out)-start))
	return append(out, "PAR1"...)
}

func writeTemp(t *testing.T, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestParquetUnknownLogicalType: a column whose logicalType names a type
// no reader knows is read by its physical type (BYTE_ARRAY: binary), as
// Parquet readers must; before, arrow-go refused the whole file ("invalid
// logical type"; parquet-testing's unknown-logical-type.parquet).
func TestParquetUnknownLogicalType(t *testing.T) {
	t.Parallel()
	rec := stringsRecord(30)
	defer rec.Release()
	path := writeTemp(t, "unknown.parquet", withUnknownLogicalType(t, parquetBytes(t, rec), 2))
	in, err := formats.Open(context.Background(), path, formats.InputOptions{})
	if err != nil {
		t.Fatalf("opening a file with an unknown logical type: %v", err)
	}
	defer in.Close()
	s := in.Schema()
	if s.Field(0).Type.ID() != arrow.STRING || s.Field(1).Type.ID() != arrow.BINARY {
		t.Fatalf("schema %v: want s a string, t binary (its physical type)", s)
	}
	rows := 0
	for in.Next() {
		r := in.RecordBatch()
		tcol := r.Column(1).(*array.Binary)
		for i := range int(r.NumRows()) {
			if want := "unknown " + string(rune('a'+(rows+i)%26)); string(tcol.Value(i)) != want {
				t.Fatalf("row %d: %q, want %q", rows+i, tcol.Value(i), want)
			}
		}
		rows += int(r.NumRows())
	}
	if err := in.Err(); err != nil || rows != 30 {
		t.Fatalf("%d rows, %v; want 30", rows, err)
	}
}

// TestParquetEncryptedPlaintextFooter: an encrypted Parquet file in
// plaintext footer mode ("PAR1" at both ends, encrypted column chunks) is
// refused with the line every encrypted file gets; before, arrow-go's
// "cannot decrypt column metadata. file decryption not setup correctly".
func TestParquetEncryptedPlaintextFooter(t *testing.T) {
	t.Parallel()
	rec := stringsRecord(10)
	defer rec.Release()
	key := "0123456789012345"
	for name, plaintextFooter := range map[string]bool{"plaintext-footer": true, "encrypted-footer": false} {
		opts := []parquet.EncryptOption{}
		if plaintextFooter {
			opts = append(opts, parquet.WithPlaintextFooter())
		}
		b := parquetBytes(t, rec, parquet.WithEncryptionProperties(parquet.NewFileEncryptionProperties(key, opts...)))
		if got := string(b[len(b)-4:]); plaintextFooter != (got == "PAR1") {
			t.Fatalf("%s: the file ends in %q", name, got)
		}
		path := writeTemp(t, name+".parquet", b)
		_, err := formats.Open(context.Background(), path, formats.InputOptions{})
		if !errors.Is(err, formats.ErrFormat) || !strings.Contains(err.Error(), "is an encrypted Parquet file; import takes plaintext tables") {
			t.Errorf("%s: %v, want the encrypted-file line", name, err)
		}
	}
}
