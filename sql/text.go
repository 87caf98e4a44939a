package sopsql

import (
	"encoding/json"
	"fmt"
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

// sqlType is a DuckDB type as duckdb-go names it (ColumnType.DatabaseTypeName):
// "BIGINT", "DECIMAL(9,2)", "TIMESTAMPTZ", "VARCHAR[]", "INTEGER[3]",
// "STRUCT(a BIGINT, \"b c\" VARCHAR)", "MAP(VARCHAR, BIGINT)", "UNION(...)".
type sqlType struct {
	name   string     // upper case, without arguments: "DECIMAL", "LIST", "ARRAY", "STRUCT", ...
	elem   *sqlType   // LIST and ARRAY
	fields []sqlField // STRUCT and UNION
	key    *sqlType   // MAP
	value  *sqlType   // MAP
	text   string     // as given
}

type sqlField struct {
	name string
	typ  *sqlType
}

// parseType parses a type name; what it does not understand becomes a
// type of that name without children.
func parseType(s string) *sqlType {
	p := typeParser{s: s}
	t := p.parse()
	if t == nil || p.pos != len(s) {
		return &sqlType{name: strings.ToUpper(s), text: s}
	}
	return t
}

type typeParser struct {
	s   string
	pos int
}

func (p *typeParser) skipSpace() {
	for p.pos < len(p.s) && p.s[p.pos] == ' ' {
		p.pos++
	}
}

func (p *typeParser) parse() *sqlType {
	p.skipSpace()
	start := p.pos
	for p.pos < len(p.s) && (p.s[p.pos] == '_' || p.s[p.pos] == ' ' && p.wordContinues() ||
		'A' <= p.s[p.pos] && p.s[p.pos] <= 'Z' || 'a' <= p.s[p.pos] && p.s[p.pos] <= 'z' || '0' <= p.s[p.pos] && p.s[p.pos] <= '9') {
		p.pos++
	}
	if p.pos == start {
		return nil
	}
	t := &sqlType{name: strings.ToUpper(p.s[start:p.pos])}
	if p.pos < len(p.s) && p.s[p.pos] == '(' {
		p.pos++
		switch t.name {
		case "STRUCT", "UNION":
			for {
				name, ok := p.fieldName()
				if !ok {
					return nil
				}
				ft := p.parse()
				if ft == nil {
					return nil
				}
				t.fields = append(t.fields, sqlField{name, ft})
				if !p.next(')') {
					return nil
				}
				if p.s[p.pos-1] == ')' {
					break
				}
			}
		case "MAP":
			if t.key = p.parse(); t.key == nil || !p.next(')') || p.s[p.pos-1] != ',' {
				return nil
			}
			if t.value = p.parse(); t.value == nil || !p.next(')') || p.s[p.pos-1] != ')' {
				return nil
			}
		default: // DECIMAL(p,s) and the like: keep the arguments in the text
			end := strings.IndexByte(p.s[p.pos:], ')')
			if end < 0 {
				return nil
			}
			p.pos += end + 1
		}
	}
	for p.pos < len(p.s) && p.s[p.pos] == '[' {
		end := strings.IndexByte(p.s[p.pos:], ']')
		if end < 0 {
			return nil
		}
		name := "LIST"
		if end > 1 {
			name = "ARRAY"
		}
		p.pos += end + 1
		t = &sqlType{name: name, elem: t}
	}
	t.text = p.s[start:p.pos]
	return t
}

// wordContinues reports whether the space at p.pos is inside a type name
// such as "TIMESTAMP WITH TIME ZONE" rather than after a field name.
func (p *typeParser) wordContinues() bool {
	rest := p.s[p.pos+1:]
	for _, w := range []string{"WITH ", "TIME ", "ZONE", "PRECISION"} {
		if strings.HasPrefix(strings.ToUpper(rest), w) {
			return true
		}
	}
	return false
}

// fieldName reads a struct field name, bare or in double quotes.
func (p *typeParser) fieldName() (string, bool) {
	p.skipSpace()
	if p.pos < len(p.s) && p.s[p.pos] == '"' {
		var b strings.Builder
		for p.pos++; p.pos < len(p.s); p.pos++ {
			if p.s[p.pos] == '"' {
				if p.pos+1 < len(p.s) && p.s[p.pos+1] == '"' {
					b.WriteByte('"')
					p.pos++
					continue
				}
				p.pos++
				return b.String(), true
			}
			b.WriteByte(p.s[p.pos])
		}
		return "", false
	}
	end := strings.IndexByte(p.s[p.pos:], ' ')
	if end <= 0 {
		return "", false
	}
	name := p.s[p.pos : p.pos+end]
	p.pos += end
	return name, true
}

// next skips spaces and one ',' or close, reporting whether it found one.
func (p *typeParser) next(close byte) bool {
	p.skipSpace()
	if p.pos < len(p.s) && (p.s[p.pos] == ',' || p.s[p.pos] == close) {
		p.pos++
		return true
	}
	return false
}

func (t *sqlType) nested() bool {
	switch t.name {
	case "LIST", "ARRAY", "STRUCT", "MAP", "UNION":
		return true
	}
	return false
}

// numeric reports whether DuckDB's shell right-aligns the type.
func (t *sqlType) numeric() bool {
	switch t.name {
	case "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
		"UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "DECIMAL", "BIGNUM":
		return true
	}
	return false
}

// display is the type as DuckDB's shell shows it under a column name.
func (t *sqlType) display() string {
	switch t.name {
	case "TINYINT":
		return "int8"
	case "SMALLINT":
		return "int16"
	case "INTEGER":
		return "int32"
	case "BIGINT":
		return "int64"
	case "HUGEINT":
		return "int128"
	case "UTINYINT":
		return "uint8"
	case "USMALLINT":
		return "uint16"
	case "UINTEGER":
		return "uint32"
	case "UBIGINT":
		return "uint64"
	case "UHUGEINT":
		return "uint128"
	case "TIMESTAMPTZ":
		return "timestamp with time zone"
	case "TIMETZ":
		return "time with time zone"
	case "LIST":
		return t.elem.display() + "[]"
	}
	return strings.ToLower(t.text)
}

// valueText renders v, a value of type t, as DuckDB casts it to VARCHAR.
// NULL is "NULL".
func valueText(v any, t *sqlType) string {
	var b strings.Builder
	writeText(&b, v, t)
	return b.String()
}

func writeText(b *strings.Builder, v any, t *sqlType) {
	if t == nil {
		t = &sqlType{}
	}
	if t.name == "JSON" && v != nil {
		// duckdb-go hands JSON over parsed; this is its compact text.
		if j, err := json.Marshal(v); err == nil {
			b.Write(j)
			return
		}
	}
	switch v := v.(type) {
	case nil:
		b.WriteString("NULL")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case int8:
		b.WriteString(strconv.FormatInt(int64(v), 10))
	case int16:
		b.WriteString(strconv.FormatInt(int64(v), 10))
	case int32:
		b.WriteString(strconv.FormatInt(int64(v), 10))
	case int64:
		b.WriteString(strconv.FormatInt(v, 10))
	case int:
		b.WriteString(strconv.Itoa(v))
	case uint8:
		b.WriteString(strconv.FormatUint(uint64(v), 10))
	case uint16:
		b.WriteString(strconv.FormatUint(uint64(v), 10))
	case uint32:
		b.WriteString(strconv.FormatUint(uint64(v), 10))
	case uint64:
		b.WriteString(strconv.FormatUint(v, 10))
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
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			if t.name == "ARRAY" {
				writeText(b, e, t.elem) // DuckDB quotes no element of an ARRAY
			} else {
				writeNested(b, e, t.elem)
			}
		}
		b.WriteByte(']')
	case map[string]any:
		b.WriteByte('{')
		for i, f := range structFields(v, t) {
			if i > 0 {
				b.WriteString(", ")
			}
			writeQuoted(b, f.name)
			b.WriteString(": ")
			writeNested(b, v[f.name], f.typ)
		}
		b.WriteByte('}')
	case duckdb.OrderedMap:
		b.WriteByte('{')
		keys, vals := v.Keys(), v.Values()
		for i := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			writeNested(b, keys[i], t.key)
			b.WriteByte('=')
			writeNested(b, vals[i], t.value)
		}
		b.WriteByte('}')
	default:
		fmt.Fprint(b, v)
	}
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

// structFields returns the fields of a struct value in the order of its
// type, or sorted by name if the type does not list them.
func structFields(v map[string]any, t *sqlType) []sqlField {
	if len(t.fields) == len(v) {
		ok := true
		for _, f := range t.fields {
			if _, in := v[f.name]; !in {
				ok = false
				break
			}
		}
		if ok {
			return t.fields
		}
	}
	fields := make([]sqlField, 0, len(v))
	for name := range v {
		fields = append(fields, sqlField{name: name})
	}
	sortFields(fields)
	return fields
}

func sortFields(f []sqlField) {
	for i := 1; i < len(f); i++ {
		for j := i; j > 0 && f[j].name < f[j-1].name; j-- {
			f[j], f[j-1] = f[j-1], f[j]
		}
	}
}

func unionMember(t *sqlType, tag string) *sqlType {
	for _, f := range t.fields {
		if f.name == tag {
			return f.typ
		}
	}
	return nil
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
