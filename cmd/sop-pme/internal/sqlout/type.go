//go:build duckdb

package sqlout

import "strings"

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
