package seal_test

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/sovm/sop-pme/internal/seal"
	"github.com/sovm/sop-pme/internal/thrift"
	"github.com/sovm/sop-pme/pme"
)

// TestSealerRowGroups: OnRowGroup sees each row group, with its rows and
// the bytes of its chunks, plaintext and sealed; an error from it stops the
// Sealer, stickily.
func TestSealerRowGroups(t *testing.T) {
	t.Parallel()
	plain, spans := plainFile(t, 2500, 1000, compress.Codecs.Snappy)
	s := seal.NewSealer(io.Discard, pme.NewDEK())
	var got []seal.SealedRowGroup
	s.OnRowGroup(func(g seal.SealedRowGroup) error { got = append(got, g); return nil })
	if err := s.AddFile(bytes.NewReader(plain), int64(len(plain))); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Rows != 1000 || got[2].Rows != 500 {
		t.Fatalf("row groups seen: %+v", got)
	}
	var sealed int64
	for i, g := range got {
		var want int64
		for _, sp := range spans[i] {
			want += sp.Len
		}
		if g.PlainBytes != want || g.SealedBytes <= want {
			t.Errorf("row group %d: %+v; its chunks hold %d bytes", i, g, want)
		}
		sealed += g.SealedBytes
	}
	if sealed != s.Offset()-4 {
		t.Errorf("sealed bytes add up to %d, the data region to %d", sealed, s.Offset()-4)
	}

	stop := errors.New("stop")
	s = seal.NewSealer(io.Discard, pme.NewDEK())
	n := 0
	s.OnRowGroup(func(seal.SealedRowGroup) error { n++; return stop })
	if err := s.AddFile(bytes.NewReader(plain), int64(len(plain))); !errors.Is(err, stop) || n != 1 {
		t.Fatalf("got %v after %d row groups", err, n)
	}
	if _, err := s.Close(); !errors.Is(err, stop) {
		t.Fatalf("Close: %v", err)
	}
}

// TestSealerColumnError: a refused column chunk is named, with its row
// group, in a *seal.ColumnError (here a snappy page whose decoded length is
// not its size); codecs other than those DuckDB and arrow-go both read are
// refused with ErrCodec.
func TestSealerColumnError(t *testing.T) {
	t.Parallel()
	sc := arrow.NewSchema([]arrow.Field{{Name: "deep", Type: arrow.StructOf(arrow.Field{Name: "v", Type: arrow.PrimitiveTypes.Int64})}}, nil)
	p := plaintextProps(t, sc, 100, nil, parquet.WithCompression(compress.Codecs.Snappy))
	_, n, err := thrift.Decode(p[4:], thrift.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	p[4+n]++ // the first page's snappy length, one more than its size
	_, _, err = sealFiles(t, pme.NewDEK(), p)
	var ce *seal.ColumnError
	if !errors.As(err, &ce) || ce.Column != "deep.v" || ce.RowGroup != 0 || !errors.Is(err, seal.ErrUnboundedPage) {
		t.Fatalf("got %v, want a ColumnError for deep.v in row group 0", err)
	}
	for _, c := range []compress.Compression{compress.Codecs.Uncompressed, compress.Codecs.Snappy, compress.Codecs.Gzip, compress.Codecs.Brotli, compress.Codecs.Zstd, compress.Codecs.Lz4Raw} {
		plain, _ := plainFile(t, 100, 100, c)
		if _, _, err := sealFiles(t, pme.NewDEK(), plain); err != nil {
			t.Errorf("codec %v: %v", c, err)
		}
	}
}

// TestPlainFooterSchema: ReadPlainFooter reads what AddFile would; the
// schema alone (AppendSchema) parses as Parquet metadata, tagged or not;
// SetFieldIDs sets the IDs of the elements named and refuses an index
// outside the schema.
func TestPlainFooterSchema(t *testing.T) {
	t.Parallel()
	plain, _ := plainFile(t, 100, 50, compress.Codecs.Snappy)
	f, err := seal.ReadPlainFooter(bytes.NewReader(plain), int64(len(plain)))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.SetFieldIDs(map[int]int32{1: 70, 3: 90}); err != nil {
		t.Fatal(err)
	}
	fields, err := f.Fields()
	if err != nil {
		t.Fatal(err)
	}
	if fields[0].ID != 70 || fields[1].ID != 2 || fields[2].ID != 90 {
		t.Errorf("IDs after SetFieldIDs: %+v", fields)
	}
	for _, tag := range []bool{false, true} {
		b, err := f.AppendSchema(nil, tag)
		if err != nil {
			t.Fatal(err)
		}
		md, err := metadata.NewFileMetaData(b, nil)
		if err != nil {
			t.Fatal(err)
		}
		if md.NumRows != 0 || md.NumRowGroups() != 0 || md.Schema.NumColumns() != 3 {
			t.Fatalf("schema-only metadata: %d rows, %d row groups, %d columns", md.NumRows, md.NumRowGroups(), md.Schema.NumColumns())
		}
		want := []int32{70, 2, 90}
		if tag {
			want = []int32{1, 2, 3} // the elements' indexes (0 is the root)
		}
		for i := range 3 {
			if got := md.Schema.Column(i).SchemaNode().FieldID(); got != want[i] {
				t.Errorf("tag %v: column %d has field_id %d, want %d", tag, i, got, want[i])
			}
		}
	}
	if err := f.SetFieldIDs(map[int]int32{4: 1}); !errors.Is(err, pme.ErrFormat) {
		t.Errorf("an element outside the schema: %v", err)
	}
	if _, err := seal.ReadPlainFooter(bytes.NewReader(plain[:40]), 40); !errors.Is(err, seal.ErrPlaintextParquet) {
		t.Errorf("a truncated file: %v", err)
	}
}
