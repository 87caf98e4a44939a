package sopsql

import (
	"fmt"
	"math"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
	"github.com/apache/arrow-go/v18/arrow/float16"
	"github.com/duckdb/duckdb-go/v2/mapping"
)

// The writers of fixed-width DuckDB types: one copy where Arrow's layout
// is DuckDB's (integers, floats, DATE from date32, TIMESTAMP from
// timestamp[us], TIMESTAMP_NS, BIGINT from durations), one loop where it
// is not (booleans, float16, dates in ms, times, timestamps in other units,
// decimals, narrowed to DuckDB's internal width). DuckDB's layouts are
// those of duckdb.h (1.5.6): BOOLEAN one byte 0/1, DATE int32 days, TIME
// int64 microseconds, TIMESTAMP int64 microseconds, DECIMAL(p, s) an int16,
// int32, int64 or {uint64 lower; int64 upper} by p.

// fixedWriter returns the writer of dt if its DuckDB type is fixed-width.
func fixedWriter(dt arrow.DataType) vecWriter {
	switch dt := dt.(type) {
	case *arrow.BooleanType:
		return boolWriter
	case *arrow.Int8Type:
		return copyWriter[int8]
	case *arrow.Int16Type:
		return copyWriter[int16]
	case *arrow.Int32Type:
		return copyWriter[int32]
	case *arrow.Int64Type:
		return copyWriter[int64]
	case *arrow.Uint8Type:
		return copyWriter[uint8]
	case *arrow.Uint16Type:
		return copyWriter[uint16]
	case *arrow.Uint32Type:
		return copyWriter[uint32]
	case *arrow.Uint64Type:
		return copyWriter[uint64]
	case *arrow.Float16Type:
		return loopWriter(func(v float16.Num) (float32, error) { return v.Float32(), nil })
	case *arrow.Float32Type:
		return copyWriter[float32]
	case *arrow.Float64Type:
		return copyWriter[float64]
	case *arrow.Date32Type:
		return copyWriter[int32]
	case *arrow.Date64Type:
		// The Parquet column holds days; pqarrow writes ms / 86_400_000.
		return loopWriter(func(v arrow.Date64) (int32, error) {
			d := int64(v) / 86_400_000
			if d < math.MinInt32 || d > math.MaxInt32 {
				return 0, fmt.Errorf("%w: date %d ms beyond DuckDB's DATE", ErrData, v)
			}
			return int32(d), nil
		})
	case *arrow.Time32Type:
		mul := int64(1000) // milliseconds to microseconds
		if dt.Unit == arrow.Second {
			mul = 1_000_000
		}
		return loopWriter(func(v arrow.Time32) (int64, error) { return timeOfDay(int64(v) * mul), nil })
	case *arrow.Time64Type:
		if dt.Unit != arrow.Microsecond {
			return nil
		}
		return loopWriter(func(v arrow.Time64) (int64, error) { return timeOfDay(int64(v)), nil })
	case *arrow.TimestampType:
		return timestampWriter(dt)
	case *arrow.DurationType:
		return copyWriter[int64]
	case *arrow.Decimal128Type:
		return decimal128Writer(dt)
	case *arrow.Decimal256Type:
		if dt.Precision <= 38 {
			return nil // no DuckDB type (newConv)
		}
		// DOUBLE, as read_parquet reads it: the nearest double.
		scale := dt.Scale
		return loopWriter(func(v decimal256.Num) (float64, error) { return decimalToFloat(v.BigInt(), scale), nil })
	case *arrow.Decimal32Type:
		return narrowDecimalWriter[decimal.Decimal32](dt.Precision, dt.Scale)
	case *arrow.Decimal64Type:
		return narrowDecimalWriter[decimal.Decimal64](dt.Precision, dt.Scale)
	case *arrow.NullType:
		return func(_ *writeState, v mapping.Vector, arr arrow.Array, off, n int) error {
			_, _, err := writeValidity(v, arr, off, n)
			return err
		}
	}
	return nil
}

