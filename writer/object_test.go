package writer_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/padme"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/writer"
)

// layout is what checkObject found in an object.
type layout struct {
	dataEnd int64
	footer  *pme.Footer
	modules int
}

// checkObject asserts, byte by byte, the SOP-PME-1 structure of data
// written as obj: "PARE" at both ends; FileCryptoMetaData exactly
// AES_GCM_V1{} plus the 16-byte key_ref; every data module opens under the
// DEK with the empty AAD; the modules tile the data region exactly and the
// column chunks of the footer tile it too; one valid, all-zero padding entry;
// size = Padmé(unpadded size).
func checkObject(t *testing.T, data []byte, obj writer.Object) layout {
	t.Helper()
	if uint64(len(data)) != obj.Size {
		t.Fatalf("object has %d bytes, Object.Size says %d", len(data), obj.Size)
	}
	if string(data[:4]) != "PARE" || string(data[len(data)-4:]) != "PARE" {
		t.Fatalf("magic: %q ... %q", data[:4], data[len(data)-4:])
	}
	flen, err := pme.ParseTrailer(data[len(data)-8:])
	if err != nil {
		t.Fatal(err)
	}
	dataEnd := int64(len(data)) - 8 - int64(flen)
	tail, err := pme.ParseFooterRegion(data[dataEnd : len(data)-8])
	if err != nil {
		t.Fatal(err)
	}
	wantCM := append([]byte{0x1c, 0x1c, 0x00, 0x00, 0x18, 0x10}, append(obj.KeyRef[:], 0x00)...)
	if got := data[dataEnd : dataEnd+int64(tail.CryptoLen)]; !bytes.Equal(got, wantCM) {
		t.Fatalf("FileCryptoMetaData = % x, want % x", got, wantCM)
	}
	if tail.Crypto.SupplyAADPrefix || !bytes.Equal(tail.Crypto.KeyMetadata, obj.KeyRef[:]) {
		t.Fatalf("crypto metadata %+v", tail.Crypto)
	}
	footer, err := pme.OpenFooter(obj.DEK, tail.FooterBody)
	if err != nil {
		t.Fatal(err)
	}

	// The data modules tile [4, dataEnd), each opens, and the column chunks
	// start at module boundaries and tile the same region.
	starts := map[int64]bool{}
	n := 0
	for off := int64(4); off < dataEnd; n++ {
		body, _, err := pme.SplitModule(data[off:dataEnd])
		if err != nil {
			t.Fatalf("module at %d: %v", off, err)
		}
		if _, err := obj.DEK.Open(nil, body); err != nil {
			t.Fatalf("module at %d does not open under the DEK with the empty AAD: %v", off, err)
		}
		starts[off] = true
		off += int64(pme.LenSize + len(body))
		if off > dataEnd {
			t.Fatalf("module overruns the data region")
		}
	}
	chunks, err := footer.ColumnChunks()
	if err != nil {
		t.Fatal(err)
	}
	next := int64(4)
	for i, rg := range chunks {
		for j, c := range rg {
			if c.Off != next || !starts[c.Off] {
				t.Fatalf("row group %d column %d starts at %d, want the module boundary %d", i, j, c.Off, next)
			}
			next = c.End()
		}
	}
	if next != dataEnd {
		t.Fatalf("column chunks end at %d, data region at %d", next, dataEnd)
	}

	// Exactly one padding entry, a valid key, zero bytes; size = Padmé(L).
	kvs, err := footer.KeyValues()
	if err != nil {
		t.Fatal(err)
	}
	var pads []pme.KeyValue
	for _, kv := range kvs {
		if padme.IsReserved(kv.Key) {
			pads = append(pads, kv)
		}
	}
	if len(pads) != 1 || !padme.ValidKey(pads[0].Key) || pads[0].Value == nil || bytes.ContainsFunc(pads[0].Value, func(r rune) bool { return r != 0 }) {
		t.Fatalf("padding entries: %d, first key %q", len(pads), pads[0].Key)
	}
	pad := padme.Pad{ValueLen: uint64(len(pads[0].Value)), KeyTail: len(pads[0].Key) - len(padme.PadKey)}
	if obj.UnpaddedSize != obj.Size-pad.Growth() {
		t.Fatalf("unpadded %d, size %d, pad growth %d", obj.UnpaddedSize, obj.Size, pad.Growth())
	}
	if target, _ := padme.Target(obj.UnpaddedSize); target != obj.Size {
		t.Fatalf("size %d, Padmé(%d) = %d", obj.Size, obj.UnpaddedSize, target)
	}
	if pad != padme.Solve(obj.Size-obj.UnpaddedSize) {
		t.Fatalf("pad %+v is not the canonical solve", pad)
	}
	return layout{dataEnd: dataEnd, footer: footer, modules: n}
}

