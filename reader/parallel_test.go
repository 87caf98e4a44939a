package reader_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/verify"
	"github.com/sovm/sop-pme/writer"
)

// drain reads every batch of a scan of r with opts, retaining them, and
// returns them with the scan's error; the scan is released.
func drain(t *testing.T, r *reader.Reader, opts ...reader.ScanOption) ([]arrow.RecordBatch, error) {
	t.Helper()
	rr, err := r.Scan(context.Background(), opts...)
	if err != nil {
		return nil, err
	}
	defer rr.Release()
	var out []arrow.RecordBatch
	for rr.Next() {
		b := rr.RecordBatch()
		b.Retain()
		out = append(out, b)
	}
	return out, rr.Err()
}

func releaseAll(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

// sameBatches fails t unless got and want hold the same batches, in order.
func sameBatches(t *testing.T, got, want []arrow.RecordBatch) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d batches, want %d", len(got), len(want))
	}
	for i := range got {
		if !array.RecordEqual(got[i], want[i]) {
			t.Fatalf("batch %d differs:\n%v\nwant\n%v", i, got[i], want[i])
		}
	}
}

// TestParallelScanIdentical: a scan decoding 2, 3 or 8 row groups at once
// returns the batches of the sequential scan, in its order, for flat and
// nested objects of many row groups, whole or projected, with batches that
// end inside row groups or span them, and row groups out of order and
// repeated.
func TestParallelScanIdentical(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema, rec := fiveColumns(t, 30000)
	defer rec.Release()
	flat := newMemStore()
	flatObj := writeObject(t, flat, schema, rec, writer.WithRowGroupRows(2500))
	nst, nestedObj, _, nrec := nestedObject(t, 6000, writer.WithRowGroupRows(500))
	defer nrec.Release()
	for _, o := range []struct {
		name string
		st   *memStore
		obj  writer.Object
	}{{"flat", flat, flatObj}, {"nested", nst, nestedObj}} {
		r, err := reader.Open(ctx, o.st, o.obj.StorageID, keys{o.obj.StorageID: o.obj.DEK})
		if err != nil {
			t.Fatal(err)
		}
		if r.NumRowGroups() < 12 {
			t.Fatalf("%s: %d row groups, want ≥ 12", o.name, r.NumRowGroups())
		}
		for _, sc := range []struct {
			name string
			opts []reader.ScanOption
		}{
			{"all", nil},
			{"batch 777", []reader.ScanOption{reader.WithBatchSize(777)}},
			{"projected", []reader.ScanOption{reader.WithFields(fieldID(t, r.Schema().Field(1)), fieldID(t, r.Schema().Field(2))), reader.WithBatchSize(1000)}},
			{"row groups 5 1 3 1 11", []reader.ScanOption{reader.WithRowGroups(5, 1, 3, 1, 11)}},
		} {
			want, err := drain(t, r, append(sc.opts, reader.WithParallelism(1))...)
			if err != nil {
				t.Fatalf("%s %s sequential: %v", o.name, sc.name, err)
			}
			for _, par := range []int{2, 3, 8} {
				t.Run(fmt.Sprintf("%s/%s/%d", o.name, sc.name, par), func(t *testing.T) {
					rr, err := r.Scan(ctx, append(sc.opts, reader.WithParallelism(par))...)
					if err != nil {
						t.Fatal(err)
					}
					if _, _, _, ok := reader.ParallelStats(rr); !ok {
						t.Fatalf("WithParallelism(%d) scanned sequentially", par)
					}
					rr.Release()
					got, err := drain(t, r, append(sc.opts, reader.WithParallelism(par))...)
					defer releaseAll(got)
					if err != nil {
						t.Fatal(err)
					}
					sameBatches(t, got, want)
				})
			}
			releaseAll(want)
		}
	}
	if _, err := flatReader(t, flat, flatObj).Scan(ctx, reader.WithParallelism(0)); !errors.Is(err, reader.ErrOption) {
		t.Errorf("WithParallelism(0): %v, want ErrOption", err)
	}
}

