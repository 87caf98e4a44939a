package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/sovm/sop-pme/keyring"
	"github.com/sovm/sop-pme/storageid"
)

// The tests of tables through the command: import --table, ls, schema,
// table, export, verify and rm of a table.

// writeText writes a file of text in the test's directory.
func writeText(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// tableParquet writes a plaintext Parquet file of rows (id int64, n int32,
// name string, junk string), whose fields carry IDs 50.. that a table
// does not have.
func tableParquet(t *testing.T, dir, name string, ids []int64, ns []int32, names []string) string {
	t.Helper()
	md := func(id int) arrow.Metadata {
		return arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{fmt.Sprint(id)})
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true, Metadata: md(50)},
		{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true, Metadata: md(51)},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: md(52)},
		{Name: "junk", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: md(53)},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues(ids, nil)
	b.Field(1).(*array.Int32Builder).AppendValues(ns, nil)
	b.Field(2).(*array.StringBuilder).AppendValues(names, nil)
	for range ids {
		b.Field(3).(*array.StringBuilder).Append("zz")
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, plainParquet(t, rec), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// importTable imports files into table with flags, and returns the
// results.
func (e *env) importTable(table string, files []string, flags ...string) []importResult {
	e.t.Helper()
	r := e.ok(append(append([]string{"import", "--json", "-q", "--table", table}, flags...), files...)...)
	var res []importResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || len(res) != len(files) {
		e.t.Fatalf("import --table --json: %v\n%s", err, r)
	}
	return res
}

// tableObjects returns ls TABLE --json.
func (e *env) tableObjects(table string) []lsObjectEntry {
	e.t.Helper()
	r := e.ok("ls", "--json", table)
	var out []lsObjectEntry
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		e.t.Fatalf("ls --json %s: %v\n%s", table, err, r)
	}
	return out
}

// lsAll is ls --json.
type lsAll struct {
	Tables  []lsTableEntry `json:"tables"`
	Objects []lsEntry      `json:"objects"`
}

func (e *env) lsJSON() lsAll {
	e.t.Helper()
	r := e.ok("ls", "--json")
	var out lsAll
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		e.t.Fatalf("ls --json: %v\n%s", err, r)
	}
	return out
}