// checkFieldIDs asserts that the decrypted footer carries the field IDs of
// the Arrow schema, for every named field, nested ones included.
func checkFieldIDs(t *testing.T, footer *pme.Footer, schema *arrow.Schema) {
	t.Helper()
	want := map[string]string{}
	var walk func(f arrow.Field, path string)
	walk = func(f arrow.Field, path string) {
		id, _ := f.Metadata.GetValue(writer.FieldIDKey)
		want[path] = id
		switch dt := f.Type.(type) {
		case *arrow.MapType:
			walk(dt.KeyField(), path+".key")
			walk(dt.ItemField(), path+".value")
		case arrow.ListLikeType:
			walk(dt.ElemField(), path+".element")
		case *arrow.StructType:
			for _, c := range dt.Fields() {
				walk(c, path+"."+c.Name)
			}
		}
	}
	for _, f := range schema.Fields() {
		walk(f, f.Name)
	}
	fields, err := footer.Fields()
	if err != nil {
		t.Fatal(err)
	}
	if len(fields) != len(want) {
		t.Fatalf("footer has %d named fields, schema %d: %+v", len(fields), len(want), fields)
	}
	for _, f := range fields {
		w, ok := want[f.Path]
		if !ok || !f.HasID || fmt.Sprint(f.ID) != w {
			t.Errorf("field %s: footer id %d (present %v), schema %q", f.Path, f.ID, f.HasID, w)
		}
	}
}

func TestObjectLayout(t *testing.T) {
	t.Parallel()
	schema, rec := testTable(t, 5000, "")
	defer rec.Release()
	for _, tc := range []struct {
		name string
		opts []writer.Option
	}{
		{"default", nil},
		{"row groups and small pages", []writer.Option{writer.WithRowGroupRows(1200), writer.WithDataPageSize(4 << 10)}},
		{"v2 uncompressed plain", []writer.Option{writer.WithDataPageVersion(writer.DataPageV2), writer.WithCodec(writer.Uncompressed), writer.WithDictionary(false)}},
		{"uncompressed", []writer.Option{writer.WithCodec(writer.Uncompressed), writer.WithRowGroupRows(2500)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newMemStore()
			obj := writeObject(t, st, schema, []arrow.RecordBatch{rec}, tc.opts...)
			l := checkObject(t, st.get(obj.StorageID), obj)
			checkFieldIDs(t, l.footer, schema)
			chunks, _ := l.footer.ColumnChunks()
			t.Logf("%d bytes, %d row groups, %d modules, unpadded %d", obj.Size, len(chunks), l.modules, obj.UnpaddedSize)
		})
	}
}

func TestEmptyObject(t *testing.T) {
	t.Parallel()
	schema, rec := testTable(t, 0, "")
	defer rec.Release()
	st := newMemStore()
	obj := writeObject(t, st, schema, nil)
	l := checkObject(t, st.get(obj.StorageID), obj)
	if chunks, _ := l.footer.ColumnChunks(); len(chunks) != 0 {
		t.Fatalf("%d row groups in an object without rows", len(chunks))
	}
}

