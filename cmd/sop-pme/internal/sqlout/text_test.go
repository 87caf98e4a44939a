//go:build duckdb

package sqlout

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/sovm/sop-pme/internal/testkit/testtables"
	"github.com/sovm/sop-pme/writer"
)

// textCases are expressions whose text the renderer must give as DuckDB's
// CAST(... AS VARCHAR) does, beyond the values of the test tables.
var textCases = []string{
	"1.0::DOUBLE", "0.1::DOUBLE", "1e16::DOUBLE", "9999999999999998.0::DOUBLE", "1e15::DOUBLE", "1.5e-5::DOUBLE",
	"0.0001::DOUBLE", "0.00012345::DOUBLE", "-0.0::DOUBLE", "0.0::DOUBLE", "'nan'::DOUBLE", "-('nan'::DOUBLE)", "'inf'::DOUBLE",
	"'-inf'::DOUBLE", "1e300::DOUBLE", "5e-324::DOUBLE", "1.7976931348623157e308::DOUBLE", "-123456.789e10::DOUBLE",
	"1.0::FLOAT", "0.1::FLOAT", "3.4028235e38::FLOAT", "1e-45::FLOAT", "16777216::FLOAT", "1e17::FLOAT", "1e15::FLOAT",
	"1e16::FLOAT", "-2.5e-5::FLOAT", "'nan'::FLOAT",
	"123.45::DECIMAL(9,2)", "-0.01::DECIMAL(9,2)", "0::DECIMAL(9,2)", "-5::DECIMAL(3,0)", "0.5::DECIMAL(1,1)",
	"-12345678901234567890.123456789012345678::DECIMAL(38,18)",
	"170141183460469231731687303715884105727::HUGEINT", "-170141183460469231731687303715884105727::HUGEINT - 1",
	"340282366920938463463374607431768211455::UHUGEINT",
	"'c2d3e6b0-1f0c-4e8c-9a2c-0d1e2f3a4b5c'::UUID", "['c2d3e6b0-1f0c-4e8c-9a2c-0d1e2f3a4b5c'::UUID]",
	"'\\xFF\\x00abc\\x22\\x27\\x5C\\x7F\\x80 ~'::BLOB", "['\\x2C'::BLOB, ''::BLOB, 'null'::BLOB]",
	"'0044-03-15 (BC)'::DATE", "'0001-01-01'::DATE", "'9999-12-31'::DATE", "'12345-01-01'::DATE",
	"make_timestamp(-43, 3, 15, 10, 0, 1.5)", "'2023-11-14 22:13:20.100200'::TIMESTAMP", "'1969-12-31 23:59:59.999999'::TIMESTAMP",
	"'2023-11-14 22:13:20.123456789'::TIMESTAMP_NS", "'2023-11-14 22:13:20.1'::TIMESTAMP_NS", "'1677-09-22 00:00:00.000000001'::TIMESTAMP_NS",
	"'2023-11-14 22:13:20.5'::TIMESTAMP_MS", "'2023-11-14 22:13:20'::TIMESTAMP_S",
	"'2023-11-14 22:13:20.123456+05:30'::TIMESTAMPTZ", "'12:34:56.5'::TIME", "'00:00:00'::TIME", "'23:59:59.999999'::TIME",
	"INTERVAL 1 DAY", "INTERVAL '1 year 2 months 3 days 04:05:06.789'", "INTERVAL 0 DAY", "-INTERVAL 90 MINUTE",
	"INTERVAL '-1 year'", "INTERVAL '14 months'", "INTERVAL '-2 days 1 second'", "INTERVAL '100 hours'",
	"['a', 'b''c', NULL, '', 'null', 'NuLL', ' x', 'y ', 'x,y', 'a:b', 'a=b', '(', ')', '[', ']', '{', '}', '\"', 'a\\b', 'tab' || chr(9), chr(10), 'ä b']",
	"{'a b''c': 'x\\y', 'k': NULL, 'l': [1, NULL], 'm': MAP {'a=b': 'c,d', 'e': ''}}",
	"[[1, 2], [], NULL, [NULL]]", "[TIMESTAMP '2023-01-01 10:00:00', NULL]", "MAP {TIME '10:00:00': DATE '2020-01-01'}",
	"[INTERVAL 1 DAY]", "[1.5::DECIMAL(4,1)]", "[0.1::DOUBLE, 'nan'::DOUBLE, 1e20::DOUBLE]", "[true, false]",
	"{'a': [{'b': 'x,y'}]}", "MAP {}", "[]", "['x', 'y,z']::VARCHAR[2]", "[1, 2, 3]::INTEGER[3]",
	"union_value(num := 2)::UNION(num INTEGER, s VARCHAR)", "union_value(s := 'a b')::UNION(num INTEGER, s VARCHAR)",
	"[union_value(s := 'a,b')::UNION(num INTEGER, s VARCHAR)]", "42::TINYINT", "-1::SMALLINT", "255::UTINYINT",
	"'\"x\"'::JSON", "'{\"a\":[1,2.5,\"x\"]}'::JSON", "'101'::BIT", "true", "NULL",
	"{'x': {'y': {'z': ''}}}",
}

