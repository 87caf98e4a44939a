// Package rowjson writes Arrow rows as JSON text with exact values: the form
// of the test vectors' expected rows (testdata/vectors) and of the sop-pme
// command's NDJSON export, and the JSON text of nested values in its CSV
// export.
package rowjson

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// AppendRows appends to dst the rows of rec: one JSON object per row and
// line, its members the record's fields in schema
// order. Values are exact, so that two implementations agree byte for byte:
//
//   - null is null; booleans are true and false;
//   - integers are JSON numbers with every digit;
//   - floats are the shortest decimal that reads back to the same value
//     (Go's strconv 'g', -1), and "NaN", "+Inf", "-Inf" and "-0" as strings;
//   - decimals are strings of the unscaled value with the scale applied,
//     such as "-0.0001";
//   - strings are JSON strings; binary values are standard base64 strings;
//   - dates are "YYYY-MM-DD"; timestamps are RFC 3339 strings in UTC with
//     as many fraction digits as the unit has (3, 6 or 9), ending in "Z"
//     only when the type has a time zone (an instant);
//   - lists are arrays; structs are objects in field order; maps are arrays
//     of {"key": …, "value": …} in stored order;
//   - any other type is the string that arrow-go's ValueStr gives.
func AppendRows(dst []byte, rec arrow.RecordBatch) ([]byte, error) {
	fields := rec.Schema().Fields()
	for i := range int(rec.NumRows()) {
		dst = append(dst, '{')
		for c, f := range fields {
			if c > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, f.Name)
			dst = append(dst, ':')
			var err error
			if dst, err = AppendValue(dst, rec.Column(c), i); err != nil {
				return dst, fmt.Errorf("column %s: %w", f.Name, err)
			}
		}
		dst = append(dst, '}', '\n')
	}
	return dst, nil
}

func appendString(dst []byte, s string) []byte {
	b, _ := json.Marshal(s) // a string always marshals
	return append(dst, b...)
}

func appendFloat(dst []byte, v float64, bits int) []byte {
	switch {
	case math.IsNaN(v):
		return append(dst, `"NaN"`...)
	case math.IsInf(v, 1):
		return append(dst, `"+Inf"`...)
	case math.IsInf(v, -1):
		return append(dst, `"-Inf"`...)
	case v == 0 && math.Signbit(v):
		return append(dst, `"-0"`...)
	}
	return strconv.AppendFloat(dst, v, 'g', -1, bits)
}

var fraction = map[arrow.TimeUnit]string{
	arrow.Second: "", arrow.Millisecond: ".000", arrow.Microsecond: ".000000", arrow.Nanosecond: ".000000000",
}

// AppendValue appends to dst value i of arr as JSON, in the form AppendRows
// describes.
func AppendValue(dst []byte, arr arrow.Array, i int) ([]byte, error) {
	if arr.IsNull(i) {
		return append(dst, "null"...), nil
	}
	switch a := arr.(type) {
	case array.ExtensionArray:
		// An extension type (a GeoArrow geometry, a UUID, JSON) as its
		// storage.
		return AppendValue(dst, a.Storage(), i)
	case *array.Boolean:
		return strconv.AppendBool(dst, a.Value(i)), nil
	case *array.Int8:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10), nil
	case *array.Int16:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10), nil
	case *array.Int32:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10), nil
	case *array.Int64:
		return strconv.AppendInt(dst, a.Value(i), 10), nil
	case *array.Uint8:
		return strconv.AppendUint(dst, uint64(a.Value(i)), 10), nil
	case *array.Uint16:
		return strconv.AppendUint(dst, uint64(a.Value(i)), 10), nil
	case *array.Uint32:
		return strconv.AppendUint(dst, uint64(a.Value(i)), 10), nil
	case *array.Uint64:
		return strconv.AppendUint(dst, a.Value(i), 10), nil
	case *array.Float32:
		return appendFloat(dst, float64(a.Value(i)), 32), nil
	case *array.Float64:
		return appendFloat(dst, a.Value(i), 64), nil
	case *array.Decimal128:
		scale := a.DataType().(*arrow.Decimal128Type).Scale
		return appendString(dst, a.Value(i).ToString(scale)), nil
	case *array.String:
		return appendString(dst, a.Value(i)), nil
	case *array.LargeString:
		return appendString(dst, a.Value(i)), nil
	case *array.Binary:
		return appendString(dst, base64.StdEncoding.EncodeToString(a.Value(i))), nil
	case *array.LargeBinary:
		return appendString(dst, base64.StdEncoding.EncodeToString(a.Value(i))), nil
	case *array.FixedSizeBinary:
		return appendString(dst, base64.StdEncoding.EncodeToString(a.Value(i))), nil
	case *array.Date32:
		return appendString(dst, a.Value(i).ToTime().UTC().Format(time.DateOnly)), nil
	case *array.Timestamp:
		t := a.DataType().(*arrow.TimestampType)
		layout := "2006-01-02T15:04:05" + fraction[t.Unit]
		if t.TimeZone != "" {
			layout += "Z"
		}
		return appendString(dst, a.Value(i).ToTime(t.Unit).UTC().Format(layout)), nil
	case *array.Map:
		keys, items := a.Keys(), a.Items()
		start, end := a.ValueOffsets(i)
		dst = append(dst, '[')
		for j := start; j < end; j++ {
			if j > start {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"key":`...)
			var err error
			if dst, err = AppendValue(dst, keys, int(j)); err != nil {
				return dst, err
			}
			dst = append(dst, `,"value":`...)
			if dst, err = AppendValue(dst, items, int(j)); err != nil {
				return dst, err
			}
			dst = append(dst, '}')
		}
		return append(dst, ']'), nil
	case array.ListLike:
		start, end := a.ValueOffsets(i)
		values := a.ListValues()
		dst = append(dst, '[')
		for j := start; j < end; j++ {
			if j > start {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = AppendValue(dst, values, int(j)); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		dst = append(dst, '{')
		for f := range a.NumField() {
			if f > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, st.Field(f).Name)
			dst = append(dst, ':')
			var err error
			if dst, err = AppendValue(dst, a.Field(f), i); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	}
	return appendString(dst, arr.ValueStr(i)), nil
}