// copyWriter writes values whose Arrow and DuckDB layouts are the same.
func copyWriter[T any](_ *writeState, v mapping.Vector, arr arrow.Array, off, n int) error {
	src, err := values[T](arr, off, n)
	if err != nil {
		return err
	}
	copy(vecData[T](v, n), src)
	_, _, err = writeValidity(v, arr, off, n)
	return err
}

// loopWriter writes the values f converts, one by one, skipping null rows
// (whose Arrow values are unspecified), which get DuckDB's zero value.
func loopWriter[V, T any](f func(V) (T, error)) vecWriter {
	return func(_ *writeState, v mapping.Vector, arr arrow.Array, off, n int) error {
		src, err := values[V](arr, off, n)
		if err != nil {
			return err
		}
		mask, nulls, err := writeValidity(v, arr, off, n)
		if err != nil {
			return err
		}
		dst := vecData[T](v, n)
		var zero T
		for i, x := range src {
			if nulls && !valid(mask, i) {
				dst[i] = zero
				continue
			}
			if dst[i], err = f(x); err != nil {
				return err
			}
		}
		return nil
	}
}

func boolWriter(_ *writeState, v mapping.Vector, arr arrow.Array, off, n int) error {
	d := arr.Data()
	if n == 0 {
		return nil
	}
	bufs := d.Buffers()
	start := d.Offset() + off
	if off < 0 || off+n > d.Len() || len(bufs) < 2 || bufs[1] == nil || start < 0 || (start+n+7)/8 > bufs[1].Len() {
		return fmt.Errorf("%w: boolean array of %d values, elements [%d, %d) asked", ErrData, d.Len(), off, off+n)
	}
	bits := bufs[1].Bytes()
	dst := vecData[uint8](v, n)
	for i := range dst {
		dst[i] = 0
		if bitutil.BitIsSet(bits, start+i) {
			dst[i] = 1
		}
	}
	_, _, err := writeValidity(v, arr, off, n)
	return err
}

// dayMicros is a day in microseconds.
const dayMicros = 86_400_000_000

// timeOfDay reduces us to a time of day, as duckdb-go's TIME setter (the
// value-by-value path) does: a TIME beyond a day, which read_parquet keeps
// and DuckDB 1.5.6 then fails to cast to text (an internal error), reads
// as its time of day.
func timeOfDay(us int64) int64 { return (us%dayMicros + dayMicros) % dayMicros }

