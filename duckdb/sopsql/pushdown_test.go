package sopsql

import (
	"math/bits"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/sovm/sop-pme/duckdb/internal/ducktest"
	"github.com/sovm/sop-pme/internal/testkit/testtables"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
	"github.com/sovm/sop-pme/writer"
)

// layout is where an object's column chunks and footer region lie, from its
// decrypted footer.
type layout struct {
	size   int64
	footer int64        // bytes from the end of the data region to the end: FileCryptoMetaData, footer module, trailer
	chunks [][]pme.Span // by row group and leaf column
}

func layoutOf(t testing.TB, st *ducktest.Store, id storageid.ID) layout {
	t.Helper()
	data := st.Bytes(t, id)
	footer := ducktest.OpenFooter(t, data, st.Keys[id])
	chunks, err := footer.ColumnChunks()
	if err != nil {
		t.Fatal(err)
	}
	return layout{size: int64(len(data)), footer: int64(len(data) - footer.DataEnd), chunks: chunks}
}

// need returns the bytes of the given leaf columns' chunks and the footer
// region.
func (l layout) need(cols ...int) int64 {
	n := l.footer
	for _, rg := range l.chunks {
		for _, c := range cols {
			n += rg[c].Len
		}
	}
	return n
}

// sliceOverhead bounds what one verified range fetches beyond its bytes:
// two partial 16 KiB groups at its ends, the 8-byte size, and the parent
// pairs on the paths to its groups (64 bytes per tree level, on each side).
func sliceOverhead(size int64) int64 {
	groups := (size + verify.GroupSize - 1) / verify.GroupSize
	depth := int64(bits.Len64(uint64(groups)))
	return 2*verify.GroupSize + 8 + 2*64*depth
}

// wideTable is n rows of 20 int64 columns c1..c20 with field IDs 1..20.
func wideTable(n int) arrow.RecordBatch {
	fields := make([]arrow.Field, 20)
	for i := range fields {
		fields[i] = arrow.Field{Name: "c" + strconv.Itoa(i+1), Type: arrow.PrimitiveTypes.Int64, Metadata: testtables.FieldID(i + 1)}
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema(fields, nil))
	defer b.Release()
	for c := range fields {
		cb := b.Field(c).(*array.Int64Builder)
		for r := range n {
			cb.Append(int64(r*(c+1)) ^ int64(r*r))
		}
	}
	return b.NewRecordBatch()
}

// TestProjectionPushdown counts what the store hands out for queries over
// an object of 20 columns in 4 row groups: a query of 2 columns fetches
// (and verifies) the footer and those columns' chunks, within the
// alignment and proof overhead of each verified range, and nothing else; a
// count(*) fetches one column; SELECT * fetches about the whole object.
func TestProjectionPushdown(t *testing.T) {
	t.Parallel()
	const rows = 40_000
	rec := wideTable(rows)
	defer rec.Release()
	st := ducktest.NewStore(t)
	id := st.Write(t, rec.Schema(), []arrow.RecordBatch{rec}, writer.WithRowGroupRows(rows/4), writer.WithCodec(writer.Uncompressed)).StorageID
	l := layoutOf(t, st, id)
	if len(l.chunks) != 4 || len(l.chunks[0]) != 20 {
		t.Fatalf("layout: %d row groups of %d columns, want 4 of 20", len(l.chunks), len(l.chunks[0]))
	}
	src := &counting{src: st}
	db := openDB(t, st, src).SQL()

	var want3, want17, want3odd int64
	for r := range int64(rows) {
		want3 += (r * 3) ^ (r * r)
		want17 = max(want17, (r*17)^(r*r))
		if rg := r / (rows / 4); rg == 1 || rg == 3 {
			want3odd += (r * 3) ^ (r * r)
		}
	}
	cases := []struct {
		query string
		cols  []int // leaf columns the query needs
		want  []any
	}{
		{"SELECT sum(c3)::BIGINT, max(c17) FROM " + sopScan(id), []int{2, 16}, []any{want3, want17}},
		{"SELECT count(*) FROM " + sopScan(id), []int{0}, []any{int64(rows)}},
		{"SELECT sum(c3)::BIGINT FROM " + sopScan(id, "row_groups := [1, 3]"), nil, []any{want3odd}},
	}
	for _, c := range cases {
		t.Run(c.query, func(t *testing.T) {
			src.reset()
			got := ducktest.MustQuery(t, db, c.query)
			fetched, slices := src.bytes.Load(), src.slices.Load()
			need := l.need(c.cols...)
			if c.cols == nil { // row groups 1 and 3 of column 3
				need = l.footer + l.chunks[1][2].Len + l.chunks[3][2].Len
			}
			compareRows(t, "result", [][]any{c.want}, got)
			bound := need + slices*sliceOverhead(l.size)
			t.Logf("fetched %d bytes in %d slices; chunks + footer %d; bound %d; object %d", fetched, slices, need, bound, l.size)
			if fetched > bound {
				t.Errorf("fetched %d bytes, more than the chunks and footer the query needs (%d) plus %d slices' overhead (bound %d)", fetched, need, slices, bound)
			}
			if fetched < need {
				t.Errorf("fetched %d bytes, fewer than the chunks and footer the query reads (%d)", fetched, need)
			}
			if fetched > l.size/4 {
				t.Errorf("fetched %d bytes of an object of %d", fetched, l.size)
			}
		})
	}
	src.reset()
	ducktest.MustQuery(t, db, "SELECT * FROM "+sopScan(id))
	if fetched := src.bytes.Load(); fetched < l.size {
		t.Errorf("SELECT * fetched %d bytes of an object of %d", fetched, l.size)
	}
}
