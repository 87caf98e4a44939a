//go:build duckdb

package sqlout

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/duckdb/duckdb-go/v2"
)

// This file renders values as duckdb-go scans them into the text DuckDB's
// CAST(... AS VARCHAR) gives them: what the DuckDB shell prints, and what
// the CSV and table output of a Result show. The tests compare it with
// DuckDB's own casts.

// valueText renders v, a value of type t, as DuckDB casts it to VARCHAR.
// NULL is "NULL".
func valueText(v any, t *sqlType) string {
	var b strings.Builder
	writeText(&b, v, t)
	return b.String()
}

func writeText(b *strings.Builder, v any, t *sqlType) {
	t = orNone(t)
	if writeParsedJSON(b, v, t) {
		return
	}
	switch v := v.(type) {
	case nil:
		b.WriteString("NULL")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case int8, int16, int32, int64, int, uint8, uint16, uint32, uint64:
		fmt.Fprint(b, v) // in decimal, as strconv writes it
	case float32:
		b.WriteString(floatText(float64(v), 32))
	case float64:
		b.WriteString(floatText(v, 64))
	case *big.Int:
		b.WriteString(v.String())
	case duckdb.Decimal:
		b.WriteString(decimalText(v))
	case string:
		b.WriteString(v)
	case []byte:
		if t.name == "UUID" && len(v) == 16 {
			u := duckdb.UUID(v)
			b.WriteString(u.String())
		} else {
			writeBlob(b, v)
		}
	case duckdb.UUID:
		b.WriteString(v.String())
	case time.Time:
		writeTime(b, v, t)
	case duckdb.Interval:
		writeInterval(b, v)
	case duckdb.Union:
		m := unionMember(t, v.Tag)
		writeText(b, v.Value, m)
	case []any, map[string]any, duckdb.OrderedMap:
		writeComposite(b, v, t, textEntries(b, t))
	default:
		fmt.Fprint(b, v)
	}
}

// orNone returns t, or a type without a name if t is nil (a value whose
// type is not known).
func orNone(t *sqlType) *sqlType {
	if t == nil {
		return &sqlType{}
	}
	return t
}

// writeParsedJSON writes v as its compact JSON text if t is DuckDB's JSON type
// (duckdb-go hands JSON over parsed), and reports whether it did.
func writeParsedJSON(w io.Writer, v any, t *sqlType) bool {
	if t.name != "JSON" || v == nil {
		return false
	}
	j, err := json.Marshal(v)
	if err != nil {
		return false
	}
	w.Write(j)
	return true
}

// entries says how writeComposite writes the entries of a list, a struct
// or a map: as DuckDB's text (textEntries) or as JSON (jsonEntries).
type entries struct {
	sep   string                  // between entries
	elem  func(v any, t *sqlType) // an element of a list
	field func(name string)       // the name of a struct's field, and what follows it
	key   func(k any, t *sqlType) // the key of a map's entry, and what follows it
	value func(v any, t *sqlType) // the value of a field or of a map's entry
}

// writeComposite writes v, a list, a struct or a map, of type t.
func writeComposite(b io.StringWriter, v any, t *sqlType, e entries) {
	switch v := v.(type) {
	case []any:
		writeSeq(b, "[", e.sep, "]", len(v), func(i int) { e.elem(v[i], t.elem) })
	case map[string]any:
		fields := structFields(v, t)
		writeSeq(b, "{", e.sep, "}", len(fields), func(i int) {
			e.field(fields[i].name)
			e.value(v[fields[i].name], fields[i].typ)
		})
	case duckdb.OrderedMap:
		keys, vals := v.Keys(), v.Values()
		writeSeq(b, "{", e.sep, "}", len(keys), func(i int) {
			e.key(keys[i], t.key)
			e.value(vals[i], t.value)
		})
	}
}

