package benchdata

import (
	"math/rand/v2"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// CrossSchema returns the schema of the table of the cross-engine benchmark
// (bench/, DuckDB against sop-pme): an int64 sequence, a random float64, a 16–24-byte string with about
// 50,000 distinct values, a timestamp, a bool with 5 % nulls, and a
// ~100-byte near-unique string; field IDs 1 to 6.
func CrossSchema() *arrow.Schema {
	fid := func(id int) arrow.Metadata {
		return arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{strconv.Itoa(id)})
	}
	return arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Metadata: fid(1)},
		{Name: "x", Type: arrow.PrimitiveTypes.Float64, Metadata: fid(2)},
		{Name: "customer", Type: arrow.BinaryTypes.String, Metadata: fid(3)},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Metadata: fid(4)},
		{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true, Metadata: fid(5)},
		{Name: "note", Type: arrow.BinaryTypes.String, Metadata: fid(6)},
	}, nil)
}

// CrossRecord returns n deterministic rows of the cross-engine table.
func CrossRecord(n int, seed uint64) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, CrossSchema())
	defer b.Release()
	rng := rand.New(rand.NewPCG(seed, 7))
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	// The 50,000 customers, 16 to 24 characters each.
	customers := make([]string, 50_000)
	for i := range customers {
		s := make([]byte, 16+rng.IntN(9))
		for j := range s {
			s[j] = letters[rng.IntN(len(letters))]
		}
		customers[i] = string(s)
	}
	ids := b.Field(0).(*array.Int64Builder)
	xs := b.Field(1).(*array.Float64Builder)
	cs := b.Field(2).(*array.StringBuilder)
	ts := b.Field(3).(*array.TimestampBuilder)
	oks := b.Field(4).(*array.BooleanBuilder)
	notes := b.Field(5).(*array.StringBuilder)
	var note [110]byte
	for i := range n {
		ids.Append(int64(i))
		xs.Append(rng.NormFloat64() * 1000)
		cs.Append(customers[rng.IntN(len(customers))])
		ts.Append(arrow.Timestamp(1_700_000_000_000_000 + int64(i)*1000 + rng.Int64N(1000)))
		if rng.IntN(20) == 0 {
			oks.AppendNull()
		} else {
			oks.Append(rng.IntN(2) == 0)
		}
		l := 90 + rng.IntN(21)
		for j := range l {
			note[j] = letters[rng.IntN(len(letters))]
		}
		notes.Append(string(note[:l]))
	}
	return b.NewRecordBatch()
}