// TestFreshKeys checks that two objects of the same rows share no key, no
// key_ref, no storage_id, and no byte of ciphertext beyond the format's
// constants.
func TestFreshKeys(t *testing.T) {
	t.Parallel()
	schema, rec := testTable(t, 100, "")
	defer rec.Release()
	st := newMemStore()
	a := writeObject(t, st, schema, []arrow.RecordBatch{rec})
	b := writeObject(t, st, schema, []arrow.RecordBatch{rec})
	if a.DEK.Equal(b.DEK) || a.KeyRef == b.KeyRef || a.StorageID == b.StorageID {
		t.Fatal("two objects share a DEK, a key_ref or a storage_id")
	}
	if a.Size != b.Size || a.UnpaddedSize != b.UnpaddedSize {
		t.Fatalf("same rows, different sizes: %d/%d vs %d/%d", a.Size, a.UnpaddedSize, b.Size, b.UnpaddedSize)
	}
	if a.DEK.Len() != pme.DEKSize || a.DEK.Sealed() == 0 {
		t.Fatalf("DEK of %d bytes sealed %d modules", a.DEK.Len(), a.DEK.Sealed())
	}
}

func TestObjectPrintsNoKey(t *testing.T) {
	t.Parallel()
	schema, rec := testTable(t, 10, "")
	defer rec.Release()
	st := newMemStore()
	obj := writeObject(t, st, schema, []arrow.RecordBatch{rec})
	key := obj.DEK.Bytes()
	for _, format := range []string{"%v", "%+v", "%#v", "%s", "%x", "%X", "%q"} {
		out := fmt.Sprintf(format, obj)
		if !strings.Contains(out, "REDACTED") || bytes.Contains([]byte(out), key) ||
			strings.Contains(strings.ToLower(out), fmt.Sprintf("%x", key)[:16]) {
			t.Errorf("%s printed %q", format, out)
		}
	}
}