// The bounds duckdb-go puts on TIMESTAMP (years -290307 to 294246) and
// TIMESTAMP_NS (from 1678) values, which the value-by-value path meets.
var (
	tsSafeMin = time.Date(-290000, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	tsSafeMax = time.Date(294000, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	tsNSMin   = time.Date(1678, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
)

// timestampMicros checks that us is within DuckDB's TIMESTAMP range.
func timestampMicros(us int64) (int64, error) {
	if us < tsSafeMin || us > tsSafeMax {
		if y := time.UnixMicro(us).UTC().Year(); y < -290307 || y > 294246 {
			return 0, fmt.Errorf("%w: timestamp %d µs (year %d) beyond DuckDB's TIMESTAMP", ErrData, us, y)
		}
	}
	return us, nil
}

func timestampWriter(dt *arrow.TimestampType) vecWriter {
	if dt.TimeZone == "" && dt.Unit == arrow.Nanosecond {
		return loopWriter(func(v arrow.Timestamp) (int64, error) {
			if int64(v) < tsNSMin {
				return 0, fmt.Errorf("%w: timestamp %d ns before 1678, beyond DuckDB's TIMESTAMP_NS", ErrData, v)
			}
			return int64(v), nil
		})
	}
	unit := dt.Unit
	return loopWriter(func(v arrow.Timestamp) (int64, error) {
		us, err := micros(int64(v), unit)
		if err != nil {
			return 0, err
		}
		return timestampMicros(us)
	})
}

// decimalInt is the internal type of a DuckDB DECIMAL up to 18 digits.
type decimalInt interface{ ~int16 | ~int32 | ~int64 }

// pow10 returns 10^p for p <= 18.
func pow10(p int32) uint64 {
	l := uint64(1)
	for range p {
		l *= 10
	}
	return l
}

func decimal128Writer(dt *arrow.Decimal128Type) vecWriter {
	p := dt.Precision
	if p < 1 || p > 38 || dt.Scale < 0 || dt.Scale > p {
		return nil
	}
	if p > 18 {
		// HUGEINT {uint64 lower; int64 upper}: decimal128.Num's layout.
		limit := decimal128.GetScaleMultiplier(int(p))
		neg := limit.Negate()
		return loopWriter(func(v decimal128.Num) (decimal128.Num, error) {
			if !v.Less(limit) || !v.Greater(neg) {
				return v, fmt.Errorf("%w: %s has more than %d digits", ErrData, v.BigInt(), p)
			}
			return v, nil
		})
	}
	switch {
	case p <= 4:
		return loopWriter(narrow128[int16](p))
	case p <= 9:
		return loopWriter(narrow128[int32](p))
	}
	return loopWriter(narrow128[int64](p))
}

// narrowDecimalWriter writes the decimal32 or decimal64 values of
// precision p (a scan WithNarrowDecimals) in DuckDB's internal integer.
func narrowDecimalWriter[V decimal.Decimal32 | decimal.Decimal64](p, s int32) vecWriter {
	if p < 1 || p > 18 || s < 0 || s > p {
		return nil
	}
	var z V
	_, wide := any(z).(decimal.Decimal64)
	switch {
	case p <= 4:
		check := narrowInt[int16](p)
		return loopWriter(func(v V) (int16, error) { return check(int64(v)) })
	case p <= 9 && wide:
		check := narrowInt[int32](p)
		return loopWriter(func(v V) (int32, error) { return check(int64(v)) })
	}
	// DuckDB's internal integer is V's: one copy, then one loop that
	// checks the digits.
	limit := pow10(p)
	return func(_ *writeState, v mapping.Vector, arr arrow.Array, off, n int) error {
		src, err := values[V](arr, off, n)
		if err != nil {
			return err
		}
		mask, nulls, err := writeValidity(v, arr, off, n)
		if err != nil {
			return err
		}
		copy(vecData[V](v, n), src)
		// The least and greatest value first, without a branch a value
		// (min and max compile to conditional moves); a vector with a
		// value out of range (a null's slot may hold any value) is looked
		// at value by value.
		if len(src) == 0 {
			return nil
		}
		lo, hi := int64(src[0]), int64(src[0])
		for _, x := range src {
			lo, hi = min(lo, int64(x)), max(hi, int64(x))
		}
		if lo > -int64(limit) && hi < int64(limit) {
			return nil
		}
		for i, x := range src {
			// |x| < limit, with x + limit - 1 in [0, 2 limit - 2] as a uint64.
			if uint64(int64(x))+(limit-1) > 2*(limit-1) && (!nulls || valid(mask, i)) {
				return fmt.Errorf("%w: %d has more than %d digits", ErrData, int64(x), p)
			}
		}
		return nil
	}
}

// narrowInt returns the conversion of an unscaled decimal value of
// precision p <= 18 to DuckDB's internal integer T, refusing a value of
// more digits.
func narrowInt[T decimalInt](p int32) func(int64) (T, error) {
	limit := pow10(p)
	return func(v int64) (T, error) {
		abs := uint64(v)
		if v < 0 {
			abs = -abs
		}
		if abs >= limit {
			return 0, fmt.Errorf("%w: %d has more than %d digits", ErrData, v, p)
		}
		return T(v), nil
	}
}

// narrow128 returns the conversion of a decimal128 of precision p <= 18
// to DuckDB's internal integer T, refusing a value of more digits.
func narrow128[T decimalInt](p int32) func(decimal128.Num) (T, error) {
	limit := pow10(p)
	return func(v decimal128.Num) (T, error) {
		lo := int64(v.LowBits())
		abs := uint64(lo)
		if lo < 0 {
			abs = -abs
		}
		if v.HighBits() != lo>>63 || abs >= limit {
			return 0, fmt.Errorf("%w: %s has more than %d digits", ErrData, v.BigInt(), p)
		}
		return T(lo), nil
	}
}
