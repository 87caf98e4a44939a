package writer_test

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/sovm/sop-pme/internal/testkit/memstore"
	"github.com/sovm/sop-pme/internal/testkit/testtables"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/writer"
)

type oneKey struct {
	id  storageid.ID
	dek pme.DEK
}

func (k oneKey) ResolveDEK(_ context.Context, id storageid.ID) (pme.DEK, error) {
	if id != k.id {
		return pme.DEK{}, reader.ErrNoKey
	}
	return k.dek, nil
}

// extraTypes returns n rows of the types the writer takes beyond
// testtables.AllTypes: long repeated strings, a dictionary, large strings,
// fixed-size binaries and lists.
func extraTypes(n int) arrow.RecordBatch {
	var g testtables.FieldIDs
	f := g.Field
	dict := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	schema := arrow.NewSchema([]arrow.Field{
		f("long", arrow.BinaryTypes.String),
		f("dict", dict),
		f("large", arrow.BinaryTypes.LargeString),
		f("fsb", &arrow.FixedSizeBinaryType{ByteWidth: 16}),
		f("fsl", arrow.FixedSizeListOfField(3, f("element", arrow.PrimitiveTypes.Int32))),
		f("ll", arrow.ListOfField(f("element", arrow.ListOfField(f("element", arrow.PrimitiveTypes.Int16))))),
		f("low", arrow.PrimitiveTypes.Float64),
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	long := strings.Repeat("x", 1000)
	for i := range n {
		b.Field(0).(*array.StringBuilder).Append(long)
		b.Field(1).(*array.BinaryDictionaryBuilder).AppendString("v" + strconv.Itoa(i%50) + strings.Repeat("y", i%50))
		if i%3 == 0 {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.LargeStringBuilder).Append(fmt.Sprint("large", i))
		}
		b.Field(3).(*array.FixedSizeBinaryBuilder).Append([]byte(fmt.Sprintf("%016d", i)))
		fl := b.Field(4).(*array.FixedSizeListBuilder)
		fl.Append(true)
		for k := range 3 {
			fl.ValueBuilder().(*array.Int32Builder).Append(int32(i + k))
		}
		b.Field(6).(*array.Float64Builder).Append(float64(i % 3))
		ll := b.Field(5).(*array.ListBuilder)
		ll.Append(true)
		inner := ll.ValueBuilder().(*array.ListBuilder)
		for k := range i % 4 {
			inner.Append(true)
			for m := range k {
				inner.ValueBuilder().(*array.Int16Builder).Append(int16(m))
			}
		}
	}
	return b.NewRecordBatch()
}

// TestDecodeCostBound: for every type the writer takes, what the reader's
// decoder allocates to decode a batch of one column is at most what the
// writer estimates (readableRowGroups), on the very pages the writer
// encodes (sealed as they are, so that no row group is split): a scan of
// the column with WithMemoryLimit of the estimate, plus 64 KiB for each of
// its leaf columns' decoders, reads every row. The estimate decides
// whether the writer's row groups fit the reader's default memory limit,
// so it must not fall short.
//
// The four tables (1,000 and reader.DefaultBatchSize rows, of
// testtables.AllTypes and of extraTypes) are independent subtests, run in
// parallel.
func TestDecodeCostBound(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1000, reader.DefaultBatchSize} {
		for _, table := range []struct {
			name string
			rec  func(n int) arrow.RecordBatch
		}{
			{"alltypes", func(n int) arrow.RecordBatch { return testtables.Record(testtables.AllTypes(), n, 7) }},
			{"extra", extraTypes},
		} {
			t.Run(fmt.Sprintf("n=%d/%s", n, table.name), func(t *testing.T) {
				t.Parallel()
				rec := table.rec(n)
				defer rec.Release()
				decodeCostBound(t, n, rec)
			})
		}
	}
}

