//go:build ignore

// gen writes the seed corpora of FuzzOpen and FuzzPlaintext. FuzzOpen's:
// small objects written by the writer, with every module re-sealed under the
// fuzz key (32 zero bytes), and damaged variants. FuzzPlaintext's: objects
// in the form hostile.Unseal gives (plaintext in place of each module's
// ciphertext): valid ones of every codec and page version, and the hostile
// cases of internal/testkit/hostile up to 128 KiB. Run from reader/:
// go run testdata/gen.go
package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/internal/testkit/hostile"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/writer"
)

type store struct{ last []byte }

type pending struct {
	s   *store
	buf bytes.Buffer
}

func (s *store) Create(context.Context) (blobs.Pending, error) { return &pending{s: s}, nil }
func (p *pending) Write(b []byte) (int, error)                 { return p.buf.Write(b) }
func (p *pending) Abort() error                                { return nil }
func (p *pending) Commit(context.Context) (storageid.ID, error) {
	p.s.last = bytes.Clone(p.buf.Bytes())
	return storageid.Sum(p.s.last), nil
}

// reseal re-seals every module of obj (sealed under from) under to: the
// lengths do not change, so neither does the layout.
func reseal(obj []byte, from, to pme.DEK) []byte {
	out := bytes.Clone(obj)
	flen := int(binary.LittleEndian.Uint32(obj[len(obj)-8:]))
	dataEnd := len(obj) - 8 - flen
	redo := func(at int) int {
		n := int(binary.LittleEndian.Uint32(obj[at:]))
		plain, err := from.Open(nil, obj[at+4:at+4+n])
		if err != nil {
			panic(err)
		}
		m, _ := to.Seal(nil, plain)
		copy(out[at:], m)
		return at + 4 + n
	}
	for at := 4; at < dataEnd; {
		at = redo(at)
	}
	_, cmLen, err := pme.ParseFileCryptoMetaData(obj[dataEnd:])
	if err != nil {
		panic(err)
	}
	redo(dataEnd + cmLen)
	return out
}

func main() {
	to, _ := pme.DEKFromBytes(make([]byte, 32))
	fid := func(id int) arrow.Metadata {
		return arrow.NewMetadata([]string{writer.FieldIDKey}, []string{strconv.Itoa(id)})
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64, Metadata: fid(1)},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: fid(2)},
		{Name: "l", Type: arrow.ListOfField(arrow.Field{Name: "element", Type: arrow.PrimitiveTypes.Int32, Nullable: true, Metadata: fid(4)}), Nullable: true, Metadata: fid(3)},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	for i := range 200 {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprint("v", i%7))
		lb := b.Field(2).(*array.ListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.Int32Builder).Append(int32(i))
	}
	rec := b.NewRecordBatch()
	dir := filepath.Join("testdata", "fuzz", "FuzzOpen")
	os.MkdirAll(dir, 0o755)
	write := func(name string, data []byte) {
		os.WriteFile(filepath.Join(dir, name), []byte(fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data)), 0o644)
	}
	for i, opts := range [][]writer.Option{
		{writer.WithRowGroupRows(100)},
		{writer.WithCodec(writer.Uncompressed), writer.WithDictionary(false)},
	} {
		st := &store{}
		w, err := writer.New(context.Background(), st, schema, opts...)
		if err != nil {
			panic(err)
		}
		w.Write(rec)
		obj, err := w.Close(context.Background())
		if err != nil {
			panic(err)
		}
		data := reseal(st.last, obj.DEK, to)
		write(fmt.Sprintf("object-%d", i), data)
		bad := bytes.Clone(data)
		bad[len(bad)/2] ^= 1
		write(fmt.Sprintf("object-%d-flipped", i), bad)
		write(fmt.Sprintf("object-%d-truncated", i), data[:len(data)-9])
	}
	write("tiny", []byte("PARE\x00\x00\x00\x00PARE"))
	plaintextSeeds(to)
}

// plaintextSeeds writes the seeds of FuzzPlaintext.
func plaintextSeeds(key pme.DEK) {
	dir := filepath.Join("testdata", "fuzz", "FuzzPlaintext")
	os.MkdirAll(dir, 0o755)
	write := func(name string, obj []byte) {
		plain, err := hostile.Unseal(obj, key)
		if err != nil {
			panic(fmt.Sprint(name, ": ", err))
		}
		os.WriteFile(filepath.Join(dir, name), []byte(fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", plain)), 0o644)
	}
	valid := []struct {
		name string
		kind string
		opts []writer.Option
	}{
		{"valid-flat-zstd", "flat", nil},
		{"valid-flat-snappy-rowgroups", "flat", []writer.Option{writer.WithCodec(writer.Snappy), writer.WithRowGroupRows(50)}},
		{"valid-flat-plain", "flat", []writer.Option{writer.WithCodec(writer.Uncompressed), writer.WithDictionary(false)}},
		{"valid-flat-v2", "flat", []writer.Option{writer.WithCodec(writer.Uncompressed), writer.WithDataPageVersion(writer.DataPageV2)}},
		{"valid-nested-zstd", "nested", nil},
		{"valid-nested-plain", "nested", []writer.Option{writer.WithCodec(writer.Uncompressed), writer.WithDictionary(false)}},
		{"valid-nested-v2", "nested", []writer.Option{writer.WithCodec(writer.Uncompressed), writer.WithDataPageVersion(writer.DataPageV2), writer.WithDataPageSize(256)}},
	}
	for _, v := range valid {
		o, err := hostile.Base(v.kind, 120, v.opts...)
		if err != nil {
			panic(err)
		}
		obj, err := o.SealPadded(key)
		if err != nil {
			panic(err)
		}
		write(v.name, obj)
	}
	for _, c := range hostile.Cases() {
		obj, err := c.Build(key)
		if err != nil {
			panic(fmt.Sprint(c.Name, ": ", err))
		}
		if len(obj) <= 128<<10 {
			write("hostile-"+c.Name, obj)
		}
	}
}
