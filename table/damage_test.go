package table_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/sovm/sop-pme/internal/testkit/memstore"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/table"
	"github.com/sovm/sop-pme/verify"
	"github.com/sovm/sop-pme/writer"
)

const (
	objRows = 12000 // rows of each object of many
	rgRows  = 3000  // rows of each of its row groups
)

// manySchema is the table of many: id int64 (1), x float64 (2), s string (3).
var manySchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Metadata: fid(1)},
	{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true, Metadata: fid(2)},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: fid(3)},
}, nil)

// many writes n objects of objRows rows each, uncompressed and without
// dictionaries, so that the id column's chunks of every row group have one
// length. Object o holds ids o*objRows to (o+1)*objRows-1.
func many(t testing.TB, n int) (*memstore.Store, keys, []writer.Object) {
	st, k := memstore.New(), keys{}
	var objs []writer.Object
	for o := range n {
		b := array.NewRecordBuilder(memory.DefaultAllocator, manySchema)
		for i := range objRows {
			id := int64(o*objRows + i)
			b.Field(0).(*array.Int64Builder).Append(id)
			b.Field(1).(*array.Float64Builder).Append(float64(id) / 4)
			b.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("row %d", id))
		}
		rec := b.NewRecordBatch()
		b.Release()
		objs = append(objs, put(t, st, k, manySchema, []arrow.RecordBatch{rec},
			writer.WithRowGroupRows(rgRows), writer.WithCodec(writer.Uncompressed), writer.WithDictionary(false)))
		rec.Release()
	}
	return st, k, objs
}

func idsOf(objs []writer.Object) []storageid.ID {
	var ids []storageid.ID
	for _, o := range objs {
		ids = append(ids, o.StorageID)
	}
	return ids
}

