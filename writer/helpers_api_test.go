package writer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/cryptotest"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/sovm/sop-pme/internal/testkit/memstore"
	"github.com/sovm/sop-pme/writer"
)

// ids returns the field IDs of a schema, depth first, as "path=id".
func ids(s *arrow.Schema) string {
	var out []string
	var walk func(f arrow.Field, path string)
	walk = func(f arrow.Field, path string) {
		id, _ := f.Metadata.GetValue(writer.FieldIDKey)
		out = append(out, path+"="+id)
		typ := f.Type
		if ext, ok := typ.(arrow.ExtensionType); ok {
			typ = ext.StorageType() // a variant's metadata, value, typed_value
		}
		switch t := typ.(type) {
		case *arrow.MapType:
			walk(t.KeyField(), path+".key")
			walk(t.ItemField(), path+".value")
		case arrow.ListLikeType:
			walk(t.ElemField(), path+".element")
		case *arrow.StructType:
			for _, c := range t.Fields() {
				walk(c, path+"."+c.Name)
			}
		}
	}
	for _, f := range s.Fields() {
		walk(f, f.Name)
	}
	return strings.Join(out, " ")
}

func ExampleAssignFieldIDs() {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String)},
		{Name: "pos", Type: arrow.StructOf(
			arrow.Field{Name: "lat", Type: arrow.PrimitiveTypes.Float64},
			arrow.Field{Name: "lon", Type: arrow.PrimitiveTypes.Float64},
		)},
		{Name: "note", Type: arrow.BinaryTypes.String},
	}, nil)
	withIDs, err := writer.AssignFieldIDs(schema)
	if err != nil {
		panic(err)
	}
	fmt.Println(ids(withIDs))
	// Output: id=1 tags=2 tags.element=5 pos=3 pos.lat=6 pos.lon=7 note=4
}

func TestAssignFieldIDs(t *testing.T) {
	t.Parallel()
	fid := func(v string) arrow.Metadata { return arrow.NewMetadata([]string{writer.FieldIDKey}, []string{v}) }
	t.Run("keeps existing and counts -1 as missing", func(t *testing.T) {
		s := arrow.NewSchema([]arrow.Field{
			{Name: "a", Type: arrow.PrimitiveTypes.Int64, Metadata: fid("-1")},
			{Name: "b", Type: arrow.PrimitiveTypes.Int64, Metadata: fid("10")},
			{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32)},
			{Name: "c", Type: arrow.PrimitiveTypes.Int64, Metadata: arrow.NewMetadata([]string{"other", writer.FieldIDKey}, []string{"x", "3"})},
		}, nil)
		got, err := writer.AssignFieldIDs(s)
		if err != nil {
			t.Fatal(err)
		}
		const want = "a=11 b=10 m=12 m.key=13 m.value=14 c=3"
		if ids(got) != want {
			t.Fatalf("got %s\nwant %s", ids(got), want)
		}
		if v, _ := got.Field(3).Metadata.GetValue("other"); v != "x" {
			t.Errorf("other metadata lost: %v", got.Field(3).Metadata)
		}
		again, err := writer.AssignFieldIDs(got)
		if err != nil || ids(again) != want {
			t.Fatalf("second pass: %v %s", err, ids(again))
		}
		// The result is a schema the writer takes.
		w, err := writer.New(context.Background(), memstore.New(), got)
		if err != nil {
			t.Fatalf("writer.New refuses the assigned schema: %v", err)
		}
		w.Close(context.Background())
	})
	for name, s := range map[string]*arrow.Schema{
		"duplicate": arrow.NewSchema([]arrow.Field{
			{Name: "a", Type: arrow.PrimitiveTypes.Int64, Metadata: fid("1")},
			{Name: "s", Type: arrow.StructOf(arrow.Field{Name: "b", Type: arrow.PrimitiveTypes.Int64, Metadata: fid("1")})},
		}, nil),
		"not a number": arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64, Metadata: fid("x")}}, nil),
		"negative":     arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64, Metadata: fid("-2")}}, nil),
		"too large":    arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64, Metadata: fid("2147483648")}}, nil),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := writer.AssignFieldIDs(s); !errors.Is(err, writer.ErrFieldID) {
				t.Fatalf("AssignFieldIDs = %v, want ErrFieldID", err)
			}
		})
	}
	t.Run("0 counts as missing", func(t *testing.T) {
		// DuckDB's FIELD_IDS 'auto' numbers from 0, which SOP-PME-1 does
		// not take (reader.Check fails it): the field gets a fresh ID.
		s := arrow.NewSchema([]arrow.Field{
			{Name: "a", Type: arrow.PrimitiveTypes.Int64, Metadata: fid("0")},
			{Name: "s", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int64, Metadata: fid("2")}), Metadata: fid("1")},
		}, nil)
		got, err := writer.AssignFieldIDs(s)
		if err != nil {
			t.Fatal(err)
		}
		if want := "a=3 s=1 s.x=2"; ids(got) != want {
			t.Fatalf("got %s\nwant %s", ids(got), want)
		}
		if _, err := writer.New(context.Background(), memstore.New(), s); !errors.Is(err, writer.ErrFieldID) {
			t.Errorf("New takes field ID 0: %v", err)
		}
	})
	t.Run("past int32", func(t *testing.T) {
		s := arrow.NewSchema([]arrow.Field{
			{Name: "a", Type: arrow.PrimitiveTypes.Int64, Metadata: fid("2147483647")},
			{Name: "b", Type: arrow.PrimitiveTypes.Int64},
		}, nil)
		if _, err := writer.AssignFieldIDs(s); !errors.Is(err, writer.ErrFieldID) {
			t.Fatalf("AssignFieldIDs = %v, want ErrFieldID", err)
		}
	})
}

