package pqtypes

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// ErrInt96 is the error of an INT96 value outside the range of its
// timestamp's unit.
var ErrInt96 = errors.New("INT96 timestamp outside the range of its unit")

// An INT96 column is a timestamp of Impala and Spark: 8 bytes of
// nanoseconds of the day and a 4-byte Julian day, little-endian. pqarrow
// reads it only as nanoseconds, which end in 1677 and 2262, and fails on
// any value outside (Spark writes 9999-12-31, and older dates). DuckDB
// reads it at microseconds (years ±290,000). So Apply has pqarrow read an
// INT96 column's 12-byte values untouched (int96Raw: pqarrow hands over
// its values buffer as it read it), and RetypeData converts them to the
// column's timestamp: microseconds, unless the stored Arrow schema says
// which unit the producer wrote (pyarrow writes nanoseconds), without a
// time zone. A value outside the unit's range fails with ErrInt96.

// julianUnixEpoch is the Julian day of 1970-01-01.
const julianUnixEpoch = 2_440_588

// int96Raw is the type pqarrow reads an INT96 column in: an int64 type
// whose values buffer holds the column's 12-byte values (pqarrow's
// zero-copy transfer of a primitive column keeps the buffer as read). It
// never leaves the package: Retype maps it to the column's timestamp.
type int96Raw struct{ arrow.ExtensionBase }

type int96RawArray struct{ array.ExtensionArrayBase }

func newInt96Raw() *int96Raw {
	return &int96Raw{arrow.ExtensionBase{Storage: arrow.PrimitiveTypes.Int64}}
}

func (*int96Raw) ArrayType() reflect.Type { return reflect.TypeOf(int96RawArray{}) }
func (*int96Raw) ExtensionName() string   { return "sop-pme.int96-raw" }
func (*int96Raw) Serialize() string       { return "" }
func (*int96Raw) Deserialize(arrow.DataType, string) (arrow.ExtensionType, error) {
	return nil, errors.New("pqtypes: int96-raw is not deserialized")
}
func (*int96Raw) ExtensionEquals(o arrow.ExtensionType) bool { _, ok := o.(*int96Raw); return ok }

// int96Time converts one INT96 value to a timestamp in unit.
func int96Time(b []byte, unit arrow.TimeUnit) (int64, bool) {
	nanos := binary.LittleEndian.Uint64(b)
	days := int64(int32(binary.LittleEndian.Uint32(b[8:]))) - julianUnixEpoch
	perDay := map[arrow.TimeUnit]int64{arrow.Second: 86_400, arrow.Millisecond: 86_400_000, arrow.Microsecond: 86_400_000_000, arrow.Nanosecond: 86_400_000_000_000}[unit]
	perUnit := uint64(map[arrow.TimeUnit]int64{arrow.Second: 1e9, arrow.Millisecond: 1e6, arrow.Microsecond: 1e3, arrow.Nanosecond: 1}[unit])
	if days > math.MaxInt64/perDay || days < math.MinInt64/perDay {
		return 0, false
	}
	hi, lo := days*perDay, nanos/perUnit
	if lo > math.MaxInt64 || hi > 0 && int64(lo) > math.MaxInt64-hi {
		return 0, false
	}
	return hi + int64(lo), true
}

// int96Data converts data, an int96Raw column, to a timestamp column of
// type t: the same validity, new values.
func int96Data(t *arrow.TimestampType, data arrow.ArrayData) (arrow.ArrayData, error) {
	bufs := data.Buffers()
	n, off := data.Len(), data.Offset()
	if len(bufs) < 2 || bufs[1] == nil || bufs[1].Len() < 12*(off+n) {
		return nil, fmt.Errorf("%w: the INT96 values of %d rows are not all there", ErrInt96, n)
	}
	raw := bufs[1].Bytes()
	var valid []byte
	if bufs[0] != nil && data.NullN() > 0 {
		valid = bufs[0].Bytes()
	}
	out := memory.NewResizableBuffer(memory.DefaultAllocator)
	out.Resize(8 * (off + n))
	vals := arrow.Int64Traits.CastFromBytes(out.Bytes())
	for i := off; i < off+n; i++ {
		if valid != nil && valid[i/8]&(1<<(i%8)) == 0 {
			vals[i] = 0
			continue
		}
		v, ok := int96Time(raw[12*i:], t.Unit)
		if !ok {
			out.Release()
			return nil, fmt.Errorf("%w: row %d does not fit %s", ErrInt96, i-off, t)
		}
		vals[i] = v
	}
	res := array.NewData(t, n, []*memory.Buffer{bufs[0], out}, nil, data.NullN(), off)
	out.Release()
	return res, nil
}
