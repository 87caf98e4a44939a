package writer

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestDictionaryPays checks the decision on columns like those of the
// cross-engine benchmark (bench/) and a few more: dictionary where values
// repeat, plain where they hardly do or where the dictionary would outgrow
// its page (the encoder would fall back anyway).
func TestDictionaryPays(t *testing.T) {
	t.Parallel()
	const rows = 122_880
	rng := rand.New(rand.NewPCG(1, 2))
	col := func(name string, fill func(b array.Builder, i int)) (string, arrow.RecordBatch) {
		var dt arrow.DataType
		switch name[:1] {
		case "i":
			dt = arrow.PrimitiveTypes.Int64
		case "f":
			dt = arrow.PrimitiveTypes.Float64
		case "d":
			dt = &arrow.Decimal128Type{Precision: 15, Scale: 2}
		default:
			dt = arrow.BinaryTypes.String
		}
		schema := arrow.NewSchema([]arrow.Field{{Name: name, Type: dt}}, nil)
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		defer b.Release()
		for i := range rows {
			fill(b.Field(0), i)
		}
		return name, b.NewRecordBatch()
	}
	for _, c := range []struct {
		want bool
		name string
		fill func(b array.Builder, i int)
	}{
		{false, "i-sequence", func(b array.Builder, i int) { b.(*array.Int64Builder).Append(int64(i)) }},
		{true, "i-small", func(b array.Builder, i int) { b.(*array.Int64Builder).Append(int64(i % 100)) }},
		{false, "f-random", func(b array.Builder, i int) { b.(*array.Float64Builder).Append(rng.NormFloat64()) }},
		{true, "f-prices", func(b array.Builder, i int) { b.(*array.Float64Builder).Append(float64(rng.IntN(500)) / 4) }},
		// TPC-H's lineitem: l_extendedprice hardly repeats, l_quantity
		// has 50 values.
		{false, "d-extendedprice", func(b array.Builder, i int) {
			b.(*array.Decimal128Builder).Append(decimal128.FromI64(rng.Int64N(10_000_000) + 90_000))
		}},
		{true, "d-quantity", func(b array.Builder, i int) {
			b.(*array.Decimal128Builder).Append(decimal128.FromI64(100 * (rng.Int64N(50) + 1)))
		}},
		{true, "s-categories", func(b array.Builder, i int) {
			b.(*array.StringBuilder).Append(fmt.Sprintf("category-%03d", rng.IntN(300)))
		}},
		{false, "s-50k-distinct", func(b array.Builder, i int) {
			b.(*array.StringBuilder).Append(fmt.Sprintf("customer-name-%09d", rng.IntN(50_000)))
		}},
		{false, "s-unique", func(b array.Builder, i int) {
			b.(*array.StringBuilder).Append(fmt.Sprintf("%016x%016x", rng.Uint64(), rng.Uint64()))
		}},
	} {
		name, rec := col(c.name, c.fill)
		pays, ok := dictionaryPays([]arrow.RecordBatch{rec}, 0, rows)
		rec.Release()
		if !ok || pays != c.want {
			t.Errorf("%s: pays %v (ok %v), want %v", name, pays, ok, c.want)
		}
	}
}

// TestEstimateDistinct: Chao's estimator on samples of known populations.
func TestEstimateDistinct(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	for _, pop := range []int{100, 5_000, 50_000} {
		const rows, sample = 200_000, dictSample
		freq := map[any]int{}
		for range sample {
			freq[rng.IntN(pop)]++
		}
		est := estimateDistinct(freq, sample, rows)
		if est < float64(pop)/2 || est > float64(pop)*2 {
			t.Errorf("population %d: estimated %.0f", pop, est)
		}
	}
}

// TestDictionaryChoicesApplied: by default the choices reach the encoder's
// properties, column by column; WithDictionary(true) and (false) override
// them for every column.
func TestDictionaryChoicesApplied(t *testing.T) {
	t.Parallel()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "seq", Type: arrow.PrimitiveTypes.Int64},
		{Name: "small", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range 50_000 {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.Int64Builder).Append(int64(i % 7))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	recs := []arrow.RecordBatch{rec}
	for _, c := range []struct {
		opts       []Option
		seq, small bool
	}{
		{nil, false, true},
		{[]Option{WithDictionary(true)}, true, true},
		{[]Option{WithDictionary(false)}, false, false},
	} {
		cfg := defaultConfig()
		for _, o := range c.opts {
			o(&cfg)
		}
		p := newPipeline(schema, cfg, nil)
		props := cfg.parquetProps(p.encodingChoices(recs)...)
		p.finish()
		if got := props.DictionaryEnabledFor("seq"); got != c.seq {
			t.Errorf("%d options: seq dictionary %v, want %v", len(c.opts), got, c.seq)
		}
		if got := props.DictionaryEnabledFor("small"); got != c.small {
			t.Errorf("%d options: small dictionary %v, want %v", len(c.opts), got, c.small)
		}
	}
}
