package arrowfb_test

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	flatbuffers "github.com/google/flatbuffers/go"
	"github.com/sovm/sop-pme/internal/arrowfb"
)

// wideSchema has a field of every type the package builds, nested types,
// a dictionary, metadata, and a field of a kind it does not build.
func wideSchema() *arrow.Schema {
	md := arrow.NewMetadata([]string{"k"}, []string{"v"})
	f := func(name string, t arrow.DataType) arrow.Field {
		return arrow.Field{Name: name, Type: t, Nullable: true}
	}
	return arrow.NewSchema([]arrow.Field{
		f("null", arrow.Null), f("b", arrow.FixedWidthTypes.Boolean),
		f("i8", arrow.PrimitiveTypes.Int8), f("u16", arrow.PrimitiveTypes.Uint16),
		f("i32", arrow.PrimitiveTypes.Int32), f("u64", arrow.PrimitiveTypes.Uint64),
		f("f16", arrow.FixedWidthTypes.Float16), f("f32", arrow.PrimitiveTypes.Float32), f("f64", arrow.PrimitiveTypes.Float64),
		f("s", arrow.BinaryTypes.String), f("bin", arrow.BinaryTypes.Binary),
		f("ls", arrow.BinaryTypes.LargeString), f("lbin", arrow.BinaryTypes.LargeBinary),
		f("dec", &arrow.Decimal128Type{Precision: 20, Scale: 3}), f("dec256", &arrow.Decimal256Type{Precision: 60, Scale: -2}),
		f("d32", arrow.FixedWidthTypes.Date32), f("d64", arrow.FixedWidthTypes.Date64),
		f("t32", arrow.FixedWidthTypes.Time32s), f("t64", arrow.FixedWidthTypes.Time64ns),
		f("ts", &arrow.TimestampType{Unit: arrow.Second}), f("tstz", &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "Europe/Paris"}),
		f("dur", &arrow.DurationType{Unit: arrow.Microsecond}),
		f("iv", arrow.FixedWidthTypes.MonthDayNanoInterval),
		f("fsb", &arrow.FixedSizeBinaryType{ByteWidth: 12}),
		{Name: "dict", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.BinaryTypes.String, Ordered: true}, Metadata: md},
		f("l", arrow.ListOfField(arrow.Field{Name: "element", Type: arrow.PrimitiveTypes.Int64, Metadata: md})),
		f("ll", arrow.LargeListOf(arrow.BinaryTypes.String)),
		f("fsl", arrow.FixedSizeListOf(3, arrow.PrimitiveTypes.Float32)),
		f("st", arrow.StructOf(f("a", arrow.PrimitiveTypes.Int64), f("b", arrow.ListOf(arrow.BinaryTypes.LargeString)))),
		f("m", arrow.MapOf(arrow.BinaryTypes.String, arrow.StructOf(f("x", arrow.PrimitiveTypes.Int8)))),
		f("view", arrow.BinaryTypes.StringView),
	}, &md)
}

func serialize(t testing.TB, s *arrow.Schema) []byte {
	t.Helper()
	return flight.SerializeSchema(s, memory.DefaultAllocator)
}

// TestDecodeSchema: every type the package builds decodes as arrow-go
// decodes it; a view decodes with its kind and no type.
func TestDecodeSchema(t *testing.T) {
	t.Parallel()
	want := wideSchema()
	raw := serialize(t, want)
	got, err := arrowfb.DecodeSchemaEntry([]byte(base64.StdEncoding.EncodeToString(raw)))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := got.Metadata.GetValue("k"); v != "v" {
		t.Errorf("schema metadata %v", got.Metadata)
	}
	if len(got.Fields) != want.NumFields() {
		t.Fatalf("%d fields, want %d", len(got.Fields), want.NumFields())
	}
	for i, g := range got.Fields {
		w := want.Field(i)
		if g.Name != w.Name || g.Nullable != w.Nullable {
			t.Errorf("field %d: %q nullable %v, want %q %v", i, g.Name, g.Nullable, w.Name, w.Nullable)
		}
		if w.Type.ID() == arrow.STRING_VIEW {
			if g.Type != nil || g.Kind != arrowfb.KindUtf8View {
				t.Errorf("%s: type %v kind %d, want none and Utf8View", w.Name, g.Type, g.Kind)
			}
			continue
		}
		typ := g.Type
		if g.Dictionary != nil {
			typ = &arrow.DictionaryType{IndexType: g.Dictionary.IndexType, ValueType: g.Type, Ordered: g.Dictionary.Ordered}
		}
		if !arrow.TypeEqual(typ, w.Type, arrow.CheckMetadata()) {
			t.Errorf("%s: %v, want %v", w.Name, typ, w.Type)
		}
		if !g.Metadata.Equal(w.Metadata) {
			t.Errorf("%s: metadata %v, want %v", w.Name, g.Metadata, w.Metadata)
		}
	}
	// Unpadded base64, as some writers store it.
	if _, err := arrowfb.DecodeSchemaEntry([]byte(base64.RawStdEncoding.EncodeToString(raw))); err != nil {
		t.Errorf("unpadded: %v", err)
	}
}

