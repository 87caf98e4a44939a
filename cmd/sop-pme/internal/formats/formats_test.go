package formats_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/sovm/sop-pme/cmd/sop-pme/internal/formats"
	"github.com/sovm/sop-pme/internal/rowjson"
	"github.com/sovm/sop-pme/internal/testkit/testtables"
)

// writeFile writes rec to a file in format f, in batches of 100 rows.
func writeFile(t *testing.T, f formats.Format, rec arrow.RecordBatch) string {
	t.Helper()
	var buf bytes.Buffer
	out, err := formats.NewOutput(&buf, f, rec.Schema())
	if err != nil {
		t.Fatal(err)
	}
	for off := int64(0); off < rec.NumRows(); off += 100 {
		part := rec.NewSlice(off, min(off+100, rec.NumRows()))
		if err := out.Write(part); err != nil {
			t.Fatal(err)
		}
		part.Release()
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "table."+string(f))
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// readRows opens path and returns its schema and rows as JSON text.
func readRows(t *testing.T, path string, f formats.Format) (*arrow.Schema, string) {
	t.Helper()
	in, err := formats.Open(context.Background(), path, formats.InputOptions{Format: f, BatchRows: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var rows []byte
	for in.Next() {
		if rows, err = rowjson.AppendRows(rows, in.RecordBatch()); err != nil {
			t.Fatal(err)
		}
	}
	if err := in.Err(); err != nil {
		t.Fatal(err)
	}
	return in.Schema(), string(rows)
}

// TestRoundTrip writes every type of the test table in each binary format
// and reads it back: the same rows, the same types, and (Parquet) the same
// field IDs. Detection by magic bytes needs no --format.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	rec := testtables.Record(testtables.AllTypes(), 500, 3)
	defer rec.Release()
	want, err := rowjson.AppendRows(nil, rec)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []formats.Format{formats.Parquet, formats.ArrowFile, formats.ArrowStream} {
		t.Run(string(f), func(t *testing.T) {
			path := writeFile(t, f, rec)
			schema, got := readRows(t, path, "")
			if got != string(want) {
				t.Fatalf("rows differ:\n got %.400s\nwant %.400s", got, want)
			}
			for i, fd := range rec.Schema().Fields() {
				if !arrow.TypeEqual(schema.Field(i).Type, fd.Type) {
					t.Errorf("%s: type %v, want %v", fd.Name, schema.Field(i).Type, fd.Type)
				}
			}
			if f == formats.Parquet {
				for i, fd := range rec.Schema().Fields() {
					w, _ := fd.Metadata.GetValue(testtables.FieldIDKey)
					g, _ := schema.Field(i).Metadata.GetValue(testtables.FieldIDKey)
					if g != w {
						t.Errorf("%s: field ID %q, want %q", fd.Name, g, w)
					}
				}
			}
		})
	}
}

// TestNDJSON reads back what NDJSON output writes, for the types JSON
// carries: the same rows, exact, with their types inferred.
func TestNDJSON(t *testing.T) {
	t.Parallel()
	all := testtables.AllTypes().Fields()
	pick := func(names ...string) []arrow.Field {
		var out []arrow.Field
		for _, f := range all {
			for _, n := range names {
				if f.Name == n {
					out = append(out, f)
				}
			}
		}
		return out
	}
	rec := testtables.Record(arrow.NewSchema(pick("i64", "b", "s", "l_i64", "st"), nil), 300, 5)
	defer rec.Release()
	want, err := rowjson.AppendRows(nil, rec)
	if err != nil {
		t.Fatal(err)
	}
	schema, got := readRows(t, writeFile(t, formats.NDJSON, rec), "")
	if got != string(want) {
		t.Fatalf("rows differ:\n got %.400s\nwant %.400s", got, want)
	}
	if s := schema.String(); !strings.Contains(s, "i64: type=int64") || !strings.Contains(s, "l_i64: type=list<item: int64") || !strings.Contains(s, "st: type=struct<a: int64 nullable, b: utf8 nullable>") {
		t.Fatalf("inferred schema:\n%s", s)
	}
}

func TestCSV(t *testing.T) {
	t.Parallel()
	const in = "id,x,name,ok,day,at,atz\n" +
		"1,1.5,a,true,2026-01-02,2026-01-02 03:04:05,2026-01-02T03:04:05Z\n" +
		"2,,\"b, c\",false,,,\n" +
		"3,-2,,true,2026-12-31,2026-12-31 23:59:59.5,2026-12-31T23:59:59.5+01:00\n"
	path := filepath.Join(t.TempDir(), "t.csv")
	os.WriteFile(path, []byte(in), 0o600)
	schema, rows := readRows(t, path, "")
	var types []string
	for _, f := range schema.Fields() {
		types = append(types, f.Type.String())
	}
	if got := strings.Join(types, " "); got != "int64 float64 utf8 bool date32 timestamp[us] timestamp[us, tz=UTC]" {
		t.Fatalf("types: %s", got)
	}
	const want = `{"id":1,"x":1.5,"name":"a","ok":true,"day":"2026-01-02","at":"2026-01-02T03:04:05.000000","atz":"2026-01-02T03:04:05.000000Z"}
{"id":2,"x":null,"name":"b, c","ok":false,"day":null,"at":null,"atz":null}
{"id":3,"x":-2,"name":null,"ok":true,"day":"2026-12-31","at":"2026-12-31T23:59:59.500000","atz":"2026-12-31T22:59:59.500000Z"}
`
	if rows != want {
		t.Fatalf("rows:\n%s\nwant\n%s", rows, want)
	}

	// Nested columns go out as JSON text.
	rec := testtables.Record(arrow.NewSchema(testtables.AllTypes().Fields()[23:27], nil), 3, 1)
	defer rec.Release()
	var buf bytes.Buffer
	out, _ := formats.NewOutput(&buf, formats.CSV, rec.Schema())
	if err := out.Write(rec); err != nil {
		t.Fatal(err)
	}
	out.Close()
	if !strings.Contains(buf.String(), `"{""a"":`) || !strings.Contains(buf.String(), `"[{""key"":`) {
		t.Fatalf("nested values are not JSON text:\n%s", buf.String())
	}
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(s), 0o600)
		return p
	}
	for name, c := range map[string]struct {
		path string
		want string
	}{
		"ragged CSV":      {write("r.csv", "a,b\n1,2\n3\n"), "line 3 has a different number of fields"},
		"ragged CSV late": {write("r2.csv", "a,b\n"+strings.Repeat("1,2\n", formats.SampleRows+5)+"3\n"), "different number of fields"},
		"bad type late":   {write("t.csv", "a\n"+strings.Repeat("1\n", formats.SampleRows+5)+"x\n"), "x"},
		"corrupt parquet": {write("c.parquet", "PAR1 not really"), "not a readable Parquet file"},
		"encrypted":       {write("e.parquet", "PARE...."), "encrypted Parquet"},
		"unknown":         {write("u.bin", "hello"), "give --format"},
		"mixed json":      {write("m.ndjson", "{\"a\":1}\n{\"a\":\"x\"}\n"), "line 2: a: a string where other rows have integers"},
		"json not object": {write("n.ndjson", "[1]\n"), "line 1 is not a JSON object"},
	} {
		t.Run(name, func(t *testing.T) {
			in, err := formats.Open(context.Background(), c.path, formats.InputOptions{})
			if err == nil {
				for in.Next() {
				}
				err = in.Err()
				in.Close()
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			if !errors.Is(err, formats.ErrFormat) {
				t.Errorf("error %v does not match ErrFormat", err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is more than one line: %q", err)
			}
		})
	}
	if _, err := formats.Open(context.Background(), filepath.Join(dir, "missing.csv"), formats.InputOptions{}); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}
