package seal_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/sovm/sop-pme/internal/seal"
	"github.com/sovm/sop-pme/internal/thrift"
	"github.com/sovm/sop-pme/padme"
	"github.com/sovm/sop-pme/pme"
)

// plainFile writes n rows of a small table as plaintext Parquet with arrow-go
// (row groups of rg rows, codec c; no row group if n is 0), with the given
// footer keys (empty values), and returns the bytes and the column chunk
// spans of each row group.
func plainFile(t testing.TB, n, rg int, c compress.Compression, keys ...string) ([]byte, [][]pme.Span) {
	t.Helper()
	md := func(id int) arrow.Metadata {
		return arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{strconv.Itoa(id)})
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64, Metadata: md(1)},
		{Name: "s", Type: arrow.BinaryTypes.String, Metadata: md(2)},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64, Metadata: md(3)},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i * 7919))
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("value-%09d-%x", i, i*31))
		b.Field(2).(*array.Float64Builder).Append(float64(i) * 1.5)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithCompression(c), parquet.WithMaxRowGroupLength(int64(rg)), parquet.WithDictionaryDefault(false))
	fw, err := pqarrow.NewFileWriter(schema, &buf, props, pqarrow.NewArrowWriterProperties())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if err := fw.AppendKeyValueMetadata(k, ""); err != nil {
			t.Fatal(err)
		}
	}
	if n > 0 {
		if err := fw.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	pf, err := file.NewParquetReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var spans [][]pme.Span
	for i := range pf.NumRowGroups() {
		rgm := pf.MetaData().RowGroup(i)
		var s []pme.Span
		for j := range rgm.NumColumns() {
			cc, _ := rgm.ColumnChunk(j)
			start := cc.DataPageOffset()
			if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 {
				start = min(start, cc.DictionaryPageOffset())
			}
			s = append(s, pme.Span{Off: start, Len: cc.TotalCompressedSize()})
		}
		spans = append(spans, s)
	}
	return buf.Bytes(), spans
}

// sealFiles seals the plaintext files with a Sealer and returns the data region
// and the footer.
func sealFiles(t testing.TB, k pme.DEK, files ...[]byte) ([]byte, *seal.Footer, error) {
	t.Helper()
	var out bytes.Buffer
	s := seal.NewSealer(&out, k)
	for _, f := range files {
		if err := s.AddFile(bytes.NewReader(f), int64(len(f))); err != nil {
			return nil, nil, err
		}
	}
	footer, err := s.Close()
	if s.Offset() != int64(out.Len()) {
		t.Fatalf("Offset %d, %d bytes written", s.Offset(), out.Len())
	}
	return out.Bytes(), footer, err
}

// TestSeal seals plaintext files, one and several, and checks the layout
// Section 11.3 (as DuckDB writes it) requires: "PARE", then the column
// chunks in row-group and column order, tiling the region; each chunk's
// modules open to exactly the plaintext chunk's bytes; the footer's row
// groups are those of the files, in order, with ordinals, and its num_rows
// their sum.
func TestSeal(t *testing.T) {
	t.Parallel()
	for _, c := range []compress.Compression{compress.Codecs.Uncompressed, compress.Codecs.Zstd} {
		plain1, spans1 := plainFile(t, 20000, 6000, c)
		plain2, spans2 := plainFile(t, 5000, 5000, c)
		k := pme.NewDEK()
		obj, f, err := sealFiles(t, k, plain1, plain2)
		if err != nil {
			t.Fatal(err)
		}
		if string(obj[:4]) != "PARE" {
			t.Fatal("no PARE")
		}
		chunks, err := columnChunks(f)
		if err != nil {
			t.Fatal(err)
		}
		type src struct {
			plain []byte
			span  pme.Span
		}
		var want [][]src
		for _, p := range []struct {
			plain []byte
			spans [][]pme.Span
		}{{plain1, spans1}, {plain2, spans2}} {
			for _, rg := range p.spans {
				var row []src
				for _, sp := range rg {
					row = append(row, src{p.plain, sp})
				}
				want = append(want, row)
			}
		}
		if len(chunks) != len(want) {
			t.Fatalf("%d row groups, want %d", len(chunks), len(want))
		}
		next := int64(4)
		for i, rg := range chunks {
			for j, ch := range rg {
				if ch.Off != next {
					t.Fatalf("chunk %d/%d at %d, want %d", i, j, ch.Off, next)
				}
				got, err := k.OpenModules(nil, obj[ch.Off:ch.End()])
				if err != nil {
					t.Fatal(err)
				}
				w := want[i][j]
				if !bytes.Equal(got, w.plain[w.span.Off:w.span.End()]) {
					t.Fatalf("chunk %d/%d: plaintext differs", i, j)
				}
				next = ch.End()
			}
		}
		if next != int64(len(obj)) {
			t.Fatalf("chunks end at %d, output at %d", next, len(obj))
		}
		// The footer reads as Parquet metadata: 25,000 rows in 5 row
		// groups, ordinals 0..4, each at its first chunk.
		meta := parseFooter(t, f)
		if meta.NumRows != 25000 || meta.NumRowGroups() != 5 {
			t.Fatalf("footer: %d rows, %d row groups", meta.NumRows, meta.NumRowGroups())
		}
		for i := range meta.NumRowGroups() {
			rg := meta.RowGroup(i)
			if int(rg.Ordinal()) != i || rg.FileOffset() != chunks[i][0].Off {
				t.Fatalf("row group %d: ordinal %d, file_offset %d", i, rg.Ordinal(), rg.FileOffset())
			}
		}
	}
}

