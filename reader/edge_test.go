package reader_test

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/sovm/sop-pme/padme"
	"github.com/sovm/sop-pme/pme"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/writer"
)

// nestedObject writes an object with a list, a struct and a map column, each
// nested field carrying its own field ID, in several row groups.
func nestedObject(t *testing.T, n int, opts ...writer.Option) (*memStore, writer.Object, *arrow.Schema, arrow.RecordBatch) {
	t.Helper()
	elem := arrow.Field{Name: "element", Type: arrow.PrimitiveTypes.Int64, Nullable: true, Metadata: fid(11)}
	sa := arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true, Metadata: fid(21)}
	sb := arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: fid(22)}
	key := arrow.Field{Name: "key", Type: arrow.BinaryTypes.String, Metadata: fid(31)}
	val := arrow.Field{Name: "value", Type: arrow.PrimitiveTypes.Int64, Nullable: true, Metadata: fid(32)}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Metadata: fid(1)},
		{Name: "l", Type: arrow.ListOfField(elem), Nullable: true, Metadata: fid(10)},
		{Name: "st", Type: arrow.StructOf(sa, sb), Nullable: true, Metadata: fid(20)},
		{Name: "m", Type: arrow.MapOfFields(key, val), Nullable: true, Metadata: fid(30)},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		lb := b.Field(1).(*array.ListBuilder)
		lb.Append(true)
		for j := range i % 3 {
			lb.ValueBuilder().(*array.Int64Builder).Append(int64(i*10 + j))
		}
		sbld := b.Field(2).(*array.StructBuilder)
		sbld.Append(true)
		sbld.FieldBuilder(0).(*array.Int64Builder).Append(int64(-i))
		sbld.FieldBuilder(1).(*array.StringBuilder).Append("s")
		mb := b.Field(3).(*array.MapBuilder)
		mb.Append(true)
		for j := range i % 2 {
			mb.KeyBuilder().(*array.StringBuilder).Append("k")
			mb.ItemBuilder().(*array.Int64Builder).Append(int64(i + j))
		}
	}
	rec := b.NewRecordBatch()
	st := newMemStore()
	obj := writeObject(t, st, schema, rec, opts...)
	return st, obj, schema, rec
}

func TestNestedProjection(t *testing.T) {
	t.Parallel()
	st, obj, _, rec := nestedObject(t, 1000, writer.WithRowGroupRows(300))
	defer rec.Release()
	ctx := context.Background()
	r, err := reader.Open(ctx, st, obj.StorageID, keys{obj.StorageID: obj.DEK})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		ids  []int32
	}{
		{"list", []int32{10}}, {"list element", []int32{11}},
		{"struct", []int32{20}}, {"struct.a", []int32{21}}, {"struct.b", []int32{22}},
		{"map", []int32{30}}, {"map key", []int32{31}}, {"map value", []int32{32}},
		{"id+map value", []int32{1, 32}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rr, err := r.Scan(ctx, reader.WithFields(tc.ids...))
			if err != nil {
				t.Fatalf("scan: %v", err)
			}
			defer rr.Release()
			var rows int64
			for rr.Next() {
				rows += rr.RecordBatch().NumRows()
			}
			if err := rr.Err(); err != nil {
				t.Fatalf("scan: %v", err)
			}
			if rows != 1000 {
				t.Fatalf("%d rows", rows)
			}
		})
	}
	// Whole-object values.
	cols := readAll(t, r)
	for j, c := range cols {
		if !array.Equal(c, rec.Column(j)) {
			t.Errorf("column %d differs", j)
		}
		c.Release()
	}
	// Row groups out of order.
	cols = readAll(t, r, reader.WithRowGroups(2, 0), reader.WithFields(1))
	ids := cols[0].(*array.Int64)
	if ids.Len() != 600 || ids.Value(0) != 600 || ids.Value(300) != 0 {
		t.Errorf("row groups 2,0: len %d first %d", ids.Len(), ids.Value(0))
	}
	cols[0].Release()
}

// TestEmptyRowGroupSelection: WithRowGroups with no index is refused
// (ErrOption), never read as "every row group".
func TestEmptyRowGroupSelection(t *testing.T) {
	t.Parallel()
	st, obj, _, rec := nestedObject(t, 1000, writer.WithRowGroupRows(300))
	defer rec.Release()
	ctx := context.Background()
	r, err := reader.Open(ctx, st, obj.StorageID, keys{obj.StorageID: obj.DEK})
	if err != nil {
		t.Fatal(err)
	}
	var sel []int // e.g. the result of a caller's pruning: nothing left
	if _, err := r.Scan(ctx, reader.WithRowGroups(sel...), reader.WithFields(1)); !errors.Is(err, reader.ErrOption) {
		t.Fatalf("an empty row-group selection: %v, want reader.ErrOption", err)
	}
}