// TestTableImport: three files (two CSV, one Parquet, sealed byte for
// byte with the table's field IDs rather than its own) go into a table;
// ls lists the table first and the object in no table after it, ls TABLE
// its objects, schema TABLE its schema with field IDs, and --history its
// versions.
func TestTableImport(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := t.TempDir()
	a := writeText(t, dir, "a.csv", "id,n,name,junk\n1,10,a,x\n2,20,b,y\n")
	b := writeText(t, dir, "b.csv", "id,n,name,junk\n3,30,c,z\n")
	p := tableParquet(t, dir, "c.parquet", []int64{4, 5, 6}, []int32{40, 50, 60}, []string{"d", "e", "f"})
	loose := e.importJSON(writeText(t, dir, "loose.csv", "v\n1\n"), "--assign-field-ids", "-q")

	res := e.importTable("orders", []string{a, b})
	// The Parquet file's n is int32, the table's int64 (from the CSV): a
	// narrower type the table reads widened, so it fits.
	res = append(res, e.importTable("orders", []string{p})...)
	if res[2].Path != pathSealed {
		t.Errorf("the Parquet file was %s (%s), want sealed", res[2].Path, res[2].ReencodeReason)
	}
	for i, r := range res {
		if r.Table != "orders" || r.Version != 1 {
			t.Errorf("result %d: table %q version %d", i, r.Table, r.Version)
		}
	}
	// The sealed object carries the table's IDs (1..4), not the file's.
	if got := e.schemaIDs(res[2].StorageID); got != "id=1 n=2 name=3 junk=4" {
		t.Errorf("field IDs of the sealed object: %s", got)
	}

	all := e.lsJSON()
	if len(all.Tables) != 1 || all.Tables[0].Name != "orders" || all.Tables[0].Objects != 3 || all.Tables[0].Rows != 6 || all.Tables[0].LastAppend == nil {
		t.Errorf("ls --json tables: %+v", all.Tables)
	}
	var unpadded int64
	for _, r := range res {
		unpadded += int64(r.UnpaddedSize)
	}
	if all.Tables[0].UnpaddedSize != unpadded {
		t.Errorf("ls: unpadded bytes %d, the imports said %d", all.Tables[0].UnpaddedSize, unpadded)
	}
	if len(all.Objects) != 1 || all.Objects[0].StorageID != loose.StorageID {
		t.Errorf("ls --json objects: %+v, want only %s", all.Objects, loose.StorageID)
	}
	r := e.ok("ls")
	ti, oi := strings.Index(r.stdout, "NAME  "), strings.Index(r.stdout, "STORAGE_ID")
	if ti < 0 || oi < ti || !strings.Contains(r.stdout, "UNPADDED BYTES") || !strings.Contains(r.stdout, loose.StorageID) || strings.Contains(r.stdout, res[0].StorageID) {
		t.Errorf("ls:\n%s", r.stdout)
	}

	// Without a keyring there is no catalog to read: every object is
	// listed, and tables is null.
	r = e.ok("ls", "--json", "--keyring", filepath.Join(dir, "none"))
	var bare lsAll
	if err := json.Unmarshal([]byte(r.stdout), &bare); err != nil || bare.Tables != nil || len(bare.Objects) != 4 {
		t.Errorf("ls --json without a keyring: %v\n%s", err, r.stdout)
	}

	objs := e.tableObjects("orders")
	if len(objs) != 3 {
		t.Fatalf("ls orders: %+v", objs)
	}
	for i, o := range objs {
		if o.StorageID != res[i].StorageID || o.Rows != res[i].Rows || o.Size != int64(res[i].Size) || o.UnpaddedSize != int64(res[i].UnpaddedSize) || o.Version != 1 {
			t.Errorf("ls orders, object %d: %+v, imported %+v", i, o, res[i])
		}
	}
	if r := e.ok("ls", "orders"); !strings.Contains(r.stdout, "STORAGE_ID") || !strings.Contains(r.stdout, "APPENDED") || strings.Count(r.stdout, "\n") != 4 {
		t.Errorf("ls orders:\n%s", r.stdout)
	}

	r = e.ok("schema", "orders")
	for _, want := range []string{"FIELD_ID", "id ", "n ", "name ", "junk "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("schema orders lacks %q:\n%s", want, r.stdout)
		}
	}
	r = e.ok("schema", "orders", "--json")
	var tree []schemaField
	if err := json.Unmarshal([]byte(r.stdout), &tree); err != nil || len(tree) != 4 || tree[3].FieldID == nil || *tree[3].FieldID != 4 {
		t.Errorf("schema orders --json: %v\n%s", err, r.stdout)
	}
	r = e.ok("schema", "orders", "--history")
	if !strings.Contains(r.stdout, "VERSION") || !strings.Contains(r.stdout, "create") {
		t.Errorf("schema orders --history:\n%s", r.stdout)
	}
	// An object's schema keeps working; --history is for tables.
	e.ok("schema", loose.StorageID)
	e.fails(exitUsage, []string{"--history"}, "schema", loose.StorageID, "--history")
	e.fails(exitNotFound, []string{"nosuch", "no such table"}, "schema", "nosuch")
	e.fails(exitNotFound, []string{"nosuch", "no such table"}, "ls", "nosuch")

	// Names that read as storage_ids are refused.
	for _, name := range []string{"deadbeef", strings.Repeat("ab", 32), "0123456789"} {
		e.fails(exitUsage, []string{"cannot name a table"}, "import", "--table", name, a)
	}
	e.fails(exitUsage, []string{"--assign-field-ids"}, "import", "--table", "orders", "--assign-field-ids", a)
	e.fails(exitUsage, []string{"--evolve goes with --table"}, "import", "--evolve", a)
	e.fails(exitUsage, []string{"one input file"}, "import", a, b)
	e.fails(exitUsage, []string{"subcommand"}, "table")
}

