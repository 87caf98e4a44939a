package deltabp

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
)

// FuzzWalk: Walk never panics nor reads past b, and a stream it accepts
// yields exactly its header's count of values, at most the maximum asked.
// The seeds are arrow-go's pages (testdata/fuzz/FuzzWalk holds more).
func FuzzWalk(f *testing.F) {
	b := array.NewInt64Builder(memory.DefaultAllocator)
	for i := range 300 {
		b.Append(int64(i*i) - 7000)
	}
	col := b.NewArray()
	b.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)
	rec := array.NewRecordBatch(schema, []arrow.Array{col}, int64(col.Len()))
	f.Add(firstPage(f, rec, parquet.Encodings.DeltaBinaryPacked), int64(300))
	rec.Release()
	col.Release()
	f.Fuzz(func(t *testing.T, b []byte, max int64) {
		max = min(max, 1<<20)
		var n int64
		h, used, err := Walk(b, max, func(int64) { n++ })
		if err != nil {
			return
		}
		if n != h.Total || n > max || used > len(b) || used < 0 {
			t.Fatalf("%d values of %d (max %d), %d bytes of %d", n, h.Total, max, used, len(b))
		}
	})
}