// TestDecodeSchemaMalformed: truncations, bad base64, lengths beyond the
// buffer and self-referring fields fail with ErrMalformed.
func TestDecodeSchemaMalformed(t *testing.T) {
	t.Parallel()
	raw := serialize(t, wideSchema())
	whole := 8 + int(binary.LittleEndian.Uint32(raw[4:])) // the marker, the length, the flatbuffer
	for n := 0; n < whole; n += 7 {
		if _, err := arrowfb.DecodeSchemaIPC(raw[:n]); err == nil {
			t.Errorf("a %d-byte prefix of %d decoded", n, whole)
		} else if !errors.Is(err, arrowfb.ErrMalformed) {
			t.Errorf("prefix %d: %v", n, err)
		}
	}
	if _, err := arrowfb.DecodeSchemaEntry([]byte("not base64!")); !errors.Is(err, arrowfb.ErrMalformed) {
		t.Errorf("bad base64: %v", err)
	}
	// Every single-byte change decodes or fails with ErrMalformed, never
	// panics.
	for i := range raw {
		b := append([]byte(nil), raw...)
		b[i] ^= 0xff
		if _, err := arrowfb.DecodeSchemaIPC(b); err != nil && !errors.Is(err, arrowfb.ErrMalformed) {
			t.Fatalf("byte %d: %v", i, err)
		}
	}
}

// schemaMessage builds a Message flatbuffer whose Schema has the fields
// that build makes with b (each an offset of a Field table).
func schemaMessage(build func(b *flatbuffers.Builder) []flatbuffers.UOffsetT) []byte {
	b := flatbuffers.NewBuilder(1024)
	fields := build(b)
	vec := offsets(b, fields)
	b.StartObject(4) // Schema
	b.PrependUOffsetTSlot(1, vec, 0)
	schema := b.EndObject()
	b.StartObject(5) // Message
	b.PrependInt16Slot(0, 4, 0)
	b.PrependByteSlot(1, 1, 0)
	b.PrependUOffsetTSlot(2, schema, 0)
	b.Finish(b.EndObject())
	return b.FinishedBytes()
}

func offsets(b *flatbuffers.Builder, offs []flatbuffers.UOffsetT) flatbuffers.UOffsetT {
	b.StartVector(4, len(offs), 4)
	for i := len(offs) - 1; i >= 0; i-- {
		b.PrependUOffsetT(offs[i])
	}
	return b.EndVector(len(offs))
}

// field builds a Field table of kind Struct_ (13) with a name and children.
func field(b *flatbuffers.Builder, name flatbuffers.UOffsetT, children []flatbuffers.UOffsetT) flatbuffers.UOffsetT {
	var vec flatbuffers.UOffsetT
	if children != nil {
		vec = offsets(b, children)
	}
	b.StartObject(0)
	st := b.EndObject() // an empty Struct_ table
	b.StartObject(7)
	b.PrependUOffsetTSlot(0, name, 0)
	b.PrependByteSlot(2, 13, 0)
	b.PrependUOffsetTSlot(3, st, 0)
	if children != nil {
		b.PrependUOffsetTSlot(5, vec, 0)
	}
	return b.EndObject()
}

