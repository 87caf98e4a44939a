// Package benchdata builds the table the benchmarks of the writer and the
// reader share: a 1,000,000-row table of an int64, a float64, a
// 16–24-byte string, a timestamp, and a bool with 5 % nulls, every field
// with a Parquet field ID (1 to 5).
package benchdata

import (
	"math/rand/v2"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Schema returns the table's schema.
func Schema() *arrow.Schema {
	fid := func(id int) arrow.Metadata {
		return arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{strconv.Itoa(id)})
	}
	return arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Metadata: fid(1)},
		{Name: "x", Type: arrow.PrimitiveTypes.Float64, Metadata: fid(2)},
		{Name: "s", Type: arrow.BinaryTypes.String, Metadata: fid(3)},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Metadata: fid(4)},
		{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true, Metadata: fid(5)},
	}, nil)
}

// Record returns n deterministic rows of the table.
func Record(n int, seed uint64) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, Schema())
	defer b.Release()
	rng := rand.New(rand.NewPCG(seed, 99))
	ids := b.Field(0).(*array.Int64Builder)
	xs := b.Field(1).(*array.Float64Builder)
	ss := b.Field(2).(*array.StringBuilder)
	ts := b.Field(3).(*array.TimestampBuilder)
	oks := b.Field(4).(*array.BooleanBuilder)
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	var sb [24]byte
	for i := range n {
		ids.Append(int64(i))
		xs.Append(rng.NormFloat64())
		l := 16 + rng.IntN(9)
		for j := range l {
			sb[j] = letters[rng.IntN(len(letters))]
		}
		ss.Append(string(sb[:l]))
		ts.Append(arrow.Timestamp(1_700_000_000_000_000 + int64(i)*1000 + rng.Int64N(1000)))
		if rng.IntN(20) == 0 {
			oks.AppendNull()
		} else {
			oks.Append(rng.IntN(2) == 0)
		}
	}
	return b.NewRecordBatch()
}

// ArrowBytes returns the size of a record's Arrow buffers, for b.SetBytes.
func ArrowBytes(rec arrow.RecordBatch) int64 {
	var n int64
	for _, c := range rec.Columns() {
		for _, buf := range c.Data().Buffers() {
			if buf != nil {
				n += int64(buf.Len())
			}
		}
	}
	return n
}