// scanIDs scans the table and returns the id column's values released, and
// the scan's error.
func scanIDs(ctx context.Context, t testing.TB, st verify.Source, k keys, ids []storageid.ID, opts ...table.Option) ([]int64, error) {
	rr, err := table.Scan(ctx, st, k, manySchema, ids, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Release()
	var got []int64
	for rr.Next() {
		got = append(got, rr.RecordBatch().Column(0).(*array.Int64).Int64Values()...)
	}
	return got, rr.Err()
}

func seq(from, to int) []int64 {
	var s []int64
	for i := from; i < to; i++ {
		s = append(s, int64(i))
	}
	return s
}

// TestDamage: of ten objects, one has a byte flipped in a column chunk of its
// second row group, another two column chunks swapped (the id chunks of its
// third and fourth row groups: every module still authenticates under the
// empty AAD, only content addressing sees the swap, Section 11.10). A scan
// fails with an *ObjectError naming the damaged object, matching
// verify.ErrVerify, after releasing exactly the rows of the objects before it
// and of its first row group.
func TestDamage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	good, k, objs := many(t, 10)
	ids := idsOf(objs)

	type damage struct {
		name string
		obj  int
		// mutate damages d and returns the damaged spans.
		mutate func(t *testing.T, o writer.Object, d []byte) []pme.Span
	}
	for _, dm := range []damage{
		{"flipped byte", 3, func(t *testing.T, o writer.Object, d []byte) []pme.Span {
			c := chunks(t, d, o.DEK)[1][2] // row group 1, column s
			d[c.Off+c.Len/2] ^= 0x40
			return []pme.Span{{Off: c.Off + c.Len/2, Len: 1}}
		}},
		{"swapped chunks", 6, func(t *testing.T, o writer.Object, d []byte) []pme.Span {
			c := chunks(t, d, o.DEK)
			a, b := c[2][0], c[3][0] // the id chunks of row groups 2 and 3
			if a.Len != b.Len {
				t.Fatalf("id chunks of %d and %d bytes", a.Len, b.Len)
			}
			tmp := bytes.Clone(d[a.Off:a.End()])
			copy(d[a.Off:], d[b.Off:b.End()])
			copy(d[b.Off:], tmp)
			return []pme.Span{a, b}
		}},
	} {
		t.Run(dm.name, func(t *testing.T) {
			t.Parallel()
			st := memstore.New()
			for _, o := range objs {
				st.PutAs(o.StorageID, good.Bytes(o.StorageID), good.OutboardOf(o.StorageID))
			}
			o := objs[dm.obj]
			d := bytes.Clone(good.Bytes(o.StorageID))
			damaged := dm.mutate(t, o, d)
			st.PutAs(o.StorageID, d, good.OutboardOf(o.StorageID))

			// The rows released: those of the objects before, and of the
			// row groups before the first whose chunks share a 16 KiB
			// group (the unit of verification) with the damage.
			first := 0
			for first < objRows/rgRows && !touches(damaged, chunks(t, d, o.DEK)[first]...) {
				first++
			}
			if first == 0 || first == objRows/rgRows {
				t.Fatalf("the damage touches row group %d", first)
			}
			t.Logf("object %d: %d intact row groups of %d", dm.obj, first, objRows/rgRows)
			want := seq(0, dm.obj*objRows+first*rgRows)
			for _, opts := range [][]table.Option{
				nil,
				{table.WithScanOptions(reader.WithParallelism(1))},
				{table.WithPrefetch(0), table.WithScanOptions(reader.WithParallelism(3), reader.WithBatchSize(1000))},
			} {
				got, err := scanIDs(ctx, t, st, k, ids, opts...)
				var oe *table.ObjectError
				if !errors.As(err, &oe) || oe.Index != dm.obj || oe.ID != o.StorageID || !errors.Is(err, verify.ErrVerify) {
					t.Fatalf("scan error %v, want an *ObjectError for object %d matching verify.ErrVerify", err, dm.obj)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%d rows released (%v...), want %d", len(got), got[:min(3, len(got))], len(want))
				}
			}
			// A projection that does not read the damage does not see it.
			if dm.name == "flipped byte" {
				got, err := scanIDs(ctx, t, st, k, ids, table.WithFields(1))
				if err != nil || len(got) != 10*objRows {
					t.Fatalf("projection to id: %d rows, %v", len(got), err)
				}
			}
			// Verify reports the damaged object and only it.
			res, err := table.Verify(ctx, st, k, ids)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range res {
				if r.Index != i || r.ID != ids[i] || r.Size != int64(objs[i].Size) {
					t.Errorf("result %d: %+v", i, r)
				}
				if (i == dm.obj) != errors.Is(r.Err, verify.ErrVerify) {
					t.Errorf("object %d: %v", i, r.Err)
				}
			}
		})
	}
}

