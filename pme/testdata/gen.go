//go:build ignore

// gen writes the seed corpora of the pme fuzz targets: real footer regions,
// modules and footers of objects written by arrow-go and re-framed, sealed
// under the all-zero key the fuzz targets use, and a few damaged variants.
// Run from pme/: go run testdata/gen.go
package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/sovm/sop-pme/internal/seal"
	"github.com/sovm/sop-pme/padme"
	"github.com/sovm/sop-pme/pme"
)

func main() {
	k, _ := pme.DEKFromBytes(make([]byte, 32))
	md := func(id int) arrow.Metadata {
		return arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{strconv.Itoa(id)})
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64, Metadata: md(1)},
		{Name: "l", Type: arrow.ListOfField(arrow.Field{Name: "element", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: md(3)}), Nullable: true, Metadata: md(2)},
		{Name: "m", Type: arrow.MapOfFields(arrow.Field{Name: "key", Type: arrow.BinaryTypes.String, Metadata: md(5)}, arrow.Field{Name: "value", Type: arrow.PrimitiveTypes.Int32, Nullable: true, Metadata: md(6)}), Nullable: true, Metadata: md(4)},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	for i := range 300 {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		lb := b.Field(1).(*array.ListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.StringBuilder).Append(fmt.Sprint("x", i))
		mb := b.Field(2).(*array.MapBuilder)
		mb.Append(true)
		mb.KeyBuilder().(*array.StringBuilder).Append("k")
		mb.ItemBuilder().(*array.Int32Builder).Append(int32(i))
	}
	rec := b.NewRecordBatch()
	var plain bytes.Buffer
	fw, _ := pqarrow.NewFileWriter(schema, &plain, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(100)), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err := fw.Write(rec); err != nil {
		panic(err)
	}
	fw.Close()
	var out bytes.Buffer
	sl := seal.NewSealer(&out, k)
	if err := sl.AddFile(bytes.NewReader(plain.Bytes()), int64(plain.Len())); err != nil {
		panic(err)
	}
	footer, err := sl.Close()
	if err != nil {
		panic(err)
	}
	footer.AppendKeyValue(padme.PadKey, nil)
	footer.SetPad(padme.Solve(200))
	fplain := footer.Append(nil)
	fmod, _ := footer.Seal(k)
	cm, _ := pme.AppendFileCryptoMetaData(nil, bytes.Repeat([]byte{7}, 16))
	region := append(append([]byte(nil), cm...), fmod...)
	data := out.Bytes()

	write := func(target, name string, b []byte) {
		dir := filepath.Join("testdata", "fuzz", target)
		os.MkdirAll(dir, 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)), 0o644); err != nil {
			panic(err)
		}
	}
	tr, _ := pme.AppendTrailer(nil, len(region))
	write("FuzzParseFooterRegion", "sop", append(bytes.Clone(region), tr...))
	write("FuzzParseFooterRegion", "sop-region", region)
	write("FuzzParseFooterRegion", "duckdb", append([]byte{0x1c, 0x1c, 0x00, 0x00, 0x00}, fmod...))
	write("FuzzParseFooterRegion", "aad", append([]byte{0x1c, 0x1c, 0x18, 0x01, 0x61, 0x00, 0x00, 0x00}, fmod...))
	write("FuzzParseFooterRegion", "truncated", region[:len(region)/2])
	write("FuzzOpenModules", "chunks", data[4:min(len(data), 6000)])
	write("FuzzOpenModules", "one-bad", append(bytes.Clone(data[4:200]), 1, 2, 3))
	write("FuzzOpenModules", "empty-module", mustSeal(k, nil))
	write("FuzzFooter", "footer", fplain)
	stripped, _ := pme.OpenFooter(k, fmod[4:])
	stripped.StripForReading()
	write("FuzzFooter", "stripped", stripped.Append(nil))
	write("FuzzFooter", "truncated", fplain[:len(fplain)/3])
}

func mustSeal(k pme.DEK, b []byte) []byte {
	m, err := k.Seal(nil, b)
	if err != nil {
		panic(err)
	}
	return m
}