// TestTableEvolve: an input with a column the table lacks is refused,
// naming the column and --evolve, and nothing is left of it; with
// --evolve it goes in, and the schema has a new version.
func TestTableEvolve(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := t.TempDir()
	e.importTable("t", []string{writeText(t, dir, "a.csv", "id,name\n1,a\n")})
	c := writeText(t, dir, "c.csv", "id,name,extra\n2,b,1.5\n")
	e.fails(exitFailure, []string{"c.csv", "table t", "extra", "--evolve"}, "import", "--table", "t", c)
	if objs := e.tableObjects("t"); len(objs) != 1 {
		t.Errorf("after the refusal: %d objects", len(objs))
	}
	if n := len(e.lsJSON().Objects); n != 0 {
		t.Errorf("the refused input left %d objects in the store", n)
	}
	// A type the table cannot read either.
	e.fails(exitFailure, []string{"id", "--evolve"}, "import", "--table", "t", writeText(t, dir, "s.csv", "id,name\nx,a\n"))

	res := e.importTable("t", []string{c}, "--evolve")
	if res[0].Version != 2 {
		t.Errorf("version %d after --evolve, want 2", res[0].Version)
	}
	r := e.ok("schema", "t", "--history")
	if !strings.Contains(r.stdout, "extra") || strings.Count(r.stdout, "\n") != 3 {
		t.Errorf("schema --history:\n%s", r.stdout)
	}
	r = e.ok("export", "t", "--format", "csv")
	if want := "id,name,extra\n1,a,\n2,b,1.5\n"; r.stdout != want {
		t.Errorf("export t:\n%s\nwant\n%s", r.stdout, want)
	}
	// - is stdin, here with a column of the table missing (nullable).
	e.stdin = strings.NewReader("id,extra\n3,2.5\n")
	res = e.importTable("t", []string{"-"}, "--format", "csv")
	e.stdin = nil
	if res[0].File != "-" || res[0].Rows != 1 {
		t.Errorf("import --table t -: %+v", res[0])
	}
	r = e.ok("export", "t", "--format", "csv")
	if want := "id,name,extra\n1,a,\n2,b,1.5\n3,,2.5\n"; r.stdout != want {
		t.Errorf("export t:\n%s\nwant\n%s", r.stdout, want)
	}
	e.fails(exitUsage, []string{"stdin"}, "import", "--table", "t", "-", "-")
}

