package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/sovm/sop-pme/cmd/sop-pme/internal/formats"
	"github.com/sovm/sop-pme/internal/rowjson"
	"github.com/sovm/sop-pme/internal/testkit/testtables"
	"github.com/sovm/sop-pme/table"
	"github.com/sovm/sop-pme/writer"
)

// writeTable writes rec to dir/name in format f, 100 rows a batch.
func writeTable(t *testing.T, dir, name string, f formats.Format, rec arrow.RecordBatch) string {
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
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// readTable reads the table at path: its schema, and its rows as exact
// JSON text (package rowjson).
func readTable(t *testing.T, path string, f formats.Format) (*arrow.Schema, string) {
	t.Helper()
	in, err := formats.Open(context.Background(), path, formats.InputOptions{Format: f})
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

// fieldIDList lists the field IDs of a schema, nested fields included, in
// depth-first order, as "path=id".
func fieldIDList(s *arrow.Schema) string {
	var out []string
	var walk func(prefix string, f arrow.Field)
	walk = func(prefix string, f arrow.Field) {
		p := prefix + f.Name
		v, _ := f.Metadata.GetValue(writer.FieldIDKey)
		out = append(out, p+"="+v)
		for _, c := range table.Children(f.Type) {
			walk(p+".", c)
		}
	}
	for _, f := range s.Fields() {
		walk("", f)
	}
	return strings.Join(out, " ")
}

// TestRoundTrip: import → ls → export gives back the input, in every format:
// Parquet and Arrow IPC with the same types, values (compared exactly, as
// JSON text) and, for Parquet, field IDs; CSV and NDJSON of canonical input
// byte for byte.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := t.TempDir()
	rec := testtables.Record(testtables.AllTypes(), 700, 7)
	defer rec.Release()
	wantRows, err := rowjson.AppendRows(nil, rec)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, f := range []formats.Format{formats.Parquet, formats.ArrowFile, formats.ArrowStream} {
		t.Run(string(f), func(t *testing.T) {
			in := writeTable(t, dir, "in."+string(f), f, rec)
			res := e.importJSON(in, "--row-group-rows", "256")
			if res.Rows != 700 || res.RowGroups != 3 || res.Size < res.UnpaddedSize {
				t.Fatalf("import: %+v", res)
			}
			ids = append(ids, res.StorageID)
			out := filepath.Join(dir, "out."+string(f))
			e.ok("export", res.StorageID, "-o", out, "--format", string(f))
			schema, rows := readTable(t, out, f)
			if rows != string(wantRows) {
				t.Fatalf("rows differ:\n got %.300s\nwant %.300s", rows, wantRows)
			}
			for i, fd := range rec.Schema().Fields() {
				if !arrow.TypeEqual(schema.Field(i).Type, fd.Type) {
					t.Errorf("%s: type %v, want %v", fd.Name, schema.Field(i).Type, fd.Type)
				}
			}
			if f == formats.Parquet {
				if got, want := fieldIDList(schema), fieldIDList(rec.Schema()); got != want {
					t.Errorf("field IDs:\n got %s\nwant %s", got, want)
				}
			}
		})
	}

	// NDJSON and CSV: canonical text comes back byte for byte.
	nd := `{"id":1,"x":1.5,"name":"a","ok":true,"l":[1,2],"st":{"a":1,"b":"x"}}
{"id":2,"x":-0.25,"name":"b \"q\"","ok":false,"l":[],"st":{"a":null,"b":"y"}}
{"id":3,"x":null,"name":null,"ok":null,"l":null,"st":null}
`
	csv := "id,x,name,ok,day\n1,1.5,a,true,2026-01-02\n2,,\"b, c\",false,\n3,-2.25,,true,2026-12-31\n"
	for _, c := range []struct {
		name, text string
		f          formats.Format
	}{{"in.ndjson", nd, formats.NDJSON}, {"in.csv", csv, formats.CSV}} {
		t.Run(string(c.f), func(t *testing.T) {
			in := filepath.Join(dir, c.name)
			os.WriteFile(in, []byte(c.text), 0o600)
			res := e.importJSON(in, "--assign-field-ids")
			ids = append(ids, res.StorageID)
			r := e.ok("export", res.StorageID, "--format", string(c.f))
			if r.stdout != c.text {
				t.Fatalf("export:\n%s\nwant\n%s", r.stdout, c.text)
			}
			// From stdin too.
			e.stdin = strings.NewReader(c.text)
			res2 := e.importJSON("-", "--assign-field-ids", "--format", string(c.f))
			e.stdin = nil
			if r := e.ok("export", res2.StorageID, "--format", string(c.f)); r.stdout != c.text {
				t.Fatalf("export of stdin's import:\n%s", r.stdout)
			}
			ids = append(ids, res2.StorageID)
		})
	}

	// ls lists every object, with its DEK held.
	list := e.lsJSON().Objects
	held := map[string]bool{}
	for _, l := range list {
		held[l.StorageID] = l.DEK != nil && *l.DEK && l.Size > 0
	}
	for _, id := range ids {
		if !held[id] {
			t.Errorf("ls --json lacks %s, or its DEK: %v", id, list)
		}
	}
	if r := e.ok("ls"); !strings.Contains(r.stdout, "STORAGE_ID") || strings.Count(r.stdout, " yes\n") != len(list) {
		t.Errorf("ls:\n%s", r.stdout)
	}
}

// TestExportFields: --fields takes names, dotted paths and field IDs, and an
// unknown one is a usage error; CSV writes nested values as JSON text.
func TestExportFields(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	nd := `{"id":1,"name":"a","st":{"a":1,"b":"x"},"l":[1,2]}
{"id":2,"name":"b","st":{"a":2,"b":"y"},"l":[3]}
`
	in := filepath.Join(t.TempDir(), "t.ndjson")
	os.WriteFile(in, []byte(nd), 0o600)
	res := e.importJSON(in, "--assign-field-ids")
	// Field IDs: id=1 name=2 st=3 l=4, then st.a=5 st.b=6 l.item=7.
	for _, c := range []struct{ fields, want string }{
		{"name", "name\na\nb\n"},
		{"2,1", "id,name\n1,a\n2,b\n"},
		{"st.b", "st\n\"{\"\"b\"\":\"\"x\"\"}\"\n\"{\"\"b\"\":\"\"y\"\"}\"\n"},
		{"l", "l\n\"[1,2]\"\n[3]\n"},
	} {
		r := e.ok("export", res.StorageID, "--format", "csv", "--fields", c.fields)
		if r.stdout != c.want {
			t.Errorf("--fields %s:\n%s\nwant\n%s", c.fields, r.stdout, c.want)
		}
	}
	e.fails(exitUsage, []string{`no field named "nope"`}, "export", res.StorageID, "--format", "csv", "--fields", "nope")
	e.fails(exitUsage, []string{`no field named "99"`}, "export", res.StorageID, "--format", "csv", "--fields", "99")
	// No format and stdout not a terminal: a usage error, nothing written.
	e.fails(exitUsage, []string{"give --format"}, "export", res.StorageID)
	// -o names the format; a failing export leaves no file.
	out := filepath.Join(t.TempDir(), "out.ndjson")
	e.ok("export", res.StorageID, "-o", out, "--limit", "1")
	if b, _ := os.ReadFile(out); string(b) != strings.SplitAfter(nd, "\n")[0] {
		t.Errorf("export -o --limit 1: %q", b)
	}
}

// arrowParquet writes a Parquet file with arrow-go, with or without field
// IDs.
func arrowParquet(t *testing.T, path string, ids bool) *arrow.Schema {
	t.Helper()
	md := func(id string) arrow.Metadata {
		if !ids {
			return arrow.Metadata{}
		}
		return arrow.NewMetadata([]string{writer.FieldIDKey}, []string{id})
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64, Metadata: md("7")},
		{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: md("8")},
		{Name: "tags", Type: arrow.ListOfField(arrow.Field{Name: "element", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: md("9")}), Nullable: true, Metadata: md("20")},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range 500 {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append(strings.Repeat("v", i%5))
		lb := b.Field(2).(*array.ListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.StringBuilder).Append("t")
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := pqarrow.NewFileWriter(schema, f, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return schema
}

// schemaIDs returns the field IDs sop-pme schema --json shows, as
// "path=id" in depth-first order.
func (e *env) schemaIDs(id string) string {
	e.t.Helper()
	r := e.ok("schema", "--json", id)
	var tree []schemaField
	if err := json.Unmarshal([]byte(r.stdout), &tree); err != nil {
		e.t.Fatal(err, r.stdout)
	}
	var out []string
	var walk func(prefix string, fs []schemaField)
	walk = func(prefix string, fs []schemaField) {
		for _, f := range fs {
			v := "-"
			if f.FieldID != nil {
				v = jsonNum(*f.FieldID)
			}
			out = append(out, prefix+f.Name+"="+v)
			walk(prefix+f.Name+".", f.Children)
		}
	}
	walk("", tree)
	return strings.Join(out, " ")
}

func jsonNum(n int64) string { b, _ := json.Marshal(n); return string(b) }

// TestImportFieldIDs: Parquet written by arrow-go and by DuckDB, with
// field IDs (kept) and without (an error naming the fields, with the flag
// as a hint; with --assign-field-ids, the rule of writer.AssignFieldIDs).
// The exported rows are the input's.
func TestImportFieldIDs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := t.TempDir()
	with, without := filepath.Join(dir, "with.parquet"), filepath.Join(dir, "without.parquet")
	arrowParquet(t, with, true)
	arrowParquet(t, without, false)
	duckWith, duckWithout := filepath.Join("testdata", "duckdb-field-ids.parquet"), filepath.Join("testdata", "duckdb-no-field-ids.parquet")

	for _, c := range []struct {
		path, ids, assigned string
	}{
		{with, "k=7 v=8 tags=20 tags.element=9", ""},
		{without, "", "k=1 v=2 tags=3 tags.element=4"},
		{duckWith, "id=10 name=11 amount=12 day=13 flag=14 pair=15 pair.element=16 st=17 st.a=18 st.b=19", ""},
		{duckWithout, "", "id=1 name=2 amount=3 day=4 flag=5 pair=6 st=7 pair.element=8 st.a=9 st.b=10"},
	} {
		t.Run(filepath.Base(c.path), func(t *testing.T) {
			before := tree(t, e.store)
			var res importResult
			if c.ids == "" {
				r := e.fails(exitFailure, []string{filepath.Base(c.path), "no Parquet field ID", "--assign-field-ids"}, "import", c.path)
				if strings.Contains(r.stderr, "st.a") != strings.Contains(c.assigned, "st.a") {
					t.Errorf("the error does not name the nested fields: %s", r.stderr)
				}
				if after := tree(t, e.store); !slices.Equal(before, after) {
					t.Fatalf("a refused import changed the store:\n%v\n%v", before, after)
				}
				res = e.importJSON(c.path, "--assign-field-ids")
			} else {
				res = e.importJSON(c.path)
			}
			want := c.ids
			if want == "" {
				want = c.assigned
			}
			// schema lists fields depth first; the rule numbers breadth first.
			if got := e.schemaIDs(res.StorageID); sortedWords(got) != sortedWords(want) {
				t.Errorf("field IDs:\n got %s\nwant %s", got, want)
			}
			// The rows are the input's.
			_, inRows := readTable(t, c.path, formats.Parquet)
			out := filepath.Join(t.TempDir(), "out.ndjson")
			e.ok("export", res.StorageID, "-o", out)
			b, _ := os.ReadFile(out)
			if string(b) != inRows {
				t.Errorf("exported rows differ:\n got %.300s\nwant %.300s", b, inRows)
			}
		})
	}
}

func sortedWords(s string) string {
	w := strings.Fields(s)
	slices.Sort(w)
	return strings.Join(w, " ")
}