// failingReader is a RecordReader that fails after its records.
type failingReader struct {
	array.RecordReader
	err error
}

func (f failingReader) Err() error {
	if err := f.RecordReader.Err(); err != nil {
		return err
	}
	return f.err
}

func TestWriteRecordsAndProgress(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema, rec := testTable(t, 5000, "")
	defer rec.Release()
	rr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec, rec})
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Release()
	st := memstore.New()
	var seen []writer.Progress
	obj, err := writer.WriteRecords(ctx, st, rr, writer.WithRowGroupRows(4000), writer.WithProgress(func(p writer.Progress) { seen = append(seen, p) }))
	if err != nil {
		t.Fatal(err)
	}
	last := seen[len(seen)-1]
	if last.Rows != 10000 || last.RowGroups != 3 || last.BytesOut != int64(obj.Size) || last.BytesIn <= 0 {
		t.Fatalf("final progress %+v; want 10000 rows, 3 row groups, %d bytes out", last, obj.Size)
	}
	for i := 1; i < len(seen); i++ {
		a, b := seen[i-1], seen[i]
		if b.Rows < a.Rows || b.BytesIn < a.BytesIn || b.BytesOut < a.BytesOut || b.RowGroups < a.RowGroups {
			t.Fatalf("progress went back: %+v then %+v", a, b)
		}
	}
	if len(st.Bytes(obj.StorageID)) != int(obj.Size) {
		t.Fatalf("the store holds %d bytes, the object has %d", len(st.Bytes(obj.StorageID)), obj.Size)
	}

	// A reader that fails publishes nothing.
	bad := errors.New("source broke")
	rr2, _ := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	defer rr2.Release()
	st2 := memstore.New()
	if _, err := writer.WriteRecords(ctx, st2, failingReader{rr2, bad}); !errors.Is(err, bad) {
		t.Fatalf("WriteRecords = %v, want the reader's error", err)
	}
	if _, err := writer.WriteRecords(ctx, st2, nil); !errors.Is(err, writer.ErrOption) {
		t.Fatalf("WriteRecords(nil) = %v, want ErrOption", err)
	}
}

// TestCompressionLevel: a higher zstd level gives a smaller object of the
// same rows, and a level outside 1..22 is refused. 4,000 rows are as
// telling as 20,000 (level 19 gives 6.3% fewer bytes than level 1 at
// either size) at a thirtieth of the time.
func TestCompressionLevel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema, rec := testTable(t, 4000, "")
	defer rec.Release()
	size := func(level int) uint64 {
		w, err := writer.New(ctx, memstore.New(), schema, writer.WithCompressionLevel(level), writer.WithDictionary(false))
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		obj, err := w.Close(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return obj.UnpaddedSize
	}
	fast, small := size(1), size(19)
	if small >= fast {
		t.Fatalf("level 19 gives %d bytes, level 1 %d", small, fast)
	}
	for _, l := range []int{0, 23, -1} {
		if _, err := writer.New(ctx, memstore.New(), schema, writer.WithCompressionLevel(l)); !errors.Is(err, writer.ErrOption) {
			t.Errorf("level %d: %v, want ErrOption", l, err)
		}
	}
}

// ExampleWriteRecords writes every record of a record reader into one
// object, with a progress callback.
func ExampleWriteRecords() {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "n", Type: arrow.PrimitiveTypes.Int64, Metadata: arrow.NewMetadata([]string{writer.FieldIDKey}, []string{"1"})},
	}, nil)
	b := array.NewInt64Builder(memory.DefaultAllocator)
	for i := range 1000 {
		b.Append(int64(i))
	}
	col := b.NewArray()
	rec := array.NewRecordBatch(schema, []arrow.Array{col}, 1000)
	rr, _ := array.NewRecordReader(schema, []arrow.RecordBatch{rec, rec, rec})

	var last writer.Progress
	obj, err := writer.WriteRecords(context.Background(), memstore.New(), rr,
		writer.WithRowGroupRows(1000), writer.WithProgress(func(p writer.Progress) { last = p }))
	if err != nil {
		panic(err)
	}
	fmt.Println("rows:", last.Rows, "row groups:", last.RowGroups, "bytes out = size:", last.BytesOut == int64(obj.Size))
	// Output: rows: 3000 row groups: 3 bytes out = size: true
}

// TestParallelismIndependent: the object does not depend on how many row
// groups encode at once. With crypto/rand made deterministic (the same DEK,
// key_ref and nonces in the same order), objects written with parallelism
// 1, 2 and 4 are byte for byte the same: the object stays valid,
// conformant and readable by DuckDB whatever the parallelism, though
// interop reads objects of the default parallelism only.
func TestParallelismIndependent(t *testing.T) {
	schema, rec := testTable(t, 30000, "")
	defer rec.Release()
	var first []byte
	for _, n := range []int{1, 2, 4} {
		cryptotest.SetGlobalRandom(t, 42)
		st := memstore.New()
		w, err := writer.New(context.Background(), st, schema, writer.WithParallelism(n), writer.WithRowGroupRows(4000))
		if err != nil {
			t.Fatal(err)
		}
		for off := int64(0); off < rec.NumRows(); off += 3000 {
			part := rec.NewSlice(off, off+3000)
			if err := w.Write(part); err != nil {
				t.Fatal(err)
			}
			part.Release()
		}
		obj, err := w.Close(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got := st.Bytes(obj.StorageID)
		if first == nil {
			first = got
		} else if !bytes.Equal(got, first) {
			t.Fatalf("parallelism %d: the object differs from parallelism 1's", n)
		}
	}
}