// textEntries writes the entries of a list, struct or map of type t as
// DuckDB's text does: "[a, b]", "{'name': v}", "{k=v}".
func textEntries(b *strings.Builder, t *sqlType) entries {
	elem := writeNested
	if t.name == "ARRAY" {
		elem = writeText // DuckDB quotes no element of an ARRAY
	}
	return entries{
		sep:  ", ",
		elem: func(v any, t *sqlType) { elem(b, v, t) },
		field: func(name string) {
			writeQuoted(b, name)
			b.WriteString(": ")
		},
		key: func(k any, t *sqlType) {
			writeNested(b, k, t)
			b.WriteByte('=')
		},
		value: func(v any, t *sqlType) { writeNested(b, v, t) },
	}
}

// writeSeq writes open, then each of n entries (entry(i)) separated by
// sep, then close: a list, a struct or a map, as text or as JSON.
func writeSeq(b io.StringWriter, open, sep, close string, n int, entry func(i int)) {
	b.WriteString(open)
	for i := range n {
		if i > 0 {
			b.WriteString(sep)
		}
		entry(i)
	}
	b.WriteString(close)
}

// writeNested renders an element of a list, struct or map: a scalar's text
// goes in single quotes where DuckDB would need them to parse it back.
func writeNested(b *strings.Builder, v any, t *sqlType) {
	if v == nil || t != nil && t.nested() {
		writeText(b, v, t)
		return
	}
	if _, isNested := v.([]any); isNested {
		writeText(b, v, t)
		return
	}
	switch v.(type) {
	case map[string]any, duckdb.OrderedMap:
		writeText(b, v, t)
		return
	}
	s := valueText(v, t)
	if needsQuotes(s) {
		writeQuoted(b, s)
	} else {
		b.WriteString(s)
	}
}

