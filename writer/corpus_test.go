package writer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/sovm/sop-pme/internal/lz4hadoop"
	"github.com/sovm/sop-pme/internal/testkit/memstore"
	"github.com/sovm/sop-pme/internal/testkit/plainedit"
	"github.com/sovm/sop-pme/internal/thrift"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/writer"
)

// The tests in this file reproduce, with files they make, what Apache
// parquet-testing's corpus found.

// twoStrings returns a record of two string columns, n rows.
func twoStrings(n int) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "known", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "unknown", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.StringBuilder).Append("known " + string(rune('a'+i%26)))
		b.Field(1).(*array.StringBuilder).Append("unknown " + string(rune('a'+i%26)))
	}
	return b.NewRecordBatch()
}

// unknownLogicalType sets the logicalType of schema element elem to a
// member of the LogicalType union no reader knows (field 99), and drops its
// converted type, as parquet-testing's unknown-logical-type.parquet has.
func unknownLogicalType(elem int) func(md *thrift.Struct) {
	return func(md *thrift.Struct) {
		schema, _ := md.List(2)
		se := schema.Items[elem].Struct
		se.Delete(6)
		se.Set(10, thrift.StructValue(thrift.NewStruct(thrift.Field{ID: 99, Value: thrift.StructValue(thrift.NewStruct())})))
	}
}