// fieldID returns the Parquet field ID of f.
func fieldID(t *testing.T, f arrow.Field) int32 {
	t.Helper()
	v, ok := f.Metadata.GetValue(writer.FieldIDKey)
	if !ok {
		t.Fatalf("field %s has no ID", f.Name)
	}
	id, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		t.Fatal(err)
	}
	return int32(id)
}

func flatReader(t *testing.T, st *memStore, obj writer.Object) *reader.Reader {
	t.Helper()
	r, err := reader.Open(context.Background(), st, obj.StorageID, keys{obj.StorageID: obj.DEK})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestParallelScanTamper: one byte flipped in a column chunk of row group
// k makes a scan decoding 4 row groups at once fail with verify.ErrVerify
// once it has returned exactly the rows of the row groups before k, and
// none of k's, whatever k.
func TestParallelScanTamper(t *testing.T) {
	t.Parallel()
	const rows, rgRows = 24000, 3000
	schema, rec := fiveColumns(t, rows)
	t.Cleanup(rec.Release) // after the parallel subtests
	orig := newMemStore()
	obj := writeObject(t, orig, schema, rec, writer.WithRowGroupRows(rgRows), writer.WithCodec(writer.Uncompressed), writer.WithDictionary(false))
	good := orig.bytes(obj.StorageID)
	l := layoutOf(t, good, obj.DEK)
	// Column 2 (strings) is in the middle of its row group, and its chunks
	// are larger than two groups of verification (16 KiB): the damage fails
	// the reads of its row group only.
	const col = 2
	for _, k := range []int{0, 1, 5, len(l.chunks) - 1} {
		{
			if l.chunks[k][col].Len < 64<<10 {
				t.Fatalf("chunk of %d bytes, want ≥ 64 KiB", l.chunks[k][col].Len)
			}
			t.Run(fmt.Sprintf("row group %d column %d", k, col), func(t *testing.T) {
				t.Parallel()
				bad := bytes.Clone(good)
				c := l.chunks[k][col]
				bad[c.Off+c.Len/2] ^= 0x40
				st := newMemStore()
				st.putAs(obj.StorageID, bad, orig.outboard(obj.StorageID))
				r := flatReader(t, st, obj)
				got, err := drain(t, r, reader.WithParallelism(4), reader.WithBatchSize(1000))
				defer releaseAll(got)
				if !errors.Is(err, verify.ErrVerify) {
					t.Fatalf("scan ended with %v, want verify.ErrVerify", err)
				}
				var n int64
				for _, b := range got {
					ids := b.Column(0).(*array.Int64)
					for i := range ids.Len() {
						if ids.Value(i) != n {
							t.Fatalf("row %d has id %d", n, ids.Value(i))
						}
						n++
					}
					want := rec.NewSlice(n-b.NumRows(), n)
					if !array.RecordEqual(b, want) {
						t.Errorf("rows [%d, %d) differ from those written", n-b.NumRows(), n)
					}
					want.Release()
				}
				if n != int64(k*rgRows) {
					t.Errorf("%d rows before the error, want the %d of the row groups before %d", n, k*rgRows, k)
				}
			})
		}
	}
}

// manyRowGroups writes a flat object of 40 row groups of 1000 rows.
func manyRowGroups(t *testing.T) (*memStore, writer.Object) {
	t.Helper()
	schema, rec := fiveColumns(t, 40000)
	defer rec.Release()
	st := newMemStore()
	return st, writeObject(t, st, schema, rec, writer.WithRowGroupRows(1000))
}

// settleGoroutines waits up to 2 s for the goroutines to come back to base,
// and fails t if they do not.
func settleGoroutines(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines left behind:\n%s", n-base, buf[:runtime.Stack(buf, true)])
	}
}