// needsQuotes is DuckDB's rule for a scalar inside a nested value: empty,
// "null" in any case, space at either end, or one of "'(),:=[]{}.
func needsQuotes(s string) bool {
	if s == "" || strings.EqualFold(s, "null") || isSpace(s[0]) || isSpace(s[len(s)-1]) {
		return true
	}
	return strings.ContainsAny(s, `"'(),:=[]{}`)
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func writeQuoted(b *strings.Builder, s string) {
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		if s[i] == '\'' || s[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('\'')
}

// floatText renders a float as DuckDB does: the shortest digits that read
// back as the same value, in positional notation from 1e-4 to below 1e16
// (with ".0" on whole numbers), otherwise in exponent notation with at
// least two exponent digits; "nan" (or "-nan" with the sign bit), "inf",
// "-inf".
//
// One difference remains for FLOAT: DuckDB 1.5.6 formats floats with the
// Grisu algorithm of its copy of {fmt}, which falls back, for a few values
// in a hundred, to the shortest digits of the float's value as a double
// ("359158.375" where the shortest float digits are "359158.38"). Both read
// back as the same FLOAT.
func floatText(f float64, bits int) string {
	switch {
	case math.IsNaN(f):
		if math.Signbit(f) {
			return "-nan"
		}
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	e := strconv.FormatFloat(f, 'e', -1, bits) // d.ddde±XX
	i := strings.LastIndexByte(e, 'e')
	exp, _ := strconv.Atoi(e[i+1:])
	if f != 0 && (exp < -4 || exp >= 16) {
		return e
	}
	s := strconv.FormatFloat(f, 'f', -1, bits)
	if !strings.ContainsRune(s, '.') {
		s += ".0"
	}
	return s
}

func decimalText(d duckdb.Decimal) string {
	if d.Value == nil {
		return "NULL"
	}
	digits := new(big.Int).Abs(d.Value).String()
	scale := int(d.Scale)
	if scale > 0 {
		if len(digits) <= scale {
			digits = strings.Repeat("0", scale-len(digits)+1) + digits
		}
		digits = digits[:len(digits)-scale] + "." + digits[len(digits)-scale:]
		if d.Width == d.Scale {
			digits = digits[1:] // DuckDB writes no integer digit then: ".5"
		}
	}
	if d.Value.Sign() < 0 {
		return "-" + digits
	}
	return digits
}

// writeBlob renders bytes as DuckDB renders a BLOB: printable ASCII as it
// is, except for quotes and the backslash, and every other byte as \xHH.
func writeBlob(b *strings.Builder, v []byte) {
	const digits = "0123456789ABCDEF"
	for _, c := range v {
		if c >= 32 && c <= 126 && c != '\\' && c != '\'' && c != '"' {
			b.WriteByte(c)
			continue
		}
		b.WriteString(`\x`)
		b.WriteByte(digits[c>>4])
		b.WriteByte(digits[c&15])
	}
}

// writeTime renders a DATE, TIME, TIMESTAMP (of any unit) or TIMESTAMP
// WITH TIME ZONE (in UTC, as Open sets the session's TimeZone) the way
// DuckDB does: fractions of a second without trailing zeros, years before
// 1 with "(BC)" after the date.
func writeTime(b *strings.Builder, v time.Time, t *sqlType) {
	v = v.UTC()
	switch t.name {
	case "DATE":
		writeDate(b, v)
		writeBC(b, v)
		return
	case "TIME":
		writeClock(b, v, 6)
		return
	case "TIMETZ":
		_, off := v.Zone()
		writeClock(b, v, 6)
		writeOffset(b, off)
		return
	}
	writeDate(b, v)
	writeBC(b, v)
	b.WriteByte(' ')
	prec := 6
	if t.name == "TIMESTAMP_NS" {
		prec = 9
	}
	writeClock(b, v, prec)
	if t.name == "TIMESTAMPTZ" {
		b.WriteString("+00")
	}
}

func writeDate(b *strings.Builder, v time.Time) {
	y := v.Year()
	if y <= 0 {
		y = 1 - y
	}
	fmt.Fprintf(b, "%04d-%02d-%02d", y, int(v.Month()), v.Day())
}

func writeBC(b *strings.Builder, v time.Time) {
	if v.Year() <= 0 {
		b.WriteString(" (BC)")
	}
}

func writeClock(b *strings.Builder, v time.Time, prec int) {
	fmt.Fprintf(b, "%02d:%02d:%02d", v.Hour(), v.Minute(), v.Second())
	if ns := v.Nanosecond(); ns != 0 {
		frac := fmt.Sprintf("%09d", ns)[:prec]
		if frac = strings.TrimRight(frac, "0"); frac != "" {
			b.WriteByte('.')
			b.WriteString(frac)
		}
	}
}

func writeOffset(b *strings.Builder, off int) {
	sign := byte('+')
	if off < 0 {
		sign, off = '-', -off
	}
	fmt.Fprintf(b, "%c%02d", sign, off/3600)
	if m := off % 3600 / 60; m != 0 {
		fmt.Fprintf(b, ":%02d", m)
	}
}

// writeInterval renders an interval as DuckDB does: "1 year 2 months 3
// days 04:05:06.789", the clock part only when not zero, "00:00:00" for
// the empty interval.
func writeInterval(b *strings.Builder, v duckdb.Interval) {
	parts := 0
	unit := func(n int64, name string) {
		if n == 0 {
			return
		}
		if parts > 0 {
			b.WriteByte(' ')
		}
		parts++
		b.WriteString(strconv.FormatInt(n, 10))
		b.WriteByte(' ')
		b.WriteString(name)
		if n != 1 && n != -1 {
			b.WriteByte('s')
		}
	}
	unit(int64(v.Months/12), "year")
	unit(int64(v.Months%12), "month")
	unit(int64(v.Days), "day")
	if v.Micros == 0 && parts > 0 {
		return
	}
	if parts > 0 {
		b.WriteByte(' ')
	}
	us := v.Micros
	if us < 0 {
		b.WriteByte('-')
		us = -us
	}
	fmt.Fprintf(b, "%02d:%02d:%02d", us/3_600_000_000, us/60_000_000%60, us/1_000_000%60)
	if frac := us % 1_000_000; frac != 0 {
		b.WriteByte('.')
		b.WriteString(strings.TrimRight(fmt.Sprintf("%06d", frac), "0"))
	}
}