// TestSealEmpty: a file without row groups gives a footer with none.
func TestSealEmpty(t *testing.T) {
	t.Parallel()
	plain, spans := plainFile(t, 0, 100, compress.Codecs.Snappy)
	if len(spans) != 0 {
		t.Fatalf("%d row groups", len(spans))
	}
	obj, f, err := sealFiles(t, pme.NewDEK(), plain)
	if err != nil {
		t.Fatal(err)
	}
	if string(obj) != "PARE" {
		t.Fatalf("data region %q", obj)
	}
	if meta := parseFooter(t, f); meta.NumRows != 0 || meta.NumRowGroups() != 0 {
		t.Fatalf("footer: %d rows, %d row groups", meta.NumRows, meta.NumRowGroups())
	}
}

func TestSealErrors(t *testing.T) {
	t.Parallel()
	plain, _ := plainFile(t, 3000, 1000, compress.Codecs.Snappy)
	k := pme.NewDEK()
	edit := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(plain)) }
	for name, c := range map[string]struct {
		files [][]byte
		want  error
	}{
		"not PAR1":     {[][]byte{edit(func(b []byte) []byte { copy(b, "XXXX"); return b })}, seal.ErrPlaintextParquet},
		"encrypted":    {[][]byte{edit(func(b []byte) []byte { copy(b, "PARE"); return b })}, seal.ErrPlaintextParquet},
		"short":        {[][]byte{plain[:10]}, seal.ErrPlaintextParquet},
		"truncated":    {[][]byte{plain[len(plain)/2:]}, seal.ErrPlaintextParquet},
		"footer bytes": {[][]byte{edit(func(b []byte) []byte { b[len(b)-20] ^= 0xff; return b })}, seal.ErrPlaintextParquet},
		"page bytes":   {[][]byte{edit(func(b []byte) []byte { b[4] ^= 0xff; return b })}, seal.ErrPlaintextParquet},
		"schemas differ": {[][]byte{plain, func() []byte {
			p, _ := plaintextSchema(t, arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int32}}, nil), 10, nil)
			return p
		}()}, seal.ErrPlaintextParquet},
		"reserved key": {[][]byte{func() []byte {
			p, _ := plaintextSchema(t, arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int32}}, nil), 10, []string{padme.PadKey})
			return p
		}()}, seal.ErrPlaintextParquet},
	} {
		t.Run(name, func(t *testing.T) {
			if _, _, err := sealFiles(t, k, c.files...); !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
	t.Run("sink fails", func(t *testing.T) {
		s := seal.NewSealer(failWriter{}, k)
		if err := s.AddFile(bytes.NewReader(plain), int64(len(plain))); !errors.Is(err, errSink) {
			t.Fatal(err)
		}
		if _, err := s.Close(); !errors.Is(err, errSink) {
			t.Fatalf("Close after a failure: %v", err)
		}
	})
	t.Run("nothing added", func(t *testing.T) {
		if _, err := seal.NewSealer(io.Discard, k).Close(); !errors.Is(err, seal.ErrPlaintextParquet) {
			t.Fatal(err)
		}
	})
	t.Run("compressed V2", func(t *testing.T) {
		// Rewritten as V1 pages: their headers say DATA_PAGE, the chunk's
		// encodings gain RLE (the V1 levels), and nothing else is
		// rewritten. TestSealFileV2 (package writer) reads them back.
		schema := arrow.NewSchema([]arrow.Field{{Name: "deep", Type: arrow.StructOf(arrow.Field{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true})}}, nil)
		p := plaintextProps(t, schema, 100, nil, parquet.WithDataPageVersion(parquet.DataPageV2), parquet.WithCompression(compress.Codecs.Zstd), parquet.WithDictionaryDefault(false))
		var out bytes.Buffer
		s := seal.NewSealer(&out, k)
		if err := s.AddFile(bytes.NewReader(p), int64(len(p))); err != nil {
			t.Fatal(err)
		}
		f, err := s.Close()
		if err != nil {
			t.Fatal(err)
		}
		if s.RewrittenPages() != 1 {
			t.Fatalf("%d pages rewritten, want 1", s.RewrittenPages())
		}
		chunks, err := columnChunks(f)
		if err != nil {
			t.Fatal(err)
		}
		plain, err := k.OpenModules(nil, out.Bytes()[chunks[0][0].Off:chunks[0][0].End()])
		if err != nil {
			t.Fatal(err)
		}
		hdr, _, err := thrift.Decode(plain, thrift.DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		if typ, _ := hdr.I32(1); typ != 0 || hdr.Field(5) == nil || hdr.Field(8) != nil {
			t.Fatalf("rewritten page header %v; want a DATA_PAGE with data_page_header", hdr)
		}
		cmd, err := parseFooter(t, f).RowGroup(0).ColumnChunk(0)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(cmd.Encodings(), parquet.Encodings.RLE) {
			t.Errorf("encodings %v lack RLE", cmd.Encodings())
		}
		// Uncompressed V2 pages are sealed as they are.
		p = plaintextProps(t, schema, 100, nil, parquet.WithDataPageVersion(parquet.DataPageV2), parquet.WithCompression(compress.Codecs.Uncompressed))
		s = seal.NewSealer(io.Discard, k)
		if err := s.AddFile(bytes.NewReader(p), int64(len(p))); err != nil || s.RewrittenPages() != 0 {
			t.Fatalf("uncompressed V2: %v, %d pages rewritten", err, s.RewrittenPages())
		}
	})
}

// columnChunks returns the spans of the footer's column chunks, as the
// reader sees them (pme.Footer.ColumnChunks).
func columnChunks(f *seal.Footer) ([][]pme.Span, error) {
	v, err := f.View()
	if err != nil {
		return nil, err
	}
	return v.ColumnChunks()
}

func parseFooter(t testing.TB, f *seal.Footer) *metadata.FileMetaData {
	t.Helper()
	md, err := metadata.NewFileMetaData(f.Append(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	return md
}

// plaintextSchema writes n rows of schema (all zero values) with the given
// extra footer keys.
func plaintextSchema(t testing.TB, schema *arrow.Schema, n int, keys []string) ([]byte, error) {
	return plaintextProps(t, schema, n, keys), nil
}

func plaintextProps(t testing.TB, schema *arrow.Schema, n int, keys []string, opts ...parquet.WriterProperty) []byte {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for range n {
		for i, f := range schema.Fields() {
			switch f.Type.(type) {
			case *arrow.StructType:
				sb := b.Field(i).(*array.StructBuilder)
				sb.Append(true)
				sb.FieldBuilder(0).(*array.Int64Builder).Append(7)
			case *arrow.Int32Type:
				b.Field(i).(*array.Int32Builder).Append(1)
			}
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	fw, err := pqarrow.NewFileWriter(schema, &buf, parquet.NewWriterProperties(opts...), pqarrow.NewArrowWriterProperties())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		fw.AppendKeyValueMetadata(k, "")
	}
	if err := fw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkSeal seals 64 MiB of plaintext Parquet (uncompressed, 1 MiB
// pages) from memory: the byte-level sealing of an existing file, target
// ≥ 1 GB/s.
func BenchmarkSeal(b *testing.B) {
	plain, _ := plainFile(b, 1_600_000, 400_000, compress.Codecs.Uncompressed)
	k := pme.NewDEK()
	b.SetBytes(int64(len(plain)))
	for b.Loop() {
		s := seal.NewSealer(io.Discard, k)
		if err := s.AddFile(bytes.NewReader(plain), int64(len(plain))); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
