package writer

import (
	"math"
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
)

// dictSample is how many values of a column decide whether its row group
// is dictionary-encoded.
const dictSample = 8192

// dictionaryChoices decides, for each top-level column of a row group
// whose values it can sample (integers, floats, decimals, strings, binary), whether
// dictionary encoding pays, as DuckDB decides it: from the distinct values
// of a sample of the row group, estimate the dictionary-encoded size (the
// dictionary plus the bit-packed indices) against the plain size, and use
// the dictionary only where it is smaller. A column that does not pay is
// written plain from its first page, instead of being dictionary-encoded
// until the dictionary outgrows its page limit and then falling back: the
// hashing would be wasted work and the dictionary page wasted bytes. Other
// columns (nested, boolean, temporal and so on) keep the writer's default.
func dictionaryChoices(recs []arrow.RecordBatch) []parquet.WriterProperty {
	if len(recs) == 0 {
		return nil
	}
	var rows int64
	for _, r := range recs {
		rows += r.NumRows()
	}
	if rows < dictMinRows {
		return nil
	}
	var props []parquet.WriterProperty
	schema := recs[0].Schema()
	for c := range schema.NumFields() {
		pays, ok := dictionaryPays(recs, c, rows)
		if ok && !pays {
			props = append(props, parquet.WithDictionaryFor(schema.Field(c).Name, false))
		}
	}
	return props
}

// dictMinRows is the least rows a row group needs for the choice to be
// worth sampling: below it, whatever the encoding, the row group is small.
const dictMinRows = 1024

// dictionaryPays samples column c of recs, which hold rows rows. ok is
// false for a column it does not sample.
func dictionaryPays(recs []arrow.RecordBatch, c int, rows int64) (pays, ok bool) {
	var key func(arr arrow.Array, i int) any
	width := 0 // bytes per plain value; 0: variable (strings)
	switch recs[0].Column(c).DataType().ID() {
	case arrow.INT32, arrow.UINT32, arrow.DATE32, arrow.FLOAT32:
		width = 4
	case arrow.INT64, arrow.UINT64, arrow.FLOAT64, arrow.TIMESTAMP, arrow.DATE64:
		width = 8
	case arrow.STRING, arrow.BINARY, arrow.LARGE_STRING, arrow.LARGE_BINARY:
	case arrow.DECIMAL128, arrow.DECIMAL256:
		// A FIXED_LEN_BYTE_ARRAY of the fewest bytes that hold the
		// precision, as pqarrow writes it. Near-unique decimals (TPC-H's
		// l_extendedprice) dictionary-encoded until the dictionary
		// overflowed took a fifth of re-encoding lineitem, in arrow-go's
		// hash table of byte strings.
		p := recs[0].Column(c).DataType().(arrow.DecimalType).GetPrecision()
		width = int(math.Ceil((float64(p)*math.Log2(10) + 1) / 8))
	default:
		return false, false
	}
	key = func(arr arrow.Array, i int) any {
		switch a := arr.(type) {
		case *array.Int32:
			return a.Value(i)
		case *array.Uint32:
			return a.Value(i)
		case *array.Date32:
			return a.Value(i)
		case *array.Float32:
			return math.Float32bits(a.Value(i))
		case *array.Int64:
			return a.Value(i)
		case *array.Uint64:
			return a.Value(i)
		case *array.Float64:
			return math.Float64bits(a.Value(i))
		case *array.Timestamp:
			return a.Value(i)
		case *array.Date64:
			return a.Value(i)
		case *array.String:
			return a.Value(i)
		case *array.LargeString:
			return a.Value(i)
		case *array.Binary:
			return string(a.Value(i))
		case *array.LargeBinary:
			return string(a.Value(i))
		case *array.Decimal128:
			return a.Value(i)
		case *array.Decimal256:
			return a.Value(i)
		}
		return nil
	}
	seen := make(map[any]int, min(dictSample, rows))
	sampled, bytes := 0, 0
	for _, r := range recs {
		arr := r.Column(c)
		for i := 0; i < arr.Len() && sampled < dictSample; i++ {
			if arr.IsNull(i) {
				continue
			}
			k := key(arr, i)
			if k == nil {
				return false, false
			}
			if s, isString := k.(string); isString {
				bytes += len(s)
			}
			seen[k]++
			sampled++
		}
		if sampled >= dictSample {
			break
		}
	}
	if sampled == 0 {
		return true, true // all null: nothing to lose
	}
	w := float64(width)
	if width == 0 {
		w = float64(bytes)/float64(sampled) + 4 // plain BYTE_ARRAY: a 4-byte length each
	}
	distinct := estimateDistinct(seen, sampled, rows)
	dictBytes := distinct * w
	if dictBytes > float64(parquet.DefaultDictionaryPageSizeLimit) {
		// The encoder would fall back to plain once the dictionary page
		// outgrew its limit, after dictionary-encoding the first pages.
		return false, true
	}
	plain := float64(rows) * w
	dict := dictBytes + float64(rows)*float64(bits.Len64(uint64(distinct)))/8
	return dict < plain, true
}

// estimateDistinct estimates the distinct values of a column of rows rows
// from the frequencies of a sample of sampled values (Chao's estimator:
// the distinct values seen, plus f1²/2f2 for the unseen ones, where f1 and
// f2 count the values seen once and twice), bounded by the sample's
// distinct fraction taken for every row.
func estimateDistinct(freq map[any]int, sampled int, rows int64) float64 {
	d := float64(len(freq))
	if int64(sampled) >= rows {
		return d
	}
	var f1, f2 float64
	for _, n := range freq {
		switch n {
		case 1:
			f1++
		case 2:
			f2++
		}
	}
	est := d + f1*(f1-1)/2
	if f2 > 0 {
		est = d + f1*f1/(2*f2)
	}
	return min(est, d/float64(sampled)*float64(rows))
}
