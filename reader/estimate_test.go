package reader_test

import (
	"context"
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/writer"
)

// TestFooterRowCount: the footer's row counts, summed over the row groups
// asked for (all by default), and ErrRowGroup for an index out of range.
func TestFooterRowCount(t *testing.T) {
	t.Parallel()
	schema := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64, Metadata: fid(1)}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range 25_000 {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	st := newMemStore()
	obj := writeObject(t, st, schema, rec, writer.WithRowGroupRows(10_000))
	r, err := reader.Open(context.Background(), st, obj.StorageID, keys{obj.StorageID: obj.DEK})
	if err != nil {
		t.Fatal(err)
	}
	if r.NumRowGroups() != 3 {
		t.Fatalf("%d row groups, want 3", r.NumRowGroups())
	}
	for _, c := range []struct {
		rgs  []int
		want int64
	}{{nil, 25_000}, {[]int{2}, 5_000}, {[]int{0, 2}, 15_000}, {[]int{1, 1}, 20_000}} {
		if got, err := r.FooterRowCount(c.rgs...); err != nil || got != c.want {
			t.Errorf("FooterRowCount(%v) = %d, %v; want %d", c.rgs, got, err, c.want)
		}
	}
	for _, i := range []int{-1, 3} {
		if _, err := r.FooterRowCount(i); !errors.Is(err, reader.ErrRowGroup) {
			t.Errorf("FooterRowCount(%d): %v, want ErrRowGroup", i, err)
		}
	}
}