// TestTableSchemaChanges: add-column, promote, rename-column and
// drop-column through sop-pme table; export TABLE reads every object at
// the current schema by field ID: nulls for a column added after an
// object, values widened, a renamed column under its new name, a dropped
// one gone.
func TestTableSchemaChanges(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := t.TempDir()
	p := tableParquet(t, dir, "p.parquet", []int64{1, 2}, []int32{10, 2_000_000_000}, []string{"a", "b"})
	e.importTable("t", []string{p})
	e.ok("table", "add-column", "t", "note", "string")
	// The CSV's n is int64: wider than the table's int32 until promoted.
	c2 := writeText(t, dir, "c2.csv", "id,n,name,junk,note\n3,30000000000,c,z,hello\n")
	e.fails(exitFailure, []string{"column n", "--evolve"}, "import", "--table", "t", c2)
	e.ok("table", "promote", "t", "n", "int64")
	e.importTable("t", []string{c2})
	e.ok("table", "rename-column", "t", "name", "label")
	e.importTable("t", []string{writeText(t, dir, "c3.csv", "id,n,label,junk,note\n4,40,d,z,bye\n")})
	r := e.ok("table", "drop-column", "t", "junk", "--json")
	var v tableVersion
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v.Version != 5 || len(v.Fields) != 4 || !strings.Contains(v.Change, "junk") {
		t.Errorf("table drop-column --json: %v\n%s", err, r.stdout)
	}

	r = e.ok("export", "t", "--format", "csv")
	want := "id,n,label,note\n1,10,a,\n2,2000000000,b,\n3,30000000000,c,hello\n4,40,d,bye\n"
	if r.stdout != want {
		t.Errorf("export t:\n%s\nwant\n%s", r.stdout, want)
	}
	// --fields by the new name and by ID: the table, created from the
	// Parquet file, kept its IDs (id is 50).
	if r := e.ok("export", "t", "--format", "csv", "--fields", "label,50"); r.stdout != "label,id\na,1\nb,2\nc,3\nd,4\n" && r.stdout != "id,label\n1,a\n2,b\n3,c\n4,d\n" {
		t.Errorf("export t --fields label,50:\n%s", r.stdout)
	}
	e.fails(exitUsage, []string{"--fields", "name"}, "export", "t", "--format", "csv", "--fields", "name")

	r = e.ok("schema", "t", "--history")
	for _, w := range []string{"add note", "promote n", "rename name", "drop junk"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("schema --history lacks %q:\n%s", w, r.stdout)
		}
	}
	// Bad changes: usage errors, naming what is wrong.
	e.fails(exitUsage, []string{"int9", "decimal(P,S)"}, "table", "add-column", "t", "x", "int9")
	e.fails(exitUsage, []string{"nosuch"}, "table", "drop-column", "t", "nosuch")
	e.fails(exitUsage, []string{"label", "promoted"}, "table", "promote", "t", "label", "int64")
	e.fails(exitNotFound, []string{"nosuch", "no such table"}, "table", "add-column", "nosuch", "x", "int32")
	e.fails(exitUsage, nil, "table", "add-column", "t", "x")
}

// TestTableVerify: verify TABLE verifies every object and reports each;
// one damaged object fails it with exit code 4, named, and export TABLE
// fails on it.
func TestTableVerify(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := t.TempDir()
	var files []string
	for i := range 3 {
		files = append(files, writeText(t, dir, fmt.Sprintf("f%d.csv", i), fmt.Sprintf("id,v\n%d,x\n", i)))
	}
	res := e.importTable("t", files)
	r := e.ok("verify", "t")
	if strings.Count(r.stdout, "every byte matches") != 3 {
		t.Errorf("verify t:\n%s", r.stdout)
	}
	bad := res[1].StorageID
	damage(t, e.store, bad, 10)
	r = e.fails(exitVerify, []string{"1 of 3 objects of table t failed"}, "verify", "t")
	if !strings.Contains(r.stdout, bad+": FAILED") || strings.Count(r.stdout, "every byte matches") != 2 {
		t.Errorf("verify t with %s damaged:\n%s", bad, r.stdout)
	}
	r = e.fails(exitVerify, []string{"1 of 3 objects of table t failed"}, "verify", "t", "--json")
	var sum verifySummary
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil || sum.Total != 3 || sum.Failed != 1 || sum.Objects[1].StorageID != bad || sum.Objects[1].Verified {
		t.Errorf("verify t --json: %v\n%s", err, r.stdout)
	}
	e.fails(exitVerify, []string{bad, "table t"}, "export", "t", "--format", "csv")
}

