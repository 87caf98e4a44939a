package interop

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/sovm/sop-pme/duckdb/internal/ducktest"
	"github.com/sovm/sop-pme/internal/testkit/plainedit"
	"github.com/sovm/sop-pme/internal/thrift"
	"github.com/sovm/sop-pme/writer"
)

// The tests in this file take layouts Apache parquet-testing has (issue
// 14, section 9), made here, through the sealer and check that DuckDB
// 1.5.6 given the object's DEK, and our reader, read them as DuckDB reads
// the file.

// writeTemp writes b to a file in a test's temporary directory.
func writeTemp(t *testing.T, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// arrowGoFile has arrow-go write rec with props.
func arrowGoFile(t *testing.T, rec arrow.RecordBatch, props ...parquet.WriterProperty) []byte {
	t.Helper()
	b, err := writeEncoded(rec, props, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// editPlainFooter rewrites the footer of a plaintext Parquet file.
func editPlainFooter(t *testing.T, b []byte, edit func(md *thrift.Struct)) []byte {
	t.Helper()
	flen := int(binary.LittleEndian.Uint32(b[len(b)-8:]))
	start := len(b) - 8 - flen
	md, err := thrift.DecodeExact(b[start:len(b)-8], thrift.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	edit(md)
	out := md.Append(bytes.Clone(b[:start]))
	out = binary.LittleEndian.AppendUint32(out, uint32(len(out)-start))
	return append(out, "PAR1"...)
}

// TestSealUnknownLogicalType: a column whose logicalType is a member of
// the union no reader knows (parquet-testing's unknown-logical-type.parquet)
// seals; the object keeps the annotation, DuckDB reads the object as it
// reads the file (the column as BLOB), and so does our reader (binary).
func TestSealUnknownLogicalType(t *testing.T) {
	t.Parallel()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "known", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "unknown", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range 100 {
		b.Field(0).(*array.StringBuilder).Append("known " + string(rune('a'+i%26)))
		b.Field(1).(*array.StringBuilder).Append("unknown " + string(rune('a'+i%26)))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	in := writeTemp(t, "unknown.parquet", editPlainFooter(t, arrowGoFile(t, rec), func(md *thrift.Struct) {
		schema, _ := md.List(2)
		se := schema.Items[2].Struct
		se.Delete(6)
		se.Set(10, thrift.StructValue(thrift.NewStruct(thrift.Field{ID: 99, Value: thrift.StructValue(thrift.NewStruct())})))
	}))
	st := ducktest.NewStore(t)
	obj, err := sealPath(t, st, in, writer.WithAssignFieldIDs())
	if err != nil {
		t.Fatal(err)
	}
	checkSealed(t, st, in, obj)
}

// TestSealEmptyV2Values: a compressed V2 page without values whose values
// section is empty (parquet-testing's
// datapage_v2_empty_datapage.snappy.parquet; parquet-mr writes it) is
// rewritten as V1, and DuckDB and our reader read it as DuckDB reads the
// file.
func TestSealEmptyV2Values(t *testing.T) {
	t.Parallel()
	schema := arrow.NewSchema([]arrow.Field{{Name: "value", Type: arrow.PrimitiveTypes.Float32, Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for range 9 {
		b.Field(0).AppendNull()
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	plain := arrowGoFile(t, rec, parquet.WithDataPageVersion(parquet.DataPageV2), parquet.WithCompression(compress.Codecs.Snappy), parquet.WithDictionaryDefault(false))
	emptied := 0
	plain, err := plainedit.Rewrite(plain, func(p *plainedit.Page) error {
		v2, err := p.Header.Struct(8)
		if err != nil {
			return nil
		}
		def, _ := v2.I32(5)
		rep, _ := v2.I32(6)
		p.Body = p.Body[:def+rep]
		emptied++
		return nil
	})
	if err != nil || emptied != 1 {
		t.Fatalf("emptying the values section: %v (%d pages)", err, emptied)
	}
	in := writeTemp(t, "empty-v2.parquet", plain)
	st := ducktest.NewStore(t)
	obj, err := sealPath(t, st, in, writer.WithAssignFieldIDs())
	if err != nil {
		t.Fatal(err)
	}
	checkSealed(t, st, in, obj)
}

// TestSealVariant: a file with a VARIANT column (parquet-testing's
// shredded_variant/) seals with its variant's columns numbered, and DuckDB
// reads the object as it reads the file.
func TestSealVariant(t *testing.T) {
	t.Parallel()
	storage := arrow.StructOf(
		arrow.Field{Name: "metadata", Type: arrow.BinaryTypes.Binary},
		arrow.Field{Name: "value", Type: arrow.BinaryTypes.Binary, Nullable: true},
		arrow.Field{Name: "typed_value", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	)
	vt, err := extensions.NewVariantType(storage)
	if err != nil {
		t.Fatal(err)
	}
	sb := array.NewStructBuilder(memory.DefaultAllocator, storage)
	defer sb.Release()
	for i := range 50 {
		sb.Append(true)
		sb.FieldBuilder(0).(*array.BinaryBuilder).Append([]byte{0x01, 0x00, 0x00}) // an empty dictionary, version 1
		if i%2 == 0 {
			sb.FieldBuilder(1).(*array.BinaryBuilder).AppendNull()
			sb.FieldBuilder(2).(*array.Int64Builder).Append(int64(i) * 1000)
		} else {
			sb.FieldBuilder(1).(*array.BinaryBuilder).Append([]byte{3 << 2, byte(i)}) // int8 i
			sb.FieldBuilder(2).(*array.Int64Builder).AppendNull()
		}
	}
	st0 := sb.NewArray()
	defer st0.Release()
	v := array.NewExtensionArrayWithStorage(vt, st0)
	defer v.Release()
	rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "var", Type: vt, Nullable: true}}, nil), []arrow.Array{v}, 50)
	defer rec.Release()
	in := writeTemp(t, "variant.parquet", arrowGoFile(t, rec))
	st := ducktest.NewStore(t)
	obj, err := sealPath(t, st, in, writer.WithAssignFieldIDs())
	if err != nil {
		t.Fatal(err)
	}
	// (The Go driver does not scan VARIANT values: DuckDB prints them.)
	db := ducktest.OpenDuckDB(t)
	q := func(path, enc string) [][]any {
		if enc != "" {
			enc = ", encryption_config = " + enc
		}
		return ducktest.MustQuery(t, db, "SELECT CAST(var AS VARCHAR) FROM read_parquet("+ducktest.SQLString(path)+enc+", file_row_number = true) ORDER BY file_row_number")
	}
	want, got := q(in, ""), q(obj.path, ducktest.FooterKeyValue(keyBase64(obj)))
	if len(want) != 50 || want[0][0] != "0" || want[1][0] != "1" {
		t.Fatalf("DuckDB reads %v... from the file", want[:2])
	}
	ducktest.CompareRows(t, "DuckDB reading the object", []string{"var"}, want, got, ducktest.SameValue)
}