// TestParallelScanCancel: cancelling the context of a scan decoding 4 row
// groups at once ends it at the next batch with context.Canceled, and,
// like releasing scans abandoned at any batch, leaves no goroutine behind
// once released. (Not parallel: it counts goroutines.)
func TestParallelScanCancel(t *testing.T) {
	st, obj := manyRowGroups(t)
	r := flatReader(t, st, obj)
	base := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rr, err := r.Scan(ctx, reader.WithParallelism(4), reader.WithBatchSize(100))
	if err != nil {
		t.Fatal(err)
	}
	var rows int64
	for i := 0; rr.Next(); i++ {
		rows += rr.RecordBatch().NumRows()
		if i == 25 {
			cancel()
		}
	}
	if !errors.Is(rr.Err(), context.Canceled) || rows != 2600 {
		t.Errorf("%d rows, then %v; want 2600 rows, then context.Canceled", rows, rr.Err())
	}
	rr.Release()
	settleGoroutines(t, base)

	// Abandoned after 0 to 60 batches, 8 scans at once, from goroutines.
	done := make(chan error)
	for g := range 8 {
		go func() {
			rr, err := r.Scan(context.Background(), reader.WithParallelism(1+g%4), reader.WithBatchSize(300))
			if err != nil {
				done <- err
				return
			}
			for i := 0; i < 8*g && rr.Next(); i++ {
			}
			rr.Release()
			done <- nil
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	settleGoroutines(t, base)
}

// TestParallelScanMemoryLimit: at the least WithMemoryLimit with which the
// sequential scan reads an object, a scan decoding 4 row groups at once
// reads the same batches, its row groups in flight together holding no
// more than that limit (giving row groups up to make room), and below it
// both fail with ErrMemoryLimit.
func TestParallelScanMemoryLimit(t *testing.T) {
	t.Parallel()
	st, obj := manyRowGroups(t)
	r := flatReader(t, st, obj)
	scan := func(limit int64, par int) ([]arrow.RecordBatch, error) {
		return drain(t, r, reader.WithMemoryLimit(limit), reader.WithParallelism(par), reader.WithBatchSize(400))
	}
	// The least limit of the sequential scan, to 1 KiB.
	lo, hi := int64(1), int64(64<<20)
	for hi-lo > 1<<10 {
		mid := (lo + hi) / 2
		recs, err := scan(mid, 1)
		releaseAll(recs)
		switch {
		case err == nil:
			hi = mid
		case errors.Is(err, reader.ErrMemoryLimit):
			lo = mid
		default:
			t.Fatalf("limit %d: %v", mid, err)
		}
	}
	want, err := scan(hi, 1)
	defer releaseAll(want)
	if err != nil {
		t.Fatal(err)
	}
	rr, err := r.Scan(context.Background(), reader.WithMemoryLimit(hi), reader.WithParallelism(4), reader.WithBatchSize(400))
	if err != nil {
		t.Fatal(err)
	}
	var got []arrow.RecordBatch
	defer func() { releaseAll(got) }()
	for rr.Next() {
		b := rr.RecordBatch()
		b.Retain()
		got = append(got, b)
	}
	peak, limit, gaveUp, _ := reader.ParallelStats(rr)
	err = rr.Err()
	rr.Release()
	t.Logf("least limit %d bytes: parallel scan peaked at %d, gave %d row groups up", hi, peak, gaveUp)
	if err != nil {
		t.Fatalf("parallel scan at the sequential scan's least limit: %v", err)
	}
	sameBatches(t, got, want)
	if limit != hi || peak > hi {
		t.Errorf("peak %d bytes, limit %d; want at most %d", peak, limit, hi)
	}
	if gaveUp == 0 {
		t.Errorf("no row group given up at the least limit")
	}
	if recs, err := scan(lo, 4); !errors.Is(err, reader.ErrMemoryLimit) {
		t.Errorf("parallel scan below the least limit: %v, want ErrMemoryLimit", err)
	} else {
		releaseAll(recs)
	}
	// With the default limit, the row groups in flight hold far less.
	rr, err = r.Scan(context.Background(), reader.WithParallelism(4))
	if err != nil {
		t.Fatal(err)
	}
	for rr.Next() {
	}
	peak, limit, _, _ = reader.ParallelStats(rr)
	rr.Release()
	if peak == 0 || peak > limit {
		t.Errorf("default limit: peak %d bytes, limit %d", peak, limit)
	}
}

// TestParallelScanRoomHeld: rows of one repeated 1,000-byte string, in row
// groups whose batches take most of the default memory limit, read whole
// with 2 row groups at once within a deadline. A worker that had decoded
// its row group ahead left its last batch queued, counted, and went on; the
// head, needing that room, waited for it for ever (the writer's test of
// large values hung).
func TestParallelScanRoomHeld(t *testing.T) {
	t.Parallel()
	schema := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String, Metadata: fid(1)}}, nil)
	b := array.NewStringBuilder(memory.DefaultAllocator)
	defer b.Release()
	v := strings.Repeat("x", 1000)
	for range 200_000 {
		b.Append(v)
	}
	col := b.NewArray()
	defer col.Release()
	rec := array.NewRecordBatch(schema, []arrow.Array{col}, int64(col.Len()))
	defer rec.Release()
	st := newMemStore()
	obj := writeObject(t, st, schema, rec)
	r := flatReader(t, st, obj)
	if r.NumRowGroups() < 3 {
		t.Fatalf("%d row groups, want ≥ 3", r.NumRowGroups())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rr, err := r.Scan(ctx, reader.WithParallelism(2))
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Release()
	var rows int64
	for rr.Next() {
		rows += rr.RecordBatch().NumRows()
	}
	_, _, gaveUp, _ := reader.ParallelStats(rr)
	t.Logf("%d row groups: %d rows, %v; %d given up", r.NumRowGroups(), rows, rr.Err(), gaveUp)
	if rows != 200_000 || rr.Err() != nil {
		t.Errorf("%d rows, then %v; want 200000 rows", rows, rr.Err())
	}
}