// TestTableRm: rm ID of a table's object is refused naming the table; rm
// --table removes it (catalog, DEK, object); rm TABLE asks, then drops the
// table, forgets every DEK and deletes every object.
func TestTableRm(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := t.TempDir()
	var files []string
	for i := range 3 {
		files = append(files, writeText(t, dir, fmt.Sprintf("f%d.csv", i), fmt.Sprintf("id,v\n%d,x\n", i)))
	}
	res := e.importTable("t", files)
	ids := make([]string, len(res))
	for i, r := range res {
		ids[i] = r.StorageID
	}
	e.fails(exitUsage, []string{ids[0], "table t", "rm --table t"}, "rm", "--yes", ids[0])
	// Without --yes too: the refusal names the table, not the missing --yes.
	e.fails(exitUsage, []string{ids[0], "table t", "rm --table t"}, "rm", ids[0])
	e.fails(exitUsage, []string{ids[0][:12], "table t"}, "rm", "--yes", ids[0][:12])
	e.fails(exitUsage, []string{"--yes"}, "rm", "t")
	if objs := e.tableObjects("t"); len(objs) != 3 {
		t.Fatalf("after refusals: %d objects", len(objs))
	}

	e.ok("rm", "--yes", "--table", "t", ids[0])
	if objs := e.tableObjects("t"); len(objs) != 2 || objs[0].StorageID != ids[1] {
		t.Errorf("after rm --table t %s: %+v", ids[0], objs)
	}
	e.fails(exitNotFound, []string{ids[0], "not an object of the table t"}, "rm", "--yes", "--table", "t", ids[0])
	if held := e.ringHas(ids...); held[0] || !held[1] || !held[2] {
		t.Errorf("keyring Has after rm --table: %v", held)
	}

	// Off a terminal, without --yes: a usage error naming --yes, nothing deleted.
	e.fails(exitUsage, []string{"--yes"}, "rm", "t")
	// Confirmation: no answer deletes nothing.
	e.stdin = strings.NewReader("n\n")
	r := e.sop("rm", "t")
	e.stdin = nil
	if r.code == 0 {
		t.Errorf("rm t without --yes: %s", r)
	}
	r = e.ok("rm", "--yes", "t", "--json")
	var rm []rmResult
	if err := json.Unmarshal([]byte(r.stdout), &rm); err != nil || len(rm) != 2 || !rm[0].DEKForgotten || !rm[0].ObjectDeleted {
		t.Errorf("rm t --json: %v\n%s", err, r.stdout)
	}
	if held := e.ringHas(ids...); slices.Contains(held, true) {
		t.Errorf("keyring Has after rm t: %v", held)
	}
	all := e.lsJSON()
	if len(all.Tables) != 0 || len(all.Objects) != 0 {
		t.Errorf("after rm t: %+v", all)
	}
	ents, _ := filepath.Glob(filepath.Join(e.store, "*.data"))
	if len(ents) != 0 {
		t.Errorf("objects left in the store: %v", ents)
	}
	e.fails(exitNotFound, []string{"no such table"}, "rm", "--yes", "t")
}

// ringHas opens the env's keyring read-only and asks it for the DEKs of
// ids.
func (e *env) ringHas(ids ...string) []bool {
	e.t.Helper()
	ctx := context.Background()
	kek, err := keyring.LoadKEKFile(e.kekPath())
	if err != nil {
		e.t.Fatal(err)
	}
	ring, err := keyring.Open(ctx, e.ringPath(), kek, keyring.WithReadOnly())
	if err != nil {
		e.t.Fatal(err)
	}
	sids := make([]storageid.ID, len(ids))
	for i, s := range ids {
		if sids[i], err = storageid.Parse(s); err != nil {
			e.t.Fatal(err)
		}
	}
	held, err := ring.Has(ctx, sids...)
	if err != nil {
		e.t.Fatal(err)
	}
	return held
}