// TestNoPlaintextLeak writes canaries into column names, string values,
// key-value metadata and (through long strings) min/max statistics large
// enough to make arrow-go spill ColumnMetaData blocks into its output, and
// checks that neither a canary nor any 8-byte piece of one occurs in the
// object.
func TestNoPlaintextLeak(t *testing.T) {
	t.Parallel()
	const canary = "CANARY-q7Zx19KpWm3v"
	schema, rec := testTable(t, 3000, canary)
	defer rec.Release()
	st := newMemStore()
	obj := writeObject(t, st, schema, []arrow.RecordBatch{rec},
		writer.WithRowGroupRows(1000), writer.WithCodec(writer.Uncompressed), writer.WithDictionary(false),
		writer.WithMetadata("meta-"+canary, "value-"+canary))
	assertNoCanary(t, "object", st.get(obj.StorageID), canary)

	// The test is only as good as its input: arrow-go, writing the same
	// table in plaintext, must spill canary bytes outside every column chunk
	// and outside the footer (its unflushed ColumnMetaData blocks), or the
	// Sealer's "copy only what the footer references" is not exercised.
	var plain bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(1000), parquet.WithDictionaryDefault(false), parquet.WithStats(true))
	if err := pqarrow.WriteTable(array.NewTableFromRecords(schema, []arrow.RecordBatch{rec}), &plain, 1000, props, pqarrow.DefaultWriterProps()); err != nil {
		t.Fatal(err)
	}
	pf, err := file.NewParquetReader(bytes.NewReader(plain.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	unreferenced := bytes.Clone(plain.Bytes()[:plain.Len()-8-int(binary.LittleEndian.Uint32(plain.Bytes()[plain.Len()-8:]))])
	for i := range pf.NumRowGroups() {
		rg := pf.MetaData().RowGroup(i)
		for j := range rg.NumColumns() {
			cc, _ := rg.ColumnChunk(j)
			start := cc.DataPageOffset()
			if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 {
				start = min(start, cc.DictionaryPageOffset())
			}
			clear(unreferenced[start : start+cc.TotalCompressedSize()])
		}
	}
	if !bytes.Contains(unreferenced, []byte(canary)) {
		t.Fatal("arrow-go wrote no canary outside its column chunks: the leak this test guards against is not exercised")
	}
}

// TestNoPlaintextLeakInStore writes the canary table into the directory
// store and searches every file the store holds (data, outboards, anything
// staged) for the canary: only ciphertext is ever staged or stored.
func TestNoPlaintextLeakInStore(t *testing.T) {
	t.Parallel()
	const canary = "CANARY-Vb83nQ2tLx0z"
	schema, rec := testTable(t, 2000, canary)
	defer rec.Release()
	dir := t.TempDir()
	st, err := blobs.CreateDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	obj := writeObject(t, st, schema, []arrow.RecordBatch{rec}, writer.WithRowGroupRows(700),
		writer.WithMetadata("k-"+canary, canary))
	// A write that fails half way leaves nothing behind, canary or not.
	w, err := writer.New(context.Background(), st, schema)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := w.Close(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close = %v", err)
	}
	files := 0
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		assertNoCanary(t, path, b, canary)
		files++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files != 3 {
		t.Fatalf("store holds %d files, want its marker and the object's .data and .obao4", files)
	}
	if _, err := os.Stat(filepath.Join(dir, obj.StorageID.String()+".data")); err != nil {
		t.Fatal(err)
	}
}

func assertNoCanary(t *testing.T, where string, data []byte, canary string) {
	t.Helper()
	for i := 0; i+8 <= len(canary); i++ {
		if j := bytes.Index(data, []byte(canary[i:i+8])); j >= 0 {
			t.Fatalf("%s holds %q (a piece of the canary) at offset %d", where, canary[i:i+8], j)
		}
	}
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	schema, rec := testTable(t, 10, "")
	defer rec.Release()
	ctx := context.Background()

	t.Run("nil and empty schema", func(t *testing.T) {
		st := newMemStore()
		for _, s := range []*arrow.Schema{nil, arrow.NewSchema(nil, nil)} {
			if _, err := writer.New(ctx, st, s); !errors.Is(err, writer.ErrSchema) {
				t.Errorf("New(%v) = %v, want ErrSchema", s, err)
			}
		}
		if st.created != 0 {
			t.Fatalf("%d objects staged", st.created)
		}
	})

	t.Run("field IDs", func(t *testing.T) {
		f := func(name string, typ arrow.DataType, id string) arrow.Field {
			md := arrow.Metadata{}
			if id != "" {
				md = arrow.NewMetadata([]string{writer.FieldIDKey}, []string{id})
			}
			return arrow.Field{Name: name, Type: typ, Nullable: name != "key", Metadata: md}
		}
		i64 := arrow.PrimitiveTypes.Int64
		for name, fields := range map[string][]arrow.Field{
			"missing":           {f("a", i64, "")},
			"negative":          {f("a", i64, "-1")},
			"zero":              {f("a", i64, "0")},
			"zero nested":       {f("s", arrow.StructOf(f("c", i64, "0")), "1")},
			"unparsable":        {f("a", i64, "x")},
			"too large":         {f("a", i64, "4294967296")},
			"duplicate":         {f("a", i64, "1"), f("b", i64, "1")},
			"struct child":      {f("s", arrow.StructOf(f("c", i64, "")), "1")},
			"struct dup":        {f("s", arrow.StructOf(f("c", i64, "1")), "1")},
			"list element":      {f("l", arrow.ListOfField(f("element", i64, "")), "1")},
			"large list":        {f("l", arrow.LargeListOfField(f("element", i64, "-5")), "1")},
			"map key":           {f("m", arrow.MapOfFields(f("key", arrow.BinaryTypes.String, ""), f("value", i64, "3")), "1")},
			"map value":         {f("m", arrow.MapOfFields(f("key", arrow.BinaryTypes.String, "2"), f("value", i64, "")), "1")},
			"map value dup key": {f("m", arrow.MapOfFields(f("key", arrow.BinaryTypes.String, "2"), f("value", i64, "2")), "1")},
		} {
			st := newMemStore()
			if _, err := writer.New(ctx, st, arrow.NewSchema(fields, nil)); !errors.Is(err, writer.ErrFieldID) {
				t.Errorf("%s: New = %v, want ErrFieldID", name, err)
			}
			if st.created != 0 {
				t.Errorf("%s: %d objects staged", name, st.created)
			}
		}
	})

	t.Run("reserved metadata", func(t *testing.T) {
		st := newMemStore()
		md := arrow.NewMetadata([]string{padme.PadKey + "-"}, []string{""})
		s := arrow.NewSchema(schema.Fields(), &md)
		if _, err := writer.New(ctx, st, s); !errors.Is(err, writer.ErrReservedKey) {
			t.Errorf("schema metadata: %v", err)
		}
		if _, err := writer.New(ctx, st, schema, writer.WithMetadata(padme.PadKey, "x")); !errors.Is(err, writer.ErrReservedKey) {
			t.Errorf("WithMetadata: %v", err)
		}
	})

	t.Run("bad options", func(t *testing.T) {
		st := newMemStore()
		for _, o := range []writer.Option{writer.WithRowGroupRows(0), writer.WithRowGroupBytes(-1), writer.WithDataPageSize(0),
			writer.WithDataPageVersion(3), writer.WithCodec(writer.Codec(9))} {
			if _, err := writer.New(ctx, st, schema, o); !errors.Is(err, writer.ErrOption) {
				t.Errorf("option: %v, want ErrOption", err)
			}
		}
		var nilCtx context.Context
		if _, err := writer.New(nilCtx, st, schema); !errors.Is(err, writer.ErrOption) {
			t.Errorf("nil context: %v, want ErrOption", err)
		}
		for _, c := range []writer.Codec{writer.Zstd, writer.Snappy} {
			o := []writer.Option{writer.WithCodec(c), writer.WithDataPageVersion(writer.DataPageV2)}
			if _, err := writer.New(ctx, st, schema, o...); !errors.Is(err, writer.ErrOption) {
				t.Errorf("V2 with %v: %v, want ErrOption", c, err)
			}
		}
		if _, err := writer.New(ctx, nil, schema); !errors.Is(err, writer.ErrOption) {
			t.Errorf("nil store: %v", err)
		}
	})

	t.Run("record schema differs", func(t *testing.T) {
		st := newMemStore()
		w, err := writer.New(ctx, st, schema)
		if err != nil {
			t.Fatal(err)
		}
		other, orec := testTable(t, 5, "x")
		defer orec.Release()
		_ = other
		if err := w.Write(orec); !errors.Is(err, writer.ErrRecordSchema) {
			t.Fatalf("Write = %v, want ErrRecordSchema", err)
		}
		if err := w.Write(nil); !errors.Is(err, writer.ErrRecordSchema) {
			t.Fatalf("Write(nil) = %v, want ErrRecordSchema", err)
		}
		// The writer is still usable: the refused record lost nothing.
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		obj, err := w.Close(ctx)
		if err != nil {
			t.Fatal(err)
		}
		checkObject(t, st.get(obj.StorageID), obj)
	})

	t.Run("after close", func(t *testing.T) {
		st := newMemStore()
		w, err := writer.New(ctx, st, schema)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if err := w.Write(rec); !errors.Is(err, writer.ErrClosed) {
			t.Errorf("Write after Close = %v", err)
		}
		if _, err := w.Close(ctx); !errors.Is(err, writer.ErrClosed) {
			t.Errorf("second Close = %v", err)
		}
		if st.count() != 1 {
			t.Errorf("%d objects published", st.count())
		}
	})

	t.Run("store fails mid-import", func(t *testing.T) {
		for _, at := range []int{0, 3, 100, 5000} {
			st := newMemStore()
			st.failAfter = at
			// The store may fail at the first byte (New writes the magic),
			// mid-way (Write), or at the end (Close).
			w, err := writer.New(ctx, st, schema, writer.WithRowGroupRows(3))
			if err == nil {
				if err = w.Write(rec); err == nil {
					_, err = w.Close(ctx)
				}
			}
			if !errors.Is(err, errDiskFull) {
				t.Errorf("fail after %d bytes: %v, want errDiskFull", at, err)
			}
			if st.count() != 0 || st.aborted != 1 {
				t.Errorf("fail after %d bytes: %d published, %d aborted", at, st.count(), st.aborted)
			}
			if w != nil {
				if _, err := w.Close(ctx); err == nil {
					t.Error("Close after a failure succeeded")
				}
			}
		}
	})

	t.Run("context cancelled mid-write", func(t *testing.T) {
		st := newMemStore()
		cctx, cancel := context.WithCancel(ctx)
		w, err := writer.New(cctx, st, schema, writer.WithRowGroupRows(4))
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		cancel()
		if err := w.Write(rec); !errors.Is(err, context.Canceled) {
			t.Fatalf("Write after cancel = %v", err)
		}
		if _, err := w.Close(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("Close after cancel = %v", err)
		}
		if st.count() != 0 || st.aborted != 1 {
			t.Fatalf("%d published, %d aborted", st.count(), st.aborted)
		}
	})

	t.Run("close context cancelled", func(t *testing.T) {
		st := newMemStore()
		w, err := writer.New(ctx, st, schema)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := w.Close(cctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("Close = %v", err)
		}
		if st.count() != 0 || st.aborted != 1 {
			t.Fatalf("%d published, %d aborted", st.count(), st.aborted)
		}
	})
}

// TestPadEntryAlwaysPresent checks Section 11.8's first rule through the
// bytes: an object whose unpadded size is already a Padmé fixed point (delta
// 0) still carries the padding entry, present and empty.
func TestPadEntryAlwaysPresent(t *testing.T) {
	t.Parallel()
	schema, rec := testTable(t, 50, "")
	defer rec.Release()
	st := newMemStore()
	// An entry ("k", "") costs a fixed width; its value then moves L by
	// exactly the closed-form growth that padme.Solve inverts.
	base := writeObject(t, st, schema, []arrow.RecordBatch{rec}, writer.WithMetadata("k", ""))
	for target, _ := padme.Target(base.UnpaddedSize + 1); ; target, _ = padme.Target(target + 1) {
		p := padme.Solve(target - base.UnpaddedSize)
		if p.KeyTail != 0 {
			continue // this target needs a second knob; take the next one
		}
		obj := writeObject(t, st, schema, []arrow.RecordBatch{rec}, writer.WithMetadata("k", strings.Repeat("v", int(p.ValueLen))))
		if obj.Size != obj.UnpaddedSize || obj.Size != target {
			t.Fatalf("unpadded %d, size %d, want both %d", obj.UnpaddedSize, obj.Size, target)
		}
		l := checkObject(t, st.get(obj.StorageID), obj)
		kvs, _ := l.footer.KeyValues()
		found := 0
		for _, kv := range kvs {
			if kv.Key == padme.PadKey && kv.Value != nil && len(kv.Value) == 0 {
				found++
			}
		}
		if found != 1 {
			t.Fatalf("%d empty padding entries in an object with delta 0", found)
		}
		return
	}
}

// TestAbandonedWriter: a Writer dropped without Close is aborted by the
// garbage collector: nothing published, the staged bytes discarded.
func TestAbandonedWriter(t *testing.T) {
	schema, rec := testTable(t, 100, "")
	defer rec.Release()
	st := newMemStore()
	func() {
		w, err := writer.New(context.Background(), st, schema)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}()
	for i := 0; i < 50 && st.abortCount() == 0; i++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if st.abortCount() != 1 || st.count() != 0 {
		t.Fatalf("abandoned writer: %d aborted, %d published", st.abortCount(), st.count())
	}
}