// TestParallelScanReadAs: the workers of a parallel scan read the columns
// as the sequential scan does under the options that change what arrow-go
// reads (WithDictionaries, WithNarrowDecimals, and DATE columns always):
// the same batches, of the same types.
func TestParallelScanReadAs(t *testing.T) {
	t.Parallel()
	_, dr := dictObject(t, 10000) // 3 row groups
	d := func(p int32) arrow.DataType { return &arrow.Decimal128Type{Precision: p, Scale: 2} }
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "d7", Type: d(7), Nullable: true, Metadata: fid(1)},
		{Name: "d15", Type: d(15), Nullable: true, Metadata: fid(2)},
		{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true, Metadata: fid(3)},
	}, nil)
	b := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
	defer b.Release()
	for i := range 3000 {
		if i%13 == 0 {
			for c := range 3 {
				b.Field(c).AppendNull()
			}
			continue
		}
		b.Field(0).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(i*37 - 5000)))
		b.Field(1).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(i) * 1_000_003))
		b.Field(2).(*array.Date32Builder).Append(arrow.Date32(i - 1000))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	st := newMemStore()
	nr := flatReader(t, st, writeObject(t, st, schema, rec, writer.WithRowGroupRows(700)))
	for _, c := range []struct {
		name string
		r    *reader.Reader
		opts []reader.ScanOption
	}{
		{"dictionaries", dr, []reader.ScanOption{reader.WithDictionaries()}},
		{"any-dictionaries", dr, []reader.ScanOption{reader.WithAnyDictionaries()}},
		{"narrow", nr, []reader.ScanOption{reader.WithNarrowDecimals()}},
		{"dates", nr, nil},
	} {
		want, err := drain(t, c.r, append(c.opts, reader.WithParallelism(1), reader.WithBatchSize(500))...)
		if err != nil {
			t.Fatalf("%s, sequential: %v", c.name, err)
		}
		got, err := drain(t, c.r, append(c.opts, reader.WithParallelism(3), reader.WithBatchSize(500))...)
		if err != nil {
			t.Fatalf("%s, 3 row groups at once: %v", c.name, err)
		}
		sameBatches(t, got, want)
		if !got[0].Schema().Equal(want[0].Schema()) {
			t.Fatalf("%s: schema %v, want %v", c.name, got[0].Schema(), want[0].Schema())
		}
		releaseAll(got)
		releaseAll(want)
	}
}