// TestSealFileUnknownLogicalType: a file with a column whose logical type
// no reader knows seals, and the reader reads that column by its physical
// type (BYTE_ARRAY: binary), as Parquet readers must. Before, SealFile
// refused it ("the Parquet schema has no Arrow form: invalid logical
// type"), and so did the reader.
func TestSealFileUnknownLogicalType(t *testing.T) {
	t.Parallel()
	rec := twoStrings(50)
	defer rec.Release()
	plain := editFooter(t, plainParquet(t, rec), unknownLogicalType(2))
	st := memstore.New()
	obj, err := writer.SealFile(context.Background(), st, bytes.NewReader(plain), int64(len(plain)), writer.WithAssignFieldIDs())
	if err != nil {
		t.Fatal(err)
	}
	s, got := readSealed(t, st, obj)
	defer got.Release()
	if s.Field(0).Type.ID() != arrow.STRING || s.Field(1).Type.ID() != arrow.BINARY {
		t.Fatalf("schema %v: want known a string, unknown binary", s)
	}
	col, err := array.Concatenate(got.Column(1).Data().Chunks(), memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	defer col.Release()
	for i := range col.Len() {
		if g, w := string(col.(*array.Binary).Value(i)), "unknown "+string(rune('a'+i%26)); g != w {
			t.Fatalf("row %d: %q, want %q", i, g, w)
		}
	}
}

// allNullFloats returns a record of one nullable float32 column, n rows,
// every one null.
func allNullFloats(n int) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{{Name: "value", Type: arrow.PrimitiveTypes.Float32, Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for range n {
		b.Field(0).AppendNull()
	}
	return b.NewRecordBatch()
}

// TestSealFileEmptyV2Values: a compressed DATA_PAGE_V2 page without values
// whose values section is empty (no bytes at all, not a codec's encoding
// of nothing), as parquet-mr writes it and parquet-testing's
// datapage_v2_empty_datapage.snappy.parquet has, is rewritten as a V1 page
// and reads back as its nulls. Before, the sealer refused it (ErrUnboundedPage:
// "snappy: no decoded length") and import's re-encoding failed in arrow-go
// ("s2: corrupt input").
func TestSealFileEmptyV2Values(t *testing.T) {
	t.Parallel()
	rec := allNullFloats(7)
	defer rec.Release()
	plain := plainParquet(t, rec, parquet.WithDataPageVersion(parquet.DataPageV2), parquet.WithCompression(compress.Codecs.Snappy), parquet.WithDictionaryDefault(false))
	emptied := 0
	plain, err := plainedit.Rewrite(plain, func(p *plainedit.Page) error {
		if typ, _ := p.Header.I32(1); typ != 3 {
			return nil
		}
		v2, err := p.Header.Struct(8)
		if err != nil {
			return err
		}
		def, _ := v2.I32(5)
		rep, _ := v2.I32(6)
		if usize, _ := p.Header.I32(2); usize != def+rep || len(p.Body) <= int(def+rep) {
			return fmt.Errorf("the V2 page has %d bytes of values (%d uncompressed): the test proves nothing", len(p.Body)-int(def+rep), usize-def-rep)
		}
		p.Body = p.Body[:def+rep]
		emptied++
		return nil
	})
	if err != nil || emptied != 1 {
		t.Fatalf("emptying the values section: %v (%d pages)", err, emptied)
	}
	st := memstore.New()
	obj, err := writer.SealFile(context.Background(), st, bytes.NewReader(plain), int64(len(plain)), writer.WithAssignFieldIDs())
	if err != nil {
		t.Fatal(err)
	}
	_, got := readSealed(t, st, obj)
	defer got.Release()
	if got.NumRows() != 7 || got.Column(0).NullN() != 7 {
		t.Fatalf("%d rows, %d nulls; want 7 and 7", got.NumRows(), got.Column(0).NullN())
	}
}

// codecsOf returns the codecs of an object's column chunks, as its footer
// says.
func codecsOf(t *testing.T, st *memstore.Store, obj writer.Object) map[compress.Compression]int {
	t.Helper()
	f := objectFooter(t, st.Bytes(obj.StorageID), obj.DEK)
	md, err := metadata.NewFileMetaData(f.Append(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[compress.Compression]int{}
	eachChunk(md, func(cc *metadata.ColumnChunkMetaData) { out[cc.Compression()]++ })
	return out
}

// TestSealFileLZ4: pages of Parquet's deprecated LZ4 codec, which neither
// DuckDB 1.5.6 nor arrow-go reads, are rewritten as LZ4_RAW pages, whether
// Hadoop-framed (parquet-mr) or bare blocks (older parquet-cpp), V1 or
// compressed V2 pages, dictionary pages too; the object's chunks say
// LZ4_RAW, and it reads back as the file's rows. Before, SealFile refused
// them (writer.ErrCodec) and import's re-encoding failed in arrow-go
// ("compression for LZ4 unimplemented"; parquet-testing's three LZ4 files).
func TestSealFileLZ4(t *testing.T) {
	t.Parallel()
	_, rec := testTable(t, 2000, "")
	defer rec.Release()
	uncompressed := plainParquet(t, rec, parquet.WithMaxRowGroupLength(700), parquet.WithCompression(compress.Codecs.Uncompressed))
	_, want := readPlain(t, uncompressed)
	defer want.Release()
	hadoop, err := plainedit.Recompress(uncompressed, int32(compress.Codecs.Lz4), func(p []byte) []byte { return lz4hadoop.Encode(nil, p) })
	if err != nil {
		t.Fatal(err)
	}
	// LZ4_RAW pages (bare blocks), V1 and compressed V2, labelled LZ4.
	bare := editFooter(t, plainParquet(t, rec, parquet.WithMaxRowGroupLength(700), parquet.WithCompression(compress.Codecs.Lz4Raw)), setCodec(int32(compress.Codecs.Lz4)))
	bareV2 := editFooter(t, plainParquet(t, rec, parquet.WithMaxRowGroupLength(700), parquet.WithCompression(compress.Codecs.Lz4Raw), parquet.WithDataPageVersion(parquet.DataPageV2)), setCodec(int32(compress.Codecs.Lz4)))
	for name, plain := range map[string][]byte{"hadoop": hadoop, "bare": bare, "bare-v2": bareV2} {
		t.Run(name, func(t *testing.T) {
			st := memstore.New()
			var prog writer.Progress
			obj, err := writer.SealFile(context.Background(), st, bytes.NewReader(plain), int64(len(plain)),
				writer.WithProgress(func(p writer.Progress) { prog = p }))
			if err != nil {
				t.Fatal(err)
			}
			if prog.RewrittenPages == 0 {
				t.Error("no page was rewritten")
			}
			if c := codecsOf(t, st, obj); len(c) != 1 || c[compress.Codecs.Lz4Raw] == 0 {
				t.Errorf("the object's codecs: %v, want LZ4_RAW only", c)
			}
			_, got := readSealed(t, st, obj)
			defer got.Release()
			sameRows(t, want, got)
		})
	}
	// A page that is neither, under the LZ4 label, is refused as not a
	// plaintext Parquet file the sealer takes; nothing is published.
	garbled, err := plainedit.Recompress(uncompressed, int32(compress.Codecs.Lz4), func(p []byte) []byte { return append([]byte{0xff, 0xfe}, p...) })
	if err != nil {
		t.Fatal(err)
	}
	st := newMemStore()
	if _, err := writer.SealFile(context.Background(), st, bytes.NewReader(garbled), int64(len(garbled))); !errors.Is(err, writer.ErrPlaintextParquet) || !errors.Is(err, lz4hadoop.ErrCorrupt) {
		t.Errorf("garbled LZ4 pages: %v, want ErrPlaintextParquet and lz4hadoop.ErrCorrupt", err)
	}
	if st.count() != 0 {
		t.Error("a refused file left an object")
	}
}

// objectFooter decrypts the footer of an object's bytes.
func objectFooter(t *testing.T, data []byte, dek pme.DEK) *pme.Footer {
	t.Helper()
	flen, err := pme.ParseTrailer(data[len(data)-pme.TrailerSize:])
	if err != nil {
		t.Fatal(err)
	}
	tail, err := pme.ParseFooterRegion(data[len(data)-pme.TrailerSize-int(flen) : len(data)-pme.TrailerSize])
	if err != nil {
		t.Fatal(err)
	}
	f, err := pme.OpenFooter(dek, tail.FooterBody)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestSealFileEncodings: a page in an encoding DuckDB 1.5.6 or arrow-go
// cannot read (see writer.ErrEncoding) is refused with ErrNotSealable and
// writer.ErrEncoding, naming its column, and nothing is published; import then
// re-encodes the rows. Encodings both read seal. Before, the sealer sealed
// every encoding: BYTE_STREAM_SPLIT INT32, INT64 and FIXED_LEN_BYTE_ARRAY
// pages made objects DuckDB cannot read with their DEK (parquet-testing's
// byte_stream_split_extended.gzip.parquet), and so did BIT_PACKED levels.
// (interop's TestSealerEncodingsDuckDBReads asks DuckDB itself.)
func TestSealFileEncodings(t *testing.T) {
	t.Parallel()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "i64", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "fixed", Type: &arrow.FixedSizeBinaryType{ByteWidth: 3}, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range 500 {
		b.Field(0).(*array.Int32Builder).Append(int32(i * 3))
		b.Field(1).(*array.Int64Builder).Append(int64(i) << 20)
		b.Field(2).(*array.Float64Builder).Append(float64(i) / 3)
		b.Field(3).(*array.FixedSizeBinaryBuilder).Append([]byte{byte(i), 2, 3})
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	bss := func(col string) []parquet.WriterProperty {
		return []parquet.WriterProperty{parquet.WithDictionaryDefault(false), parquet.WithEncodingFor(col, parquet.Encodings.ByteStreamSplit)}
	}
	for _, col := range []string{"i32", "i64", "fixed"} {
		plain := plainParquet(t, rec, bss(col)...)
		st := newMemStore()
		_, err := writer.SealFile(context.Background(), st, bytes.NewReader(plain), int64(len(plain)), writer.WithAssignFieldIDs())
		var ce *writer.ColumnError
		if !errors.Is(err, writer.ErrNotSealable) || !errors.Is(err, writer.ErrEncoding) || !errors.As(err, &ce) || ce.Column != col {
			t.Errorf("BYTE_STREAM_SPLIT %s: %v, want ErrNotSealable and writer.ErrEncoding naming %s", col, err, col)
		}
		if st.count() != 0 {
			t.Errorf("BYTE_STREAM_SPLIT %s: an object was published", col)
		}
	}
	// BYTE_STREAM_SPLIT doubles, delta integers, and BIT_PACKED levels
	// declared for a column that has no such levels (parquet-mr writes it
	// for the repetition levels of flat columns) seal.
	plain := plainParquet(t, rec, append(bss("f64"), parquet.WithEncodingFor("i32", parquet.Encodings.DeltaBinaryPacked))...)
	plain, err := plainedit.Rewrite(plain, func(p *plainedit.Page) error {
		if dp, err := p.Header.Struct(5); err == nil {
			dp.Set(4, thrift.I32(int32(parquet.Encodings.BitPacked)))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	st := memstore.New()
	obj, err := writer.SealFile(context.Background(), st, bytes.NewReader(plain), int64(len(plain)), writer.WithAssignFieldIDs())
	if err != nil {
		t.Fatal(err)
	}
	_, got := readSealed(t, st, obj)
	defer got.Release()
	sameRows(t, array.NewTableFromRecords(schema, []arrow.RecordBatch{rec}), got)
}

// listRecord returns a record of an id and a list<int32> column whose every
// row has 1 to 3 elements, n rows, and a required fixed-size binary.
func listRecord(n int) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int32},
		{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
		{Name: "fixed", Type: &arrow.FixedSizeBinaryType{ByteWidth: 4}},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	lb := b.Field(1).(*array.ListBuilder)
	for i := range n {
		b.Field(0).(*array.Int32Builder).Append(int32(i))
		lb.Append(true)
		for j := range 1 + i%3 {
			lb.ValueBuilder().(*array.Int32Builder).Append(int32(i*10 + j))
		}
		b.Field(2).(*array.FixedSizeBinaryBuilder).Append([]byte{byte(i), 1, 2, 3})
	}
	return b.NewRecordBatch()
}

// listParquet writes listRecord(rows) as plaintext Parquet of small
// uncompressed plain pages, in row groups of rgRows rows.
func listParquet(t *testing.T, rows int, rgRows int64) []byte {
	t.Helper()
	rec := listRecord(rows)
	defer rec.Release()
	return plainParquet(t, rec, parquet.WithCompression(compress.Codecs.Uncompressed), parquet.WithDictionaryDefault(false),
		parquet.WithDataPageSize(512), parquet.WithBatchSize(50), parquet.WithMaxRowGroupLength(rgRows))
}

// firstLevelOne makes the first repetition level of the data page p (of
// listRecord's list column) 1: a record that starts with a nonzero
// repetition level, which only decoding tells (ARROW-GH-45185). The
// repetition levels come first (u32 length, then RLE / bit-packed runs of
// bit width 1).
func firstLevelOne(p *plainedit.Page) {
	p.Body = bytes.Clone(p.Body)
	run := p.Body[4:]
	if run[0]&1 == 1 {
		run[1] |= 1 // a bit-packed run: the first level is the first bit
	} else {
		run[1] = 1 // an RLE run: its value
	}
}

// onPages returns an edit of plainedit.Rewrite that applies edit to the
// data pages of column col.
func onPages(col int, edit func(p *plainedit.Page) error) func(p *plainedit.Page) error {
	return func(p *plainedit.Page) error {
		if p.Column != col {
			return nil
		}
		if typ, _ := p.Header.I32(1); typ != 0 {
			return nil
		}
		return edit(p)
	}
}

// TestSealFileRefusesWhatTheReaderRefuses: files whose pages pass every
// check of the sealer's own but that the reader refuses, made as
// parquet-testing's bad_data/ has them, are refused with
// writer.ErrPlaintextParquet naming the reason, and nothing is published
// (import then tries to encode the rows again, which fails with arrow-go's
// reason). Before, each sealed, reader.Check called the object conformant,
// and every read of it failed:
//
//   - a page of type INDEX_PAGE among the data pages (ARROW-GH-41317: the
//     reader's "page type 1"), now refused by the reader's page checks,
//     which the sealer runs on every page it seals;
//   - data pages that hold more values than ColumnMetaData.num_values says
//     (ARROW-RS-GH-6229-LEVELS: "the data pages hold 21 values,
//     ColumnMetaData.num_values 1"), by the same checks;
//   - repetition levels that start a record with 1 (ARROW-GH-45185: "record
//     starts with a nonzero repetition level") and a required column whose
//     values run short (ARROW-GH-47662: "eof exception"), which only
//     decoding tells: the sealer decodes each row group as the reader will
//     before it publishes the object.
func TestSealFileRefusesWhatTheReaderRefuses(t *testing.T) {
	t.Parallel()
	plain := listParquet(t, 600, 300)
	rewrite := func(edit func(p *plainedit.Page) error) []byte {
		b, err := plainedit.Rewrite(plain, edit)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for name, c := range map[string]struct {
		file []byte
		want string
	}{
		"index page": {rewrite(onPages(0, func(p *plainedit.Page) error {
			if p.Index == 1 {
				p.Header.Set(1, thrift.I32(1)) // INDEX_PAGE
			}
			return nil
		})), "page type 1"},
		"num_values": {editFooter(t, plain, func(md *thrift.Struct) {
			rgs, _ := md.List(4)
			cols, _ := rgs.Items[0].Struct.List(1)
			cmd, _ := cols.Items[1].Struct.Struct(3)
			cmd.Set(5, thrift.I64(1))
		}), "ColumnMetaData.num_values 1"},
		"repetition level": {rewrite(onPages(1, func(p *plainedit.Page) error {
			if p.RowGroup != 1 || p.Index != 0 {
				return nil
			}
			firstLevelOne(p)
			return nil
		})), "record starts with a nonzero repetition level"},
		"values short": {rewrite(onPages(2, func(p *plainedit.Page) error {
			if p.RowGroup != 0 || p.Index != 0 {
				return nil
			}
			p.Body = p.Body[:len(p.Body)-8]
			p.Header.Set(2, thrift.I32(int32(len(p.Body))))
			return nil
		})), "eof"},
	} {
		t.Run(name, func(t *testing.T) {
			st := newMemStore()
			_, err := writer.SealFile(context.Background(), st, bytes.NewReader(c.file), int64(len(c.file)), writer.WithAssignFieldIDs())
			if !errors.Is(err, writer.ErrPlaintextParquet) || errors.Is(err, writer.ErrNotSealable) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want writer.ErrPlaintextParquet saying %q", err, c.want)
			}
			if st.count() != 0 || st.abortCount() != st.created {
				t.Errorf("%d objects published, %d staged, %d aborted", st.count(), st.created, st.abortCount())
			}
		})
	}
	// The file as it was seals, and reads back.
	st := memstore.New()
	obj, err := writer.SealFile(context.Background(), st, bytes.NewReader(plain), int64(len(plain)), writer.WithAssignFieldIDs())
	if err != nil {
		t.Fatal(err)
	}
	_, got := readSealed(t, st, obj)
	defer got.Release()
	rec := listRecord(600)
	defer rec.Release()
	sameRows(t, array.NewTableFromRecords(rec.Schema(), []arrow.RecordBatch{rec}), got)
}
