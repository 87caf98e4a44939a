package writer_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/klauspost/compress/zstd"
	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/internal/testkit/memstore"
	"github.com/sovm/sop-pme/internal/testkit/plainedit"
	"github.com/sovm/sop-pme/internal/thrift"
	"github.com/sovm/sop-pme/padme"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
	"github.com/sovm/sop-pme/writer"
)

// plainParquet writes rec as a plaintext Parquet file with arrow-go and
// the given writer properties (the Arrow schema stored, as pyarrow and
// arrow-go do by default).
func plainParquet(t testing.TB, rec arrow.RecordBatch, props ...parquet.WriterProperty) []byte {
	t.Helper()
	var buf bytes.Buffer
	fw, err := pqarrow.NewFileWriter(rec.Schema(), &buf, parquet.NewWriterProperties(props...), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.WriteBuffered(rec); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// readPlain reads a plaintext Parquet file with arrow-go: its Arrow schema
// (as pqarrow derives it, field IDs included) and all its rows.
func readPlain(t testing.TB, b []byte) (*arrow.Schema, arrow.Table) {
	t.Helper()
	pf, err := file.NewParquetReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	schema, err := fr.Schema()
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return schema, tbl
}

type resolver map[storageid.ID]pme.DEK

func (r resolver) ResolveDEK(_ context.Context, id storageid.ID) (pme.DEK, error) {
	if k, ok := r[id]; ok {
		return k, nil
	}
	return pme.DEK{}, reader.ErrNoKey
}

// readSealed opens a sealed object with the reader, checks that
// reader.Check reports it conformant, and returns its schema and rows.
func readSealed(t *testing.T, st *memstore.Store, obj writer.Object) (*arrow.Schema, arrow.Table) {
	t.Helper()
	ctx := context.Background()
	keys := resolver{obj.StorageID: obj.DEK}
	rep, err := reader.Check(ctx, st, obj.StorageID, keys)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Conformant() {
		t.Fatalf("reader.Check of a sealed object: %v", rep)
	}
	r, err := reader.Open(ctx, st, obj.StorageID, keys)
	if err != nil {
		t.Fatal(err)
	}
	rr, err := r.Scan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Release()
	var recs []arrow.RecordBatch
	for rr.Next() {
		rec := rr.RecordBatch()
		rec.Retain()
		recs = append(recs, rec)
	}
	if err := rr.Err(); err != nil {
		t.Fatal(err)
	}
	return r.Schema(), array.NewTableFromRecords(r.Schema(), recs)
}

// sameRows checks that two tables hold the same columns and values (their
// schemas' metadata aside).
func sameRows(t *testing.T, want, got arrow.Table) {
	t.Helper()
	if want.NumRows() != got.NumRows() || want.NumCols() != got.NumCols() {
		t.Fatalf("%d rows × %d columns, want %d × %d", got.NumRows(), got.NumCols(), want.NumRows(), want.NumCols())
	}
	for i := range int(want.NumCols()) {
		w, err := array.Concatenate(want.Column(i).Data().Chunks(), memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		g, err := array.Concatenate(got.Column(i).Data().Chunks(), memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		if !array.Equal(w, g) {
			t.Errorf("column %s differs", want.Schema().Field(i).Name)
		}
	}
}

// idsByPath returns the field IDs of a schema by path ("-" for none), with
// AssignFieldIDs' names for list elements, map keys and values.
func idsByPath(s *arrow.Schema) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Fields(ids(s)) {
		p, id, _ := strings.Cut(kv, "=")
		if id == "" {
			id = "-"
		}
		out[p] = id
	}
	return out
}

// stripIDs returns schema with the field IDs kept only where keep says.
func stripIDs(s *arrow.Schema, keep func(path string) bool) *arrow.Schema {
	var edit func(f arrow.Field, path string) arrow.Field
	edit = func(f arrow.Field, path string) arrow.Field {
		if !keep(path) {
			f.Metadata = arrow.Metadata{}
		}
		switch t := f.Type.(type) {
		case *arrow.MapType:
			k, v := edit(t.KeyField(), path+".key"), edit(t.ItemField(), path+".value")
			f.Type = arrow.MapOfFields(k, v)
		case *arrow.ListType:
			f.Type = arrow.ListOfField(edit(t.ElemField(), path+".element"))
		case *arrow.StructType:
			cs := make([]arrow.Field, t.NumFields())
			for i, c := range t.Fields() {
				cs[i] = edit(c, path+"."+c.Name)
			}
			f.Type = arrow.StructOf(cs...)
		}
		return f
	}
	fs := make([]arrow.Field, s.NumFields())
	for i, f := range s.Fields() {
		fs[i] = edit(f, f.Name)
	}
	return arrow.NewSchema(fs, nil)
}

// withSchema gives rec's columns another schema of the same types.
func withSchema(rec arrow.RecordBatch, s *arrow.Schema) arrow.RecordBatch {
	return array.NewRecordBatch(s, rec.Columns(), rec.NumRows())
}

// TestSealFile seals a file arrow-go wrote with several row groups, a
// dictionary, zstd, page indexes and bloom filters, and checks the object
// byte by byte (checkObject), with reader.Check, and against the rows
// arrow-go reads from the file; the page indexes and bloom filters the
// file has are gone from the object's footer, with their offsets; the
// file's metadata is kept and WithMetadata's appended; progress adds up.
func TestSealFile(t *testing.T) {
	t.Parallel()
	schema, rec := testTable(t, 5000, "")
	defer rec.Release()
	plain := plainParquet(t, rec, parquet.WithCompression(compress.Codecs.Zstd), parquet.WithMaxRowGroupLength(1500),
		parquet.WithDataPageSize(4096), parquet.WithPageIndexEnabled(true), parquet.WithBloomFilterEnabled(true))
	// The input has what the object must not: page indexes, bloom filters.
	inMeta := plainMeta(t, plain)
	if !hasIndexesAndBlooms(inMeta) {
		t.Fatal("the input has no page index or no bloom filter: the test proves nothing")
	}
	st := memstore.New()
	var progress []writer.Progress
	obj, err := writer.SealFile(context.Background(), st, bytes.NewReader(plain), int64(len(plain)),
		writer.WithMetadata("origin", "sealed"), writer.WithProgress(func(p writer.Progress) { progress = append(progress, p) }))
	if err != nil {
		t.Fatal(err)
	}
	data := st.Bytes(obj.StorageID)
	lay := checkObject(t, data, obj)
	checkFieldIDs(t, lay.footer, schema)
	outMeta, err := metadata.NewFileMetaData(lay.footer.Append(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	if hasIndexesAndBlooms(outMeta) || anyIndexOrBloom(outMeta) {
		t.Error("the object's footer still references a page index or a bloom filter")
	}
	if outMeta.NumRowGroups() != 4 || inMeta.NumRowGroups() != 4 || outMeta.NumRows != 5000 {
		t.Errorf("%d row groups and %d rows; the file has %d", outMeta.NumRowGroups(), outMeta.NumRows, inMeta.NumRowGroups())
	}
	kvs, err := lay.footer.KeyValues()
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, kv := range kvs {
		keys = append(keys, kv.Key)
	}
	if got := strings.Join(keys, " "); got != "ARROW:schema origin "+padme.PadKey {
		t.Errorf("footer keys %q, want the file's ARROW:schema, origin, then the pad entry", got)
	}
	_, want := readPlain(t, plain)
	defer want.Release()
	_, got := readSealed(t, st, obj)
	defer got.Release()
	sameRows(t, want, got)

	if len(progress) != 5 {
		t.Fatalf("%d progress calls, want 4 row groups and the end", len(progress))
	}
	last := progress[len(progress)-1]
	if last.Rows != 5000 || last.RowGroups != 4 || last.BytesIn != int64(len(plain)) || last.BytesOut != int64(obj.Size) {
		t.Errorf("last progress %+v; file %d bytes, object %d", last, len(plain), obj.Size)
	}
	if p := progress[0]; p.RowGroups != 1 || p.Rows != 1500 || p.BytesIn <= 0 || p.BytesOut <= 0 {
		t.Errorf("first progress %+v", p)
	}
}

func plainMeta(t testing.TB, b []byte) *metadata.FileMetaData {
	t.Helper()
	pf, err := file.NewParquetReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return pf.MetaData()
}

// hasIndexesAndBlooms reports whether some column chunk has a column
// index, an offset index, and a bloom filter.
func hasIndexesAndBlooms(md *metadata.FileMetaData) bool {
	var ci, oi, bf bool
	eachChunk(md, func(cc *metadata.ColumnChunkMetaData) {
		ci = ci || cc.GetColumnIndexLocation() != nil
		oi = oi || cc.GetOffsetIndexLocation() != nil
		bf = bf || cc.BloomFilterOffset() > 0
	})
	return ci && oi && bf
}

func anyIndexOrBloom(md *metadata.FileMetaData) bool {
	found := false
	eachChunk(md, func(cc *metadata.ColumnChunkMetaData) {
		found = found || cc.GetColumnIndexLocation() != nil || cc.GetOffsetIndexLocation() != nil ||
			cc.BloomFilterOffset() != 0 || cc.BloomFilterLength() != 0 || cc.HasIndexPage()
	})
	return found
}

func eachChunk(md *metadata.FileMetaData, fn func(*metadata.ColumnChunkMetaData)) {
	for i := range md.NumRowGroups() {
		rg := md.RowGroup(i)
		for j := range rg.NumColumns() {
			cc, err := rg.ColumnChunk(j)
			if err == nil {
				fn(cc)
			}
		}
	}
}

// TestSealFileFieldIDs checks the field IDs of sealed objects against the
// rule: for files without IDs, with some, and with nested fields (lists,
// maps, structs), the IDs in the sealed object's schema equal what
// AssignFieldIDs gives the Arrow schema pqarrow reads from the file; IDs
// the file has are kept. Without WithAssignFieldIDs such a file is
// refused, naming the fields, and nothing is staged.
func TestSealFileFieldIDs(t *testing.T) {
	t.Parallel()
	full, rec := testTable(t, 300, "")
	defer rec.Release()
	cases := map[string]func(path string) bool{
		"none":           func(string) bool { return false },
		"top-level only": func(p string) bool { return !strings.Contains(p, ".") },
		"nested only":    func(p string) bool { return strings.Contains(p, ".") },
		"some":           func(p string) bool { return p == "pt" || p == "m.value" || p == "long" || p == "tags.element" },
		"all":            func(string) bool { return true },
	}
	for name, keep := range cases {
		t.Run(name, func(t *testing.T) {
			in := withSchema(rec, stripIDs(full, keep))
			plain := plainParquet(t, in, parquet.WithMaxRowGroupLength(100))
			pqSchema, want := readPlain(t, plain)
			defer want.Release()
			wantIDs, err := writer.AssignFieldIDs(pqSchema)
			if err != nil {
				t.Fatal(err)
			}
			st := memstore.New()
			obj, err := writer.SealFile(context.Background(), st, bytes.NewReader(plain), int64(len(plain)), writer.WithAssignFieldIDs())
			if err != nil {
				t.Fatal(err)
			}
			gotSchema, got := readSealed(t, st, obj)
			defer got.Release()
			sameRows(t, want, got)
			w, g := idsByPath(wantIDs), idsByPath(gotSchema)
			if fmt.Sprint(w) != fmt.Sprint(g) {
				t.Errorf("field IDs of the sealed object:\n%v\nAssignFieldIDs of the file's schema:\n%v", g, w)
			}
			// IDs the file has are kept.
			for p, id := range idsByPath(full) {
				if keep(p) && g[p] != id {
					t.Errorf("%s: ID %s, the file has %s", p, g[p], id)
				}
			}

			var missing []string
			for _, kv := range strings.Fields(ids(pqSchema)) {
				if p, id, _ := strings.Cut(kv, "="); id == "-1" || id == "" {
					missing = append(missing, p)
				}
			}
			_, err = writer.SealFile(context.Background(), st, bytes.NewReader(plain), int64(len(plain)))
			switch {
			case len(missing) == 0 && err != nil:
				t.Errorf("a file with every ID: %v", err)
			case len(missing) > 0 && (!errors.Is(err, writer.ErrFieldID) || !strings.Contains(err.Error(), ": "+strings.Join(missing, ", ")+" ha")):
				t.Errorf("a file missing IDs, without WithAssignFieldIDs: %v, want ErrFieldID naming %v", err, missing)
			}
		})
	}

	// The rule, spelled out for a file without IDs: top-level fields
	// 1..9 in order, then their children level by level.
	t.Run("golden", func(t *testing.T) {
		in := withSchema(rec, stripIDs(full, func(string) bool { return false }))
		plain := plainParquet(t, in)
		st := memstore.New()
		obj, err := writer.SealFile(context.Background(), st, bytes.NewReader(plain), int64(len(plain)), writer.WithAssignFieldIDs())
		if err != nil {
			t.Fatal(err)
		}
		s, tbl := readSealed(t, st, obj)
		tbl.Release()
		const want = "id=1 x=2 s=3 ts=4 ok=5 tags=6 tags.element=10 pt=7 pt.a=11 pt.b=12 m=8 m.key=13 m.value=14 long=9"
		if got := ids(s); got != want {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	})
}

// TestSealFileDuplicateIDs: duplicate IDs are refused, with
// WithAssignFieldIDs or without, before anything is staged.
func TestSealFileDuplicateIDs(t *testing.T) {
	t.Parallel()
	full, rec := testTable(t, 50, "")
	defer rec.Release()
	fs := full.Fields()
	fs[8].Metadata = fieldID(3) // "long" takes "s"'s ID
	plain := plainParquet(t, withSchema(rec, arrow.NewSchema(fs, nil)))
	for _, opts := range [][]writer.Option{nil, {writer.WithAssignFieldIDs()}} {
		st := newMemStore()
		_, err := writer.SealFile(context.Background(), st, bytes.NewReader(plain), int64(len(plain)), opts...)
		if !errors.Is(err, writer.ErrFieldID) || !strings.Contains(err.Error(), "share 3") {
			t.Errorf("%d options: %v, want ErrFieldID for the shared ID 3", len(opts), err)
		}
		if st.created != 0 {
			t.Errorf("%d objects staged", st.created)
		}
	}
}

// editFooter rewrites the footer of a plaintext Parquet file with edit.
func editFooter(t *testing.T, plain []byte, edit func(md *thrift.Struct)) []byte {
	t.Helper()
	flen := int(binary.LittleEndian.Uint32(plain[len(plain)-8:]))
	start := len(plain) - 8 - flen
	md, err := thrift.DecodeExact(plain[start:len(plain)-8], thrift.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	edit(md)
	out := md.Append(bytes.Clone(plain[:start]))
	out = binary.LittleEndian.AppendUint32(out, uint32(len(out)-start))
	return append(out, "PAR1"...)
}

// setCodec sets the codec of every column chunk's ColumnMetaData.
func setCodec(codec int32) func(md *thrift.Struct) {
	return func(md *thrift.Struct) {
		rgs, _ := md.List(4)
		for _, rg := range rgs.Items {
			cols, _ := rg.Struct.List(1)
			for _, cc := range cols.Items {
				cmd, _ := cc.Struct.Struct(3)
				cmd.Set(4, thrift.I32(codec))
			}
		}
	}
}

// bumpSnappyLength returns an edit that adds one to the decoded length that
// the snappy body of the file's first page starts with (a varint whose
// first byte is not 0x7f or 0xff, so that its length stays).
func bumpSnappyLength(t *testing.T) func(b []byte) {
	return func(b []byte) {
		_, n, err := thrift.Decode(b[4:], thrift.DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		body := b[4+n:]
		if body[0]&0x7f == 0x7f {
			t.Fatal("the first page's length byte would carry: pick another table")
		}
		body[0]++
	}
}

// TestSealFileRefusals: bad input and files the sealer cannot take get
// typed errors, and nothing is published: a refusal found while sealing
// aborts the staged import.
func TestSealFileRefusals(t *testing.T) {
	t.Parallel()
	_, rec := testTable(t, 3000, "")
	defer rec.Release()
	good := plainParquet(t, rec, parquet.WithMaxRowGroupLength(1000), parquet.WithCompression(compress.Codecs.Snappy))
	v2plain := plainParquet(t, rec, parquet.WithMaxRowGroupLength(1000), parquet.WithDataPageVersion(parquet.DataPageV2), parquet.WithCompression(compress.Codecs.Uncompressed))
	clone := func(b []byte, f func([]byte)) []byte { b = bytes.Clone(b); f(b); return b }
	reserved := func() []byte {
		var buf bytes.Buffer
		fw, err := pqarrow.NewFileWriter(rec.Schema(), &buf, parquet.NewWriterProperties(), pqarrow.NewArrowWriterProperties())
		if err != nil {
			t.Fatal(err)
		}
		fw.AppendKeyValueMetadata(padme.PadKey+"-", "")
		if err := fw.Write(rec); err != nil {
			t.Fatal(err)
		}
		fw.Close()
		return buf.Bytes()
	}()
	for name, c := range map[string]struct {
		file    []byte
		want    []error
		column  string // the column a *writer.ColumnError names
		staged  bool   // refused after the import was staged
		message string
	}{
		// The first page's snappy length one more than its size: a
		// decompressor would allocate what it says.
		"snappy length": {file: clone(good, bumpSnappyLength(t)), want: []error{writer.ErrNotSealable, writer.ErrUnboundedPage}, column: "id", staged: true},
		// The file as it is, but a codec DuckDB or arrow-go cannot read.
		"LZO":           {file: editFooter(t, good, setCodec(3)), want: []error{writer.ErrNotSealable, writer.ErrCodec}, column: "id", staged: true},
		"unknown codec": {file: editFooter(t, good, setCodec(99)), want: []error{writer.ErrNotSealable, writer.ErrCodec}, column: "id", staged: true},
		// Snappy pages labelled LZ4, which the sealer rewrites as LZ4_RAW
		// (TestSealFileLZ4): they do not decompress.
		"not LZ4":      {file: editFooter(t, good, setCodec(5)), want: []error{writer.ErrPlaintextParquet}, column: "id", staged: true},
		"not Parquet":  {file: clone(good, func(b []byte) { copy(b, "XXXX") }), want: []error{writer.ErrPlaintextParquet}},
		"encrypted":    {file: clone(good, func(b []byte) { copy(b[len(b)-4:], "PARE") }), want: []error{writer.ErrPlaintextParquet}},
		"truncated":    {file: good[:len(good)/2], want: []error{writer.ErrPlaintextParquet}},
		"short":        {file: good[:11], want: []error{writer.ErrPlaintextParquet}},
		"page damaged": {file: clone(good, func(b []byte) { b[4] ^= 0xff }), want: []error{writer.ErrPlaintextParquet}, staged: true},
		"reserved key": {file: reserved, want: []error{writer.ErrPlaintextParquet}, staged: true, message: padme.PadKey},
	} {
		t.Run(name, func(t *testing.T) {
			st := newMemStore()
			_, err := writer.SealFile(context.Background(), st, bytes.NewReader(c.file), int64(len(c.file)))
			for _, w := range c.want {
				if !errors.Is(err, w) {
					t.Errorf("got %v, want %v", err, w)
				}
			}
			if c.column != "" {
				var ce *writer.ColumnError
				if !errors.As(err, &ce) || ce.Column != c.column {
					t.Errorf("got %v, want a *writer.ColumnError naming %s", err, c.column)
				}
			}
			if c.message != "" && (err == nil || !strings.Contains(err.Error(), c.message)) {
				t.Errorf("got %v, want it to name %s", err, c.message)
			}
			if st.count() != 0 {
				t.Errorf("%d objects published", st.count())
			}
			if staged := st.created > 0; staged != c.staged || st.abortCount() != st.created {
				t.Errorf("%d imports staged, %d aborted; want staged %v and all aborted", st.created, st.abortCount(), c.staged)
			}
		})
	}
	// Uncompressed V2 pages are sealed; so are LZ4_RAW ones.
	for name, f := range map[string][]byte{"V2 uncompressed": v2plain, "LZ4_RAW": plainParquet(t, rec, parquet.WithCompression(compress.Codecs.Lz4Raw))} {
		st := memstore.New()
		obj, err := writer.SealFile(context.Background(), st, bytes.NewReader(f), int64(len(f)))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		readsAsFile(t, st, obj, f)
	}
}

// readsAsFile checks that the sealed object obj in st is conformant and
// reads as the plaintext file f does.
func readsAsFile(t *testing.T, st *memstore.Store, obj writer.Object, f []byte) {
	t.Helper()
	_, want := readPlain(t, f)
	defer want.Release()
	_, got := readSealed(t, st, obj)
	defer got.Release()
	sameRows(t, want, got)
}

// TestSealFileV2: compressed DATA_PAGE_V2 pages, which DuckDB cannot read
// in an encrypted file, are rewritten as V1 pages (their values
// decompressed and compressed again), for every codec, with and without
// dictionaries, in nested, optional and required columns and columns of
// nulls only, over many pages:
// the object is conformant and reads as the file does, and Progress counts
// the pages rewritten.
func TestSealFileV2(t *testing.T) {
	t.Parallel()
	_, rec := testTable(t, 3000, "")
	defer rec.Release()
	required := arrow.NewSchema([]arrow.Field{
		{Name: "n", Type: arrow.PrimitiveTypes.Int64, Metadata: fieldID(1)},
		{Name: "s", Type: arrow.BinaryTypes.String, Metadata: fieldID(2)},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, required)
	for i := range 5000 {
		b.Field(0).(*array.Int64Builder).Append(int64(i * i))
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprint("v", i%37))
	}
	req := b.NewRecordBatch()
	b.Release()
	defer req.Release()
	nullable := arrow.NewSchema([]arrow.Field{
		{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true, Metadata: fieldID(1)},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: fieldID(2)},
	}, nil)
	nb := array.NewRecordBuilder(memory.DefaultAllocator, nullable)
	for range 3000 { // pages of no values: nothing to decompress
		nb.Field(0).AppendNull()
		nb.Field(1).AppendNull()
	}
	nulls := nb.NewRecordBatch()
	nb.Release()
	defer nulls.Release()
	for _, c := range []compress.Compression{compress.Codecs.Zstd, compress.Codecs.Snappy, compress.Codecs.Gzip, compress.Codecs.Brotli, compress.Codecs.Lz4Raw} {
		for _, dict := range []bool{true, false} {
			for name, r := range map[string]arrow.RecordBatch{"nested": rec, "required": req, "nulls": nulls} {
				t.Run(fmt.Sprintf("%v/dictionary=%v/%s", c, dict, name), func(t *testing.T) {
					if name == "nulls" && c == compress.Codecs.Brotli {
						// arrow-go v18.8.0 cannot read its own brotli page
						// of no values ("decoded data exceeds destination
						// size 0"): nothing to compare with.
						return
					}
					f := plainParquet(t, r, parquet.WithDataPageVersion(parquet.DataPageV2), parquet.WithCompression(c),
						parquet.WithDictionaryDefault(dict), parquet.WithDataPageSize(2048), parquet.WithMaxRowGroupLength(1200))
					st := memstore.New()
					var rewritten int64
					obj, err := writer.SealFile(context.Background(), st, bytes.NewReader(f), int64(len(f)),
						writer.WithProgress(func(p writer.Progress) { rewritten = p.RewrittenPages }))
					if err != nil {
						t.Fatal(err)
					}
					// The nulls table is one page a column and row group.
					if min := map[bool]int64{true: 6, false: 10}[name == "nulls"]; rewritten < min {
						t.Errorf("%d pages rewritten; the file has at least %d V2 pages", rewritten, min)
					}
					readsAsFile(t, st, obj, f)
				})
			}
		}
	}
}

// streamZstd returns a compressor that writes a page as klauspost/compress's
// streaming zstd writer does: a frame without a content size, flushed
// (ending a block) every flush bytes if flush > 0.
func streamZstd(t *testing.T, flush int) func([]byte) []byte {
	return func(page []byte) []byte {
		var out bytes.Buffer
		w, err := zstd.NewWriter(&out)
		if err != nil {
			t.Fatal(err)
		}
		for len(page) > 0 {
			k := len(page)
			if flush > 0 {
				k = min(k, flush)
			}
			w.Write(page[:k])
			page = page[k:]
			if flush > 0 {
				w.Flush()
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return out.Bytes()
	}
}

// TestSealFileStreamingZstd: pages of a streaming zstd compressor, frames
// without a content size, are sealed when their blocks bound what they
// decode to (full blocks of 128 KiB), and refused with ErrUnboundedPage,
// naming the column, when they do not (a block every 256 bytes, each of
// which could decode to 128 KiB); arrow-go reads both files.
func TestSealFileStreamingZstd(t *testing.T) {
	t.Parallel()
	_, rec := testTable(t, 4000, "")
	defer rec.Release()
	plain := plainParquet(t, rec, parquet.WithCompression(compress.Codecs.Uncompressed), parquet.WithMaxRowGroupLength(2000), parquet.WithDataPageSize(256<<10))
	whole, err := plainedit.Recompress(plain, int32(compress.Codecs.Zstd), streamZstd(t, 0))
	if err != nil {
		t.Fatal(err)
	}
	_, want := readPlain(t, whole)
	defer want.Release()
	st := memstore.New()
	obj, err := writer.SealFile(context.Background(), st, bytes.NewReader(whole), int64(len(whole)))
	if err != nil {
		t.Fatal(err)
	}
	_, got := readSealed(t, st, obj)
	sameRows(t, want, got)
	got.Release()

	flushy, err := plainedit.Recompress(plain, int32(compress.Codecs.Zstd), streamZstd(t, 256), 1)
	if err != nil {
		t.Fatal(err)
	}
	_, again := readPlain(t, flushy)
	sameRows(t, want, again)
	again.Release()
	_, err = writer.SealFile(context.Background(), st, bytes.NewReader(flushy), int64(len(flushy)))
	var ce *writer.ColumnError
	if !errors.Is(err, writer.ErrNotSealable) || !errors.Is(err, writer.ErrUnboundedPage) || !errors.As(err, &ce) || ce.RowGroup != 1 {
		t.Fatalf("got %v; want ErrNotSealable and ErrUnboundedPage naming a column of row group 1", err)
	}
}

// TestSealFileOptions: the options of encoding are refused, and so is
// WithAssignFieldIDs for New; a nil store or file too.
func TestSealFileOptions(t *testing.T) {
	t.Parallel()
	_, rec := testTable(t, 10, "")
	defer rec.Release()
	plain := plainParquet(t, rec)
	for _, o := range []writer.Option{writer.WithCodec(writer.Snappy), writer.WithRowGroupRows(10), writer.WithRowGroupBytes(1 << 20),
		writer.WithDataPageSize(1 << 10), writer.WithDataPageVersion(writer.DataPageV2), writer.WithDictionary(false)} {
		st := newMemStore()
		if _, err := writer.SealFile(context.Background(), st, bytes.NewReader(plain), int64(len(plain)), o); !errors.Is(err, writer.ErrOption) || st.created != 0 {
			t.Errorf("SealFile with an option of encoding: %v, %d staged", err, st.created)
		}
	}
	if _, err := writer.SealFile(context.Background(), nil, bytes.NewReader(plain), int64(len(plain))); !errors.Is(err, writer.ErrOption) {
		t.Errorf("nil store: %v", err)
	}
	if _, err := writer.SealFile(context.Background(), newMemStore(), nil, 0); !errors.Is(err, writer.ErrOption) {
		t.Errorf("nil file: %v", err)
	}
	if _, err := writer.New(context.Background(), newMemStore(), rec.Schema(), writer.WithAssignFieldIDs()); !errors.Is(err, writer.ErrOption) {
		t.Errorf("New with WithAssignFieldIDs: %v", err)
	}
}

// failAt is a ReaderAt that fails from the n-th read on.
type failAt struct {
	r     *bytes.Reader
	n     atomic.Int32
	after int32
}

var errRead = errors.New("read failed")

func (f *failAt) ReadAt(p []byte, off int64) (int, error) {
	if f.n.Add(1) > f.after {
		return 0, errRead
	}
	return f.r.ReadAt(p, off)
}

// TestSealFileAborts: a cancelled context, a failing read and a failing
// store, each midway, publish nothing and abort the staged import.
func TestSealFileAborts(t *testing.T) {
	t.Parallel()
	_, rec := testTable(t, 4000, "")
	defer rec.Release()
	plain := plainParquet(t, rec, parquet.WithMaxRowGroupLength(1000))
	t.Run("cancel", func(t *testing.T) {
		st := newMemStore()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		rgs := 0
		_, err := writer.SealFile(ctx, st, bytes.NewReader(plain), int64(len(plain)), writer.WithProgress(func(p writer.Progress) {
			if rgs = p.RowGroups; rgs == 2 {
				cancel()
			}
		}))
		if !errors.Is(err, context.Canceled) || rgs != 2 {
			t.Errorf("got %v after %d row groups, want context.Canceled after 2", err, rgs)
		}
		if st.count() != 0 || st.created != 1 || st.abortCount() != 1 {
			t.Errorf("%d published, %d staged, %d aborted", st.count(), st.created, st.abortCount())
		}
	})
	t.Run("cancelled before", func(t *testing.T) {
		st := newMemStore()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := writer.SealFile(ctx, st, bytes.NewReader(plain), int64(len(plain))); !errors.Is(err, context.Canceled) || st.created != 0 {
			t.Errorf("got %v, %d staged", err, st.created)
		}
	})
	t.Run("read fails", func(t *testing.T) {
		st := newMemStore()
		_, err := writer.SealFile(context.Background(), st, &failAt{r: bytes.NewReader(plain), after: 40}, int64(len(plain)))
		if !errors.Is(err, errRead) || st.count() != 0 || st.created != 1 || st.abortCount() != 1 {
			t.Errorf("got %v; %d published, %d staged, %d aborted", err, st.count(), st.created, st.abortCount())
		}
	})
	t.Run("store fails", func(t *testing.T) {
		st := newMemStore()
		st.failAfter = len(plain) / 3
		_, err := writer.SealFile(context.Background(), st, bytes.NewReader(plain), int64(len(plain)))
		if !errors.Is(err, errDiskFull) || st.count() != 0 || st.abortCount() != 1 {
			t.Errorf("got %v; %d published, %d aborted", err, st.count(), st.abortCount())
		}
	})
}

// discardStore is a blobs.Store that computes each object's storage_id as
// its bytes pass (with the outboard, as blobs.Dir does) and keeps nothing
// else: an import without a disk.
type discardStore struct{}

func (discardStore) Create(context.Context) (blobs.Pending, error) { return &hashPending{}, nil }

type hashPending struct{ h verify.Hasher }

func (p *hashPending) Write(b []byte) (int, error) { return p.h.Write(b) }
func (p *hashPending) Commit(context.Context) (storageid.ID, error) {
	id, _ := p.h.Sum()
	return id, nil
}
func (p *hashPending) Abort() error { return nil }

// TestSealFileMemory seals a 192 MiB file of 1 MiB pages, read from disk,
// and measures the peak Go heap while it does: bounded by a few pages and
// the decoding of a batch (SealFile decodes each row group as the reader
// will), not by the file or its row groups (24 MiB each).
func TestSealFileMemory(t *testing.T) {
	if testing.Short() && os.Getenv("CI") == "" {
		t.Skip("-short, not under CI: writes a 96 MiB file")
	}
	const pageSize = 1 << 20
	n := 12 << 20 / 8
	b := array.NewInt64Builder(memory.DefaultAllocator)
	for i := range n {
		b.Append(int64(uint64(i) * 0x9E3779B97F4A7C15))
	}
	col := b.NewArray()
	b.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64, Metadata: fieldID(1)},
		{Name: "b", Type: arrow.PrimitiveTypes.Int64, Metadata: fieldID(2)}}, nil)
	path := filepath.Join(t.TempDir(), "in.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	fw, err := pqarrow.NewFileWriter(schema, f, parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Uncompressed),
		parquet.WithDictionaryDefault(false), parquet.WithDataPageSize(pageSize), parquet.WithMaxRowGroupLength(int64(n))), pqarrow.NewArrowWriterProperties())
	if err != nil {
		t.Fatal(err)
	}
	for range 8 {
		rec := array.NewRecordBatch(schema, []arrow.Array{col, col}, int64(n))
		if err := fw.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	col.Release()
	in, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	fi, _ := in.Stat()

	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	})
	obj, err := writer.SealFile(context.Background(), discardStore{}, in, fi.Size())
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	growth := float64(peak.Load()) - float64(base.HeapInuse)
	t.Logf("file %.1f MiB, object %.1f MiB; peak heap %.1f MiB over %.1f MiB before", float64(fi.Size())/(1<<20), float64(obj.Size)/(1<<20), growth/(1<<20), float64(base.HeapInuse)/(1<<20))
	// A page of plaintext, its sealed modules, the sink's buffers on their
	// way to the store (at most 5 MiB), and the footer: a few pages live;
	// decoding a batch of 65,536 rows (a page, a read buffer and the
	// batch's values for each column); and as much again of garbage the
	// collector has not yet taken. The file is 192 pages, a row group 24.
	if limit := 64.0 * pageSize; growth > limit || math.IsNaN(growth) {
		t.Errorf("peak heap grew by %.1f MiB sealing a %.1f MiB file; want at most %.0f MiB", growth/(1<<20), float64(fi.Size())/(1<<20), limit/(1<<20))
	}
}

// TestSealFileEmpty: a file of an empty table (arrow-go writes one row
// group of empty column chunks) seals into a conformant object without
// rows, with the file's schema.
func TestSealFileEmpty(t *testing.T) {
	t.Parallel()
	schema, rec := testTable(t, 10, "")
	defer rec.Release()
	empty := rec.NewSlice(0, 0)
	defer empty.Release()
	plain := plainParquet(t, empty)
	if plainMeta(t, plain).NumRowGroups() != 1 {
		t.Fatal("arrow-go wrote no row group for the empty table: the test proves nothing")
	}
	st := memstore.New()
	obj, err := writer.SealFile(context.Background(), st, bytes.NewReader(plain), int64(len(plain)))
	if err != nil {
		t.Fatal(err)
	}
	s, tbl := readSealed(t, st, obj)
	defer tbl.Release()
	if tbl.NumRows() != 0 || ids(s) != ids(schema) {
		t.Errorf("%d rows, schema %s; want 0 rows and %s", tbl.NumRows(), ids(s), ids(schema))
	}
}

// TestSealFileFieldIDsFrom: WithFieldIDsFrom gives the sealed object the
// IDs of another schema, matched by name, over the file's own (or in
// place of none); a field that schema lacks is refused with ErrFieldID
// before anything is staged.
func TestSealFileFieldIDsFrom(t *testing.T) {
	t.Parallel()
	full, rec := testTable(t, 120, "")
	defer rec.Release()
	from, err := writer.AssignFieldIDs(stripIDs(full, func(string) bool { return false }))
	if err != nil {
		t.Fatal(err)
	}
	// from's fields in another order: matched by name, not place.
	fs := from.Fields()
	fs[0], fs[1] = fs[1], fs[0]
	from = arrow.NewSchema(fs, nil)
	const want = "id=1 x=2 s=3 ts=4 ok=5 tags=6 tags.element=10 pt=7 pt.a=11 pt.b=12 m=8 m.key=13 m.value=14 long=9"
	for name, keep := range map[string]func(string) bool{
		"file without IDs": func(string) bool { return false },
		"file with IDs":    func(string) bool { return true },
	} {
		t.Run(name, func(t *testing.T) {
			plain := plainParquet(t, withSchema(rec, stripIDs(full, keep)))
			st := memstore.New()
			obj, err := writer.SealFile(context.Background(), st, bytes.NewReader(plain), int64(len(plain)), writer.WithFieldIDsFrom(from))
			if err != nil {
				t.Fatal(err)
			}
			s, tbl := readSealed(t, st, obj)
			tbl.Release()
			if got := ids(s); got != want {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
	t.Run("field missing", func(t *testing.T) {
		plain := plainParquet(t, rec)
		short := arrow.NewSchema(from.Fields()[:5], nil)
		st := newMemStore()
		_, err := writer.SealFile(context.Background(), st, bytes.NewReader(plain), int64(len(plain)), writer.WithFieldIDsFrom(short))
		if !errors.Is(err, writer.ErrFieldID) {
			t.Errorf("%v, want ErrFieldID", err)
		}
		if st.created != 0 {
			t.Errorf("%d objects staged", st.created)
		}
	})
	t.Run("with assign", func(t *testing.T) {
		plain := plainParquet(t, rec)
		_, err := writer.SealFile(context.Background(), memstore.New(), bytes.NewReader(plain), int64(len(plain)), writer.WithFieldIDsFrom(from), writer.WithAssignFieldIDs())
		if !errors.Is(err, writer.ErrOption) {
			t.Errorf("%v, want ErrOption", err)
		}
	})
}