// TestValueText compares the text of every value of the test tables, and
// of textCases, with DuckDB's own CAST(... AS VARCHAR).
func TestValueText(t *testing.T) {
	t.Parallel()
	db, st := newDB(t)
	checkText := func(t *testing.T, from string) {
		t.Helper()
		cols := query(t, db, "SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM "+from+")").Rows
		casts := make([]string, len(cols))
		for i, c := range cols {
			casts[i] = fmt.Sprintf("CAST(%s AS VARCHAR)", quoteIdent(c[0].(string)))
		}
		res, err := db.Query(context.Background(), "SELECT * FROM "+from)
		if err != nil {
			t.Fatal(err)
		}
		texts := query(t, db, "SELECT "+strings.Join(casts, ", ")+" FROM "+from).Rows
		if len(texts) != len(res.Rows) {
			t.Fatalf("%d rows of values, %d of text", len(res.Rows), len(texts))
		}
		bad := 0
		for i, row := range res.Rows {
			for j, v := range row {
				want := "NULL"
				if texts[i][j] != nil {
					want = texts[i][j].(string)
				}
				got := valueText(v, parseType(res.Columns[j].Type))
				if got != want && res.Columns[j].Type == "FLOAT" && sameFloat32(got, want) {
					continue // see floatText
				}
				if got != want {
					if bad++; bad <= 10 {
						t.Errorf("row %d column %s (%s): %q, DuckDB %q (value %#v)", i, res.Columns[j].Name, res.Columns[j].Type, got, want, v)
					}
				}
			}
		}
	}
	rec := testtables.Record(testtables.AllTypes(), 1000, 11)
	defer rec.Release()
	extra := testtables.Record(testtables.ExtraTypes(), 1000, 12)
	defer extra.Release()
	for name, r := range map[string]arrow.RecordBatch{"all-types": rec, "extra-types": extra} {
		id := put(t, st, r, writer.WithRowGroupRows(400))
		t.Run(name, func(t *testing.T) { checkText(t, sopScan(id)) })
	}
	t.Run("literals", func(t *testing.T) {
		for _, e := range textCases {
			checkText(t, "(SELECT "+e+" AS v)")
		}
	})
}

// TestParseType parses the type names duckdb-go gives.
func TestParseType(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"BIGINT", "BIGINT"},
		{"DECIMAL(9,2)", "DECIMAL"},
		{"TIMESTAMP WITH TIME ZONE", "TIMESTAMP WITH TIME ZONE"},
		{"VARCHAR[]", "LIST<VARCHAR>"},
		{"INTEGER[3][]", "LIST<ARRAY<INTEGER>>"},
		{`STRUCT(a BIGINT, "b c" VARCHAR[], "x""y" DECIMAL(4,1))`, "STRUCT{a:BIGINT b c:LIST<VARCHAR> x\"y:DECIMAL}"},
		{"MAP(VARCHAR, STRUCT(a MAP(INTEGER, DOUBLE)))", "MAP<VARCHAR,STRUCT{a:MAP<INTEGER,DOUBLE>}>"},
		{"UNION(num INTEGER, s VARCHAR)", "UNION{num:INTEGER s:VARCHAR}"},
		{"STRUCT(", "STRUCT("},
	} {
		if got := describeType(parseType(c.in)); got != c.want {
			t.Errorf("parseType(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}

func describeType(t *sqlType) string {
	switch t.name {
	case "LIST", "ARRAY":
		return t.name + "<" + describeType(t.elem) + ">"
	case "MAP":
		if t.key != nil {
			return "MAP<" + describeType(t.key) + "," + describeType(t.value) + ">"
		}
	case "STRUCT", "UNION":
		if t.fields != nil {
			parts := make([]string, len(t.fields))
			for i, f := range t.fields {
				parts[i] = f.name + ":" + describeType(f.typ)
			}
			return t.name + "{" + strings.Join(parts, " ") + "}"
		}
	}
	return t.name
}

// sameFloat32 reports whether two texts of a FLOAT read back as the same
// value.
func sameFloat32(a, b string) bool {
	x, err1 := strconv.ParseFloat(a, 32)
	y, err2 := strconv.ParseFloat(b, 32)
	return err1 == nil && err2 == nil && float32(x) == float32(y)
}