// TestObjectErrors: a missing key and a missing object fail the scan at that
// object, with the reader's error.
func TestObjectErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, k, objs := many(t, 3)
	ids := idsOf(objs)
	noKey := keys{ids[0]: k[ids[0]], ids[2]: k[ids[2]]}
	got, err := scanIDs(ctx, t, st, noKey, ids)
	var oe *table.ObjectError
	if !errors.Is(err, reader.ErrNoKey) || !errors.As(err, &oe) || oe.Index != 1 || !slices.Equal(got, seq(0, objRows)) {
		t.Errorf("missing key: %d rows, %v", len(got), err)
	}
	missing := storageid.Sum([]byte("not stored"))
	got, err = scanIDs(ctx, t, st, k, []storageid.ID{ids[0], ids[1], missing})
	if !errors.As(err, &oe) || oe.Index != 2 || oe.ID != missing || !slices.Equal(got, seq(0, 2*objRows)) ||
		!strings.Contains(err.Error(), missing.String()) {
		t.Errorf("missing object: %d rows, %v", len(got), err)
	}
	// No object: no row, no error.
	if got, err := scanIDs(ctx, t, st, k, nil); len(got) != 0 || err != nil {
		t.Errorf("no object: %d rows, %v", len(got), err)
	}
	res, err := table.Verify(ctx, st, noKey, []storageid.ID{missing, ids[1], ids[2]})
	if err != nil || len(res) != 3 || res[0].Err == nil || !errors.Is(res[1].Err, reader.ErrNoKey) || res[2].Err != nil {
		t.Errorf("Verify = %+v, %v", res, err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := table.Verify(cancelled, st, k, ids); !errors.Is(err, context.Canceled) {
		t.Errorf("Verify with a cancelled context = %v", err)
	}
}

// touches reports whether reading any of spans touches damage: whether their
// 16 KiB groups meet those of a damaged span.
func touches(damage []pme.Span, spans ...pme.Span) bool {
	group := func(s pme.Span) pme.Span {
		off := s.Off / verify.GroupSize * verify.GroupSize
		end := (s.End() + verify.GroupSize - 1) / verify.GroupSize * verify.GroupSize
		return pme.Span{Off: off, Len: end - off}
	}
	for _, d := range damage {
		for _, s := range spans {
			if g, h := group(d), group(s); g.Off < h.End() && h.Off < g.End() {
				return true
			}
		}
	}
	return false
}

// goroutinesBack waits until the number of goroutines is at most n.
func goroutinesBack(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, want %d:\n%s", runtime.NumGoroutine(), n, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPrefetch: the scan opens objects ahead; a Release after the first
// record, or a cancelled context, ends it promptly, with every goroutine it
// started gone and every buffer released. Not parallel: it counts goroutines.
func TestPrefetch(t *testing.T) {
	st, k, objs := many(t, 20)
	ids := idsOf(objs)

	t.Run("release early", func(t *testing.T) {
		base := runtime.NumGoroutine()
		for _, prefetch := range []int{0, 1, 4, 16} {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			rr, err := table.Scan(context.Background(), st, k, manySchema, ids, table.WithPrefetch(prefetch), table.WithAllocator(mem))
			if err != nil {
				t.Fatal(err)
			}
			if !rr.Next() {
				t.Fatal(rr.Err())
			}
			// Let the objects ahead open.
			time.Sleep(20 * time.Millisecond)
			rr.Release()
			goroutinesBack(t, base)
			mem.AssertSize(t, 0)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		base := runtime.NumGoroutine()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		rr, err := table.Scan(ctx, st, k, manySchema, ids, table.WithAllocator(mem), table.WithScanOptions(reader.WithBatchSize(1000)))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rr.Next() {
			if n++; n == 15 { // in the second object
				cancel()
				start := time.Now()
				for rr.Next() {
				}
				if d := time.Since(start); d > time.Second {
					t.Errorf("the scan took %v to end after cancel", d)
				}
			}
		}
		if !errors.Is(rr.Err(), context.Canceled) {
			t.Errorf("Err = %v, want context.Canceled", rr.Err())
		}
		var oe *table.ObjectError
		if errors.As(rr.Err(), &oe) {
			t.Errorf("a cancelled scan blames object %d", oe.Index)
		}
		rr.Release()
		goroutinesBack(t, base)
		mem.AssertSize(t, 0)
	})
	t.Run("whole", func(t *testing.T) {
		base := runtime.NumGoroutine()
		got, err := scanIDs(context.Background(), t, st, k, ids, table.WithPrefetch(2))
		if err != nil || !slices.Equal(got, seq(0, 20*objRows)) {
			t.Fatalf("%d rows, %v", len(got), err)
		}
		goroutinesBack(t, base)
	})
}

// TestRecordOutlivesScan: a record retained past the scan's Release is still
// valid, and its buffers go back to the caller's allocator when it is
// released, after the scan has handed back everything it kept for reuse.
func TestRecordOutlivesScan(t *testing.T) {
	t.Parallel()
	st, k, objs := many(t, 3)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rr, err := table.Scan(context.Background(), st, k, manySchema, idsOf(objs), table.WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	var kept []arrow.RecordBatch
	for rr.Next() {
		rec := rr.RecordBatch()
		rec.Retain()
		kept = append(kept, rec)
	}
	if err := rr.Err(); err != nil {
		t.Fatal(err)
	}
	rr.Release()
	var ids []int64
	for _, rec := range kept {
		ids = append(ids, rec.Column(0).(*array.Int64).Int64Values()...)
		rec.Release()
	}
	if !slices.Equal(ids, seq(0, 3*objRows)) {
		t.Fatalf("%d rows", len(ids))
	}
}