func TestEmptyObjectRead(t *testing.T) {
	t.Parallel()
	st, obj, _, rec := nestedObject(t, 0)
	defer rec.Release()
	ctx := context.Background()
	ks := keys{obj.StorageID: obj.DEK}
	r, err := reader.Open(ctx, st, obj.StorageID, ks)
	if err != nil {
		t.Fatal(err)
	}
	for _, ids := range [][]int32{nil, {1}, {32}} {
		var opts []reader.ScanOption
		if ids != nil {
			opts = append(opts, reader.WithFields(ids...))
		}
		rr, err := r.Scan(ctx, opts...)
		if err != nil {
			t.Fatal(err)
		}
		for rr.Next() {
			if n := rr.RecordBatch().NumRows(); n != 0 {
				t.Fatalf("%d rows", n)
			}
		}
		if err := rr.Err(); err != nil {
			t.Fatal(err)
		}
		rr.Release()
	}
	rep, err := reader.Check(ctx, st, obj.StorageID, ks)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Conformant() {
		t.Fatalf("empty object not conformant: %v", rep)
	}
	if err := r.Verify(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestAbandonedScan: a scan released after its first batch must not
// leave goroutines behind, and concurrent scans must be race-free.
func TestAbandonedScan(t *testing.T) {
	st, obj, _, rec := nestedObject(t, 5000, writer.WithRowGroupRows(200))
	defer rec.Release()
	ctx := context.Background()
	r, err := reader.Open(ctx, st, obj.StorageID, keys{obj.StorageID: obj.DEK})
	if err != nil {
		t.Fatal(err)
	}
	base := runtime.NumGoroutine()
	done := make(chan struct{})
	for g := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			rr, err := r.Scan(ctx, reader.WithBatchSize(50))
			if err != nil {
				t.Error(err)
				return
			}
			for i := 0; rr.Next() && i < 3*g; i++ {
			}
			rr.Release()
		}()
	}
	for range 4 {
		<-done
	}
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base {
		t.Fatalf("%d goroutines left behind", n-base)
	}
}

// TestTamperNested damages the data region of an object with nested
// columns at many offsets: a full scan, and a scan of each nested field,
// must fail with an error matching verify.ErrVerify, never panic.
func TestTamperNested(t *testing.T) {
	t.Parallel()
	st, obj, _, rec := nestedObject(t, 3000, writer.WithRowGroupRows(1000), writer.WithCodec(writer.Uncompressed))
	defer rec.Release()
	ctx := context.Background()
	good := bytes.Clone(st.bytes(obj.StorageID))
	ob := st.outboard(obj.StorageID)
	k := keys{obj.StorageID: obj.DEK}
	dataEnd := int64(len(good)) - 8 - int64(binary.LittleEndian.Uint32(good[len(good)-8:]))
	for off := int64(4); off < dataEnd; off += 1531 {
		bad := bytes.Clone(good)
		bad[off] ^= 0x40
		st.putAs(obj.StorageID, bad, ob)
		r, err := reader.Open(ctx, st, obj.StorageID, k)
		if err != nil {
			if !isVerifyErr(err) {
				t.Fatalf("open: %v", err)
			}
			continue // damage in the verified tail
		}
		var failed bool
		for _, ids := range [][]int32{nil, {1}, {11}, {21}, {22}, {31}, {32}} {
			var opts []reader.ScanOption
			if ids != nil {
				opts = append(opts, reader.WithFields(ids...))
			}
			rr, err := r.Scan(ctx, opts...)
			if err != nil {
				t.Fatal(err)
			}
			for rr.Next() {
			}
			err = rr.Err()
			rr.Release()
			if err != nil {
				failed = true
				if !isVerifyErr(err) {
					t.Errorf("damage at %d, fields %v: error does not match verify.ErrVerify: %v", off, ids, err)
				}
			} else if ids == nil {
				t.Errorf("damage at %d: full scan succeeded", off)
			}
		}
		_ = failed
	}
	st.putAs(obj.StorageID, good, ob)
}