func decodeCostBound(t *testing.T, n int, rec arrow.RecordBatch) {
	ctx := context.Background()
	file, needs, retained, err := writer.EncodePlain(rec)
	if err != nil {
		t.Fatal(err)
	}
	st := memstore.New()
	// One row group of n rows of every type, which at n = 65536 needs more
	// than the reader's default limit (so SealFile would refuse it): sealed
	// without the decode check, and read with explicit limits below.
	obj, err := writer.SealFile(ctx, st, bytes.NewReader(file), int64(len(file)), writer.WithoutDecodeCheck())
	if err != nil {
		t.Fatal(err)
	}
	r, err := reader.Open(ctx, st, obj.StorageID, oneKey{obj.StorageID, obj.DEK})
	if err != nil {
		t.Fatal(err)
	}
	// All the columns at once: what each keeps, plus the largest rise to a
	// peak.
	var kept, rise int64
	for j := range needs {
		kept += retained[j]
		rise = max(rise, needs[j]-retained[j])
	}
	ids := make([]int32, 0, rec.NumCols())
	for _, fd := range rec.Schema().Fields() {
		id, _ := strconv.Atoi(fd.Metadata.Values()[fd.Metadata.FindKey(writer.FieldIDKey)])
		ids = append(ids, int32(id))
	}
	checkEstimate(t, r, fmt.Sprintf("n=%d all columns", n), kept+rise, int64(len(needs))*64<<10, ids...)
	leaf := 0
	for _, fd := range rec.Schema().Fields() {
		leaves := writer.NumLeaves(fd.Type)
		var est int64
		for _, c := range needs[leaf : leaf+leaves] {
			est += c
		}
		leaf += leaves
		id, _ := strconv.Atoi(fd.Metadata.Values()[fd.Metadata.FindKey(writer.FieldIDKey)])
		checkEstimate(t, r, fmt.Sprintf("n=%d %s", n, fd.Name), est, int64(leaves)*64<<10, int32(id))
	}
}

// checkEstimate fails the test unless a scan of fields ids reads every row
// with WithMemoryLimit(est + overhead): the decoder needs at most est
// bytes beyond overhead. When the estimate falls short, the error reports
// the least limit to the byte (32 scans). Under -v, what the decoder needs
// is logged, found to within 1/64 of est + overhead (six more scans);
// without -v the log would not be shown, and the scans are not made.
func checkEstimate(t *testing.T, r *reader.Reader, name string, est, overhead int64, ids ...int32) {
	t.Helper()
	limit := est + overhead
	if !reads(r, limit, ids...) {
		t.Errorf("%s: the decoder needs %d bytes, the estimate is %d", name, leastLimit(t, r, ids...)-overhead, est)
		return
	}
	if !testing.Verbose() {
		return
	}
	lo, hi := int64(0), limit // lo does not read (or is 0), hi does
	for hi-lo > limit/64 {
		if m := (lo + hi) / 2; reads(r, m, ids...) {
			hi = m
		} else {
			lo = m
		}
	}
	t.Logf("%s: needs at most %d, estimate %d (%.2f)", name, hi-overhead, est, float64(est)/float64(hi-overhead))
}

// reads reports whether a scan of fields ids with WithMemoryLimit(limit)
// reads every row.
func reads(r *reader.Reader, limit int64, ids ...int32) bool {
	rr, err := r.Scan(context.Background(), reader.WithFields(ids...), reader.WithMemoryLimit(limit))
	if err != nil {
		return false
	}
	defer rr.Release()
	for rr.Next() {
	}
	return rr.Err() == nil
}

// leastLimit returns the least WithMemoryLimit with which a scan of fields
// ids reads every row.
func leastLimit(t *testing.T, r *reader.Reader, ids ...int32) int64 {
	lo, hi := int64(1), int64(1)<<32
	if !reads(r, hi, ids...) {
		t.Fatalf("fields %v do not read with %d bytes", ids, hi)
	}
	for lo < hi {
		if m := (lo + hi) / 2; reads(r, m, ids...) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return hi
}