// TestTableConcurrentImports: six import --table processes at once, from
// no KEK, keyring, store or table: every object acknowledged is in the
// table afterwards, with its DEK, and the table holds nothing else. The
// keyring file holds no table or column name.
func TestTableConcurrentImports(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := t.TempDir()
	bin := e.binary()
	const n = 6
	var wg sync.WaitGroup
	acked := make([]string, n)
	outs := make([]string, n)
	for i := range n {
		f := writeText(t, dir, fmt.Sprintf("f%d.csv", i), fmt.Sprintf("secret_col_qz,other_col_qz\n%d,v%d\n", i, i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(bin, "import", "--json", "-q", "--table", "secret_table_qz", f)
			cmd.Env = append(slices.Clone(e.vars), "SOP_PME_STORE="+e.store)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			outs[i] = fmt.Sprintf("%v\n%s%s", err, stdout.String(), stderr.String())
			var res []importResult
			if err == nil && json.Unmarshal(stdout.Bytes(), &res) == nil && len(res) == 1 {
				acked[i] = res[0].StorageID
			}
		}()
	}
	wg.Wait()
	var ok []string
	for i, id := range acked {
		if id == "" {
			t.Errorf("import %d failed: %s", i, outs[i])
			continue
		}
		ok = append(ok, id)
	}
	var in []string
	for _, o := range e.tableObjects("secret_table_qz") {
		in = append(in, o.StorageID)
	}
	slices.Sort(ok)
	slices.Sort(in)
	if !slices.Equal(ok, in) {
		t.Errorf("acknowledged %v, the table holds %v", ok, in)
	}
	if held := e.ringHas(ok...); slices.Contains(held, false) {
		t.Errorf("DEKs held: %v", held)
	}
	r := e.ok("export", "secret_table_qz", "--format", "csv")
	if strings.Count(r.stdout, "\n") != len(ok)+1 {
		t.Errorf("export:\n%s", r.stdout)
	}

	raw, err := os.ReadFile(e.ringPath())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"secret_table_qz", "secret_col_qz", "other_col_qz", "PARQUET:field_id"} {
		if bytes.Contains(raw, []byte(name)) {
			t.Errorf("the keyring file holds %q in the clear", name)
		}
	}
}

// TestTableImportCrash: an import killed after the object and its DEK are
// written, before the table names the object, leaves an object in no
// table: ls lists it there, the table does not, and rm ID removes it.
func TestTableImportCrash(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := t.TempDir()
	e.importTable("t", []string{writeText(t, dir, "a.csv", "id\n1\n")})
	e.bin = crashBinary(t)
	r := e.run([]string{"SOP_PME_STORE=" + e.store, "SOP_PME_CRASH_AT=import-before-append"}, "import", "--table", "t", writeText(t, dir, "b.csv", "id\n2\n"))
	if r.code != -1 && r.code != 137 {
		t.Fatalf("the import was not killed: %s", r)
	}
	e.bin = ""
	all := e.lsJSON()
	if len(all.Tables) != 1 || all.Tables[0].Objects != 1 || len(all.Objects) != 1 || all.Objects[0].DEK == nil || !*all.Objects[0].DEK {
		t.Fatalf("after the crash: %+v", all)
	}
	orphan := all.Objects[0].StorageID
	e.ok("rm", "--yes", orphan)
	if all := e.lsJSON(); len(all.Objects) != 0 || all.Tables[0].Objects != 1 {
		t.Errorf("after rm of the orphan: %+v", all)
	}
	if r := e.ok("export", "t", "--format", "csv"); r.stdout != "id\n1\n" {
		t.Errorf("export t:\n%s", r.stdout)
	}
}

// TestParseType: the types of sop-pme table, and a usage error for others.
func TestParseType(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"int32": "int32", "INT64": "int64", "float32": "float32", "double": "float64",
		"string": "utf8", "bool": "bool", "date32": "date32", "binary": "binary",
		"timestamp[us]": "timestamp[us]", "timestamp[ms, UTC]": "timestamp[ms, tz=UTC]",
		"timestamp[ns,Europe/Paris]": "timestamp[ns, tz=Europe/Paris]",
		"decimal(10,2)":              "decimal(10, 2)", "decimal( 38 , 0 )": "decimal(38, 0)", "decimal(40,5)": "decimal256(40, 5)",
		"time64[us]": "time64[us]",
	} {
		dt, err := parseType(in)
		if err != nil || dt.String() != want {
			t.Errorf("parseType(%q) = %v, %v; want %s", in, dt, err, want)
		}
	}
	for _, in := range []string{"", "int9", "decimal(0,0)", "decimal(5,6)", "decimal(80,2)", "timestamp[m]", "list<int32>"} {
		if _, err := parseType(in); err == nil {
			t.Errorf("parseType(%q): no error", in)
		} else if code, msg := exitCode(err); code != exitUsage || !strings.Contains(msg, "type") {
			t.Errorf("parseType(%q): exit %d, %q", in, code, msg)
		}
	}
}