// TestLargePageReadable: with default options, 70 values of 1 MiB
// make one 70 MiB page (arrow-go checks the page size once per 1024-value
// batch), above arrow-go's default read limit of 64 MiB compressed. The
// reader must read every object the writer publishes.
func TestLargePageReadable(t *testing.T) {
	t.Parallel()
	if testing.Short() && os.Getenv("CI") == "" {
		t.Skip("-short, not under CI: writes a 70 MiB page")
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "blob", Type: arrow.BinaryTypes.Binary, Metadata: fid(1)}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	v := make([]byte, 1<<20)
	for i := range 70 {
		crand.Read(v) // incompressible
		_ = i
		b.Field(0).(*array.BinaryBuilder).Append(v)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	st := newMemStore()
	w, err := writer.New(context.Background(), st, schema) // default options
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	obj, err := w.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r, err := reader.Open(context.Background(), st, obj.StorageID, keys{obj.StorageID: obj.DEK})
	if err != nil {
		t.Fatal(err)
	}
	rr, err := r.Scan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Release()
	var rows int64
	for rr.Next() {
		rows += rr.RecordBatch().NumRows()
	}
	if err := rr.Err(); err != nil {
		t.Fatalf("an object the writer published does not read back: %v", err)
	}
	if rows != 70 {
		t.Fatalf("%d rows", rows)
	}
}

// TestParallelOpen reads chunks of more than 4 MiB, which are opened by
// two goroutines, with prefetch across row groups; run with -race. Damage in
// the second half of a large chunk must fail the scan with a verification
// error.
func TestParallelOpen(t *testing.T) {
	t.Parallel()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "x", Type: arrow.PrimitiveTypes.Int64, Metadata: fid(1)},
		{Name: "y", Type: arrow.PrimitiveTypes.Int64, Metadata: fid(2)},
	}, nil)
	const n, rg = 1_800_000, 600_000
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	var want int64
	for i := range n {
		x := int64(uint64(i)*0x9E3779B97F4A7C15) ^ int64(i>>3)
		b.Field(0).(*array.Int64Builder).Append(x)
		b.Field(1).(*array.Int64Builder).Append(int64(i))
		want += x
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	st := newMemStore()
	w, err := writer.New(context.Background(), st, schema, writer.WithRowGroupRows(rg), writer.WithCodec(writer.Uncompressed), writer.WithDictionary(false))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	obj, err := w.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	k := keys{obj.StorageID: obj.DEK}
	r, err := reader.Open(ctx, st, obj.StorageID, k)
	if err != nil {
		t.Fatal(err)
	}
	sum := func(r *reader.Reader, opts ...reader.ScanOption) (int64, int64, error) {
		rr, err := r.Scan(ctx, opts...)
		if err != nil {
			return 0, 0, err
		}
		defer rr.Release()
		var s, rows int64
		for rr.Next() {
			c := rr.RecordBatch().Column(0).(*array.Int64)
			for i := range c.Len() {
				s += c.Value(i)
			}
			rows += int64(c.Len())
		}
		return s, rows, rr.Err()
	}
	done := make(chan error, 2)
	for range 2 {
		go func() {
			s, rows, err := sum(r)
			if err == nil && (s != want || rows != n) {
				err = fmt.Errorf("sum %d rows %d, want %d %d", s, rows, want, n)
			}
			done <- err
		}()
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	// Damage three quarters into the first chunk (row group 0, column x).
	good := bytes.Clone(st.bytes(obj.StorageID))
	bad := bytes.Clone(good)
	bad[4+rg*8*3/4] ^= 1
	st.putAs(obj.StorageID, bad, st.outboard(obj.StorageID))
	defer st.putAs(obj.StorageID, good, st.outboard(obj.StorageID))
	r, err = reader.Open(ctx, st, obj.StorageID, k)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := sum(r, reader.WithFields(1)); !isVerifyErr(err) {
		t.Fatalf("damaged large chunk: %v", err)
	}
}

// TestDefaultMaxFooterCoversPadding: the writer publishes objects whose
// Padmé padding fits one footer module (below 256 GiB, writer package doc),
// and the padding lives in the footer region. Open's default footer limit,
// the larger of DefaultMaxFooterSize and 1/16 of the proven size, must admit
// the footer region of every such object: FileCryptoMetaData, the footer
// module's overhead, the padding, and up to 64 MiB of other metadata.
func TestDefaultMaxFooterCoversPadding(t *testing.T) {
	t.Parallel()
	for e := 10; e < 38; e++ {
		for _, l := range []uint64{1<<e - 1, 1 << e, 1<<e + 1, 3 << (e - 1)} {
			target, err := padme.Target(l)
			if err != nil {
				t.Fatal(err)
			}
			pad := padme.Solve(target - l).Growth()
			region := uint64(23+pme.Overhead) + pad + 64<<20
			limit := max(uint64(reader.DefaultMaxFooterSize), target/16)
			if region > limit {
				t.Fatalf("an object of unpadded size %d has a footer region of up to %d bytes, above the default limit %d", l, region, limit)
			}
		}
	}
}

// TestEmptyFieldProjection: WithFields with no field ID projects no
// column, not every column.
func TestEmptyFieldProjection(t *testing.T) {
	t.Parallel()
	st, obj, _, rec := nestedObject(t, 100)
	defer rec.Release()
	ctx := context.Background()
	r, err := reader.Open(ctx, st, obj.StorageID, keys{obj.StorageID: obj.DEK})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int32 // a caller's projection that came out empty
	rr, err := r.Scan(ctx, reader.WithFields(ids...))
	if err != nil {
		return // refusing is fine too
	}
	defer rr.Release()
	for rr.Next() {
		if n := rr.RecordBatch().NumCols(); n != 0 {
			t.Fatalf("an empty projection returned %d columns", n)
		}
	}
}
