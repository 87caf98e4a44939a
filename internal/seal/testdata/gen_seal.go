//go:build ignore

// gen_seal writes the seed corpus of FuzzSeal (package seal) and FuzzSealFile
// (package writer): small plaintext Parquet files as arrow-go writes them
// (flat and nested, with and without field IDs, dictionaries, V1 and V2
// pages, several codecs, page indexes and bloom filters), and a few damaged
// variants. Run from internal/seal/: go run testdata/gen_seal.go
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
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

func main() {
	md := func(ids bool, id int) arrow.Metadata {
		if !ids {
			return arrow.Metadata{}
		}
		return arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{strconv.Itoa(id)})
	}
	schema := func(ids bool) *arrow.Schema {
		return arrow.NewSchema([]arrow.Field{
			{Name: "a", Type: arrow.PrimitiveTypes.Int64, Metadata: md(ids, 1)},
			{Name: "l", Type: arrow.ListOfField(arrow.Field{Name: "element", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: md(ids, 4)}), Nullable: true, Metadata: md(ids, 2)},
			{Name: "m", Type: arrow.MapOfFields(arrow.Field{Name: "key", Type: arrow.BinaryTypes.String, Metadata: md(ids, 5)}, arrow.Field{Name: "value", Type: arrow.PrimitiveTypes.Int32, Nullable: true, Metadata: md(ids, 6)}), Nullable: true, Metadata: md(ids, 3)},
		}, nil)
	}
	file := func(ids bool, props ...parquet.WriterProperty) []byte {
		s := schema(ids)
		b := array.NewRecordBuilder(memory.DefaultAllocator, s)
		for i := range 60 {
			b.Field(0).(*array.Int64Builder).Append(int64(i % 7))
			lb := b.Field(1).(*array.ListBuilder)
			lb.Append(true)
			lb.ValueBuilder().(*array.StringBuilder).Append(fmt.Sprint("x", i%5))
			mb := b.Field(2).(*array.MapBuilder)
			mb.Append(i%4 != 0)
			if i%4 != 0 {
				mb.KeyBuilder().(*array.StringBuilder).Append("k")
				mb.ItemBuilder().(*array.Int32Builder).Append(int32(i))
			}
		}
		rec := b.NewRecordBatch()
		var out bytes.Buffer
		props = append(props, parquet.WithMaxRowGroupLength(25))
		fw, err := pqarrow.NewFileWriter(s, &out, parquet.NewWriterProperties(props...), pqarrow.NewArrowWriterProperties())
		if err != nil {
			panic(err)
		}
		if err := fw.Write(rec); err != nil {
			panic(err)
		}
		fw.Close()
		return out.Bytes()
	}
	seeds := map[string][]byte{
		"ids-snappy":      file(true, parquet.WithCompression(compress.Codecs.Snappy)),
		"no-ids-plain":    file(false, parquet.WithDictionaryDefault(false)),
		"ids-v2-none":     file(true, parquet.WithDataPageVersion(parquet.DataPageV2)),
		"ids-v2-zstd":     file(true, parquet.WithDataPageVersion(parquet.DataPageV2), parquet.WithCompression(compress.Codecs.Zstd)),
		"ids-index-bloom": file(true, parquet.WithPageIndexEnabled(true), parquet.WithBloomFilterEnabled(true), parquet.WithBloomFilterNDV(16), parquet.WithMaxBloomFilterBytes(512)),
	}
	base := seeds["ids-snappy"]
	trunc := bytes.Clone(base[:len(base)-20])
	seeds["truncated"] = append(trunc, base[len(base)-8:]...)
	flip := bytes.Clone(base)
	flip[len(flip)/3] ^= 0x40
	seeds["page-bit-flipped"] = flip
	for _, dir := range []string{"testdata/fuzz/FuzzSeal", "../../writer/testdata/fuzz/FuzzSealFile"} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			panic(err)
		}
		for name, b := range seeds {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)), 0o644); err != nil {
				panic(err)
			}
		}
	}
}