// TestDecodeSchemaBounds: fields that share their children (a DAG that
// would be walked 2^40 times), and names that all refer to one long
// string, are refused, not followed.
func TestDecodeSchemaBounds(t *testing.T) {
	t.Parallel()
	dag := schemaMessage(func(b *flatbuffers.Builder) []flatbuffers.UOffsetT {
		name := b.CreateString("f")
		f := field(b, name, nil)
		for range 40 {
			f = field(b, name, []flatbuffers.UOffsetT{f, f})
		}
		return []flatbuffers.UOffsetT{f}
	})
	if _, err := arrowfb.DecodeSchema(dag); !errors.Is(err, arrowfb.ErrMalformed) {
		t.Fatalf("shared children: %v", err)
	} else {
		t.Log(err)
	}
	if err := arrowfb.CheckMessage(dag); !errors.Is(err, arrowfb.ErrMalformed) {
		t.Fatalf("CheckMessage, shared children: %v", err)
	}
	// 5,000 fields named by one 60 KiB string: 300 MB of names if each
	// were copied.
	shared := func(n int) []byte {
		return schemaMessage(func(b *flatbuffers.Builder) []flatbuffers.UOffsetT {
			name := b.CreateString(strings.Repeat("n", 60<<10))
			fs := make([]flatbuffers.UOffsetT, n)
			for i := range fs {
				fs[i] = field(b, name, []flatbuffers.UOffsetT{})
			}
			return fs
		})
	}
	got, err := arrowfb.DecodeSchema(shared(2))
	if err != nil || len(got.Fields) != 2 || len(got.Fields[1].Name) != 60<<10 {
		t.Fatalf("two long names: %v", err)
	}
	if _, err := arrowfb.DecodeSchema(shared(5000)); !errors.Is(err, arrowfb.ErrMalformed) {
		t.Fatalf("shared names: %v", err)
	} else {
		t.Log(err)
	}
	// Nesting deeper than MaxDepth.
	deep := schemaMessage(func(b *flatbuffers.Builder) []flatbuffers.UOffsetT {
		name := b.CreateString("d")
		f := field(b, name, nil)
		for range arrowfb.MaxDepth + 1 {
			f = field(b, name, []flatbuffers.UOffsetT{f})
		}
		return []flatbuffers.UOffsetT{f}
	})
	if _, err := arrowfb.DecodeSchema(deep); !errors.Is(err, arrowfb.ErrMalformed) {
		t.Fatalf("too deep: %v", err)
	} else {
		t.Log(err)
	}
}

// TestCheckSchemaEntry: an entry arrow-go writes passes; one whose body
// length, metadata length or vector lengths are beyond its bytes does not.
func TestCheckSchemaEntry(t *testing.T) {
	t.Parallel()
	raw := serialize(t, wideSchema())
	enc := func(b []byte) []byte { return []byte(base64.StdEncoding.EncodeToString(b)) }
	if err := arrowfb.CheckSchemaEntry(enc(raw)); err != nil {
		t.Fatal(err)
	}
	long := append([]byte(nil), raw...)
	binary.LittleEndian.PutUint32(long[4:], 0x7ffffff8)
	bad := map[string][]byte{"metadata length": enc(long), "not base64": []byte("!!"), "empty": nil}
	// The Message's bodyLength, set to 32 GiB.
	fb := append([]byte(nil), raw[8:]...)
	w := arrowfb.NewWalker(fb)
	root, _ := w.U32(0)
	if p, err := w.Field(root, 3); err == nil && p != 0 {
		binary.LittleEndian.PutUint64(fb[p:], 32<<30)
		bad["body length"] = enc(append(append([]byte(nil), raw[:8]...), fb...))
	} else {
		// arrow-go writes no bodyLength for a schema: grow the vtable so
		// that the field reads 8 bytes of the table.
		b := append([]byte(nil), raw...)
		binary.LittleEndian.PutUint16(b[8+6:], 12)
		bad["body length"] = enc(b)
	}
	for name, v := range bad {
		if err := arrowfb.CheckSchemaEntry(v); !errors.Is(err, arrowfb.ErrMalformed) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
