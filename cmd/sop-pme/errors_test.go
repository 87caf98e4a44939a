package main

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/sovm/sop-pme/keyring"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/storageid"
)

// TestHelp: -h prints usage on stdout and exits 0, for the command and for
// each subcommand; usage errors exit 2 with one line, whose prefix
// "sop-pme: " comes once (before: "sop-pme: sop-pme ls: unknown flag").
func TestHelp(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, args := range [][]string{{"-h"}, {"--help"}, {"help"}, {"import", "-h"}, {"export", "--help"}, {"ls", "-h"},
		{"schema", "-h"}, {"inspect", "-h"}, {"verify", "-h"}, {"check", "-h"}, {"rm", "-h"}, {"keys", "rotate", "-h"},
		{"demo", "-h"}, {"migrate", "-h"}, {"sql", "-h"}, {"version", "-h"}} {
		r := e.run(nil, args...)
		if r.code != 0 || !strings.Contains(r.stdout, "Usage:") || r.stderr != "" {
			t.Errorf("sop-pme %s: %s", strings.Join(args, " "), r)
		}
		if !strings.Contains(r.stdout, "Exit codes:") || !strings.Contains(r.stdout, "5    key:") {
			t.Errorf("sop-pme %s: the help lacks the exit codes", strings.Join(args, " "))
		}
	}
	if r := e.run(nil, "export", "-h"); !strings.Contains(r.stdout, "PLAINTEXT Parquet") || !strings.Contains(r.stdout, "trusted destination") {
		t.Errorf("export -h does not say that Parquet output is plaintext:\n%s", r.stdout)
	}
	if r := e.run(nil, "rm", "-h"); !strings.Contains(r.stdout, "Why the DEK first") {
		t.Errorf("rm -h does not say why the DEK goes first:\n%s", r.stdout)
	}
	if r := e.run(nil, "demo", "-h"); strings.Contains(r.stdout, "--id") {
		t.Errorf("demo -h lists an --id flag")
	}
	id := storageid.Sum([]byte("x")).String()
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "no command"},
		{[]string{"frobnicate"}, "unknown command"},
		{[]string{"ls", "--frob"}, "ls: unknown flag: --frob (see sop-pme ls -h)"},
		{[]string{"--frob"}, "unknown flag: --frob (see sop-pme -h)"},
		{[]string{"keys", "rotate", "--frob"}, "keys rotate: unknown flag"},
		{[]string{"keys", "rotate", "x"}, "keys rotate takes no argument (see sop-pme keys rotate -h)"},
		{[]string{"version", "x"}, "version takes no argument"},
		{[]string{"export"}, "export takes one storage_id or table (see sop-pme export -h)"},
		{[]string{"export", id, id}, "one storage_id"},
		{[]string{"export", "zz", "--format", "csv"}, "no store"}, // zz: a table
		{[]string{"export", "zz"}, "give --format"},
		{[]string{"import"}, "one input file"},
		{[]string{"import", "--codec", "lzma", "x.csv"}, "--codec"},
		{[]string{"verify", id}, "no store"},
		{[]string{"keys"}, "subcommand"},
		{[]string{"rm", id}, "no store"}, // --yes is asked for once the store and keyring are open (TestTables)
	} {
		r := e.run(nil, c.args...)
		checkFailure(t, r, exitUsage, []string{c.want}, c.args)
	}
}

// TestDemo: demo writes, reads, verifies and checks a table, says where the
// KEK is (never printing it), keeps it out of the store, and hints at
// sop-pme commands, not go run.
func TestDemo(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.ok("demo", "--rows", "3000")
	for _, want := range []string{"storage_id", "unpadded size", "key_ref", "pme.DEK(REDACTED)", "conformant SOP-PME-1 object",
		"object verified: false", "object verified: true", "created a new KEK in " + e.kekPath(), "KEK            in " + e.kekPath(),
		"sop-pme export  --store " + e.store, "go install -C cmd/sop-pme ."} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("demo output lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "go run") {
		t.Errorf("demo hints at go run:\n%s", r.stdout)
	}
	kek, _ := os.ReadFile(e.kekPath())
	if len(kek) != 32 || strings.Contains(r.stdout, base64.StdEncoding.EncodeToString(kek)) || strings.Contains(r.stdout, string(kek)) {
		t.Fatal("the KEK is missing or was printed")
	}
	for _, name := range []string{"kek", "keyring"} {
		if _, err := os.Stat(filepath.Join(e.store, name)); err == nil {
			t.Errorf("the store holds %s", name)
		}
	}
	id := storageIDLine.FindStringSubmatch(r.stdout)[1]
	// The hint works.
	hint := strings.Fields(strings.SplitN(r.stdout[strings.Index(r.stdout, "sop-pme export"):], "\n", 2)[0])
	if r := e.run(nil, hint[1:]...); r.code != 0 || !strings.Contains(r.stdout, "customer-00001") {
		t.Errorf("the hint %v: %s", hint, r)
	}
	if r := e.ok("demo", "--rows", "10"); strings.Contains(r.stdout, "created") {
		t.Errorf("a second demo created keys:\n%s", r.stdout)
	}
	if again, _ := os.ReadFile(e.kekPath()); string(again) != string(kek) {
		t.Fatal("the second demo replaced the KEK")
	}
	e.ok("verify", id)
}

// TestBadInput: a missing file, a corrupt Parquet file, CSV with a ragged
// row (early, found while inferring types, and late, found while writing)
// and an input without field IDs: one line, the right exit code, and
// nothing left behind: no object, no temporary file, no store, no KEK, no
// keyring.
func TestBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(s), 0o600)
		return p
	}
	late := "a,b\n" + strings.Repeat("1,2\n", 30_000) + "3\n"
	cases := []struct {
		name, path string
		code       int
		want       []string
	}{
		{"missing", filepath.Join(dir, "missing.parquet"), exitNotFound, []string{"missing.parquet: no such file"}},
		{"corrupt parquet", write("c.parquet", "PAR1 this is not really parquet PAR1"), exitFailure, []string{"c.parquet", "not a readable Parquet file"}},
		{"ragged CSV", write("r.csv", "a,b\n1,2\n3\n"), exitFailure, []string{"r.csv", "line 3 has a different number of fields"}},
		{"ragged CSV late", write("late.csv", late), exitFailure, []string{"late.csv", "different number of fields"}},
		{"encrypted", write("e.parquet", "PARE...."), exitFailure, []string{"encrypted Parquet"}},
	}
	run := func(t *testing.T, storeExists bool) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				before := tree(t, e.conf, filepath.Dir(e.store))
				if !strings.HasSuffix(c.path, "late.csv") {
					e.fails(c.code, c.want, "import", c.path)
				} else {
					e.fails(exitFailure, []string{"no Parquet field ID", "--assign-field-ids"}, "import", c.path)
				}
				e.fails(c.code, c.want, "import", "--assign-field-ids", c.path)
				if after := tree(t, e.conf, filepath.Dir(e.store)); !slices.Equal(before, after) {
					t.Fatalf("a failed import left something behind:\nbefore %v\nafter  %v", before, after)
				}
			})
		}
	}
	t.Run("no store yet", func(t *testing.T) { run(t, false) })
	// With a store, a KEK and a keyring.
	ok := write("ok.csv", "a\n1\n")
	e.importJSON(ok, "--assign-field-ids")
	t.Run("store", func(t *testing.T) { run(t, true) })
}

// TestBadObjects: an unknown storage_id, a store path that does not exist,
// a wrong KEK, a damaged object and a wrong DEK, each through every command
// it concerns: one line, the documented exit code, nothing created.
func TestBadObjects(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	in := filepath.Join(t.TempDir(), "t.csv")
	os.WriteFile(in, []byte("a,b\n"+strings.Repeat("1,x\n2,y\n", 5000)), 0o600)
	good := e.importJSON(in, "--assign-field-ids").StorageID
	unknown := storageid.Sum([]byte("no such object")).String()
	keyed := []string{"export", "schema", "check"}
	all := append([]string{"verify", "inspect"}, keyed...)
	extra := map[string][]string{"export": {"--format", "csv"}}
	for _, cmd := range all {
		e.fails(exitNotFound, []string{unknown, "no such object"}, append([]string{cmd, unknown}, extra[cmd]...)...)
	}
	// A store path that does not exist: exit 3, and it is not created.
	missing := filepath.Join(t.TempDir(), "typo")
	before := tree(t, e.conf, filepath.Dir(missing))
	for _, cmd := range append(all, "ls", "rm") {
		args := append([]string{cmd, "--store", missing}, extra[cmd]...)
		if cmd != "ls" {
			args = append(args, good)
		}
		if cmd == "rm" {
			args = append(args, "--yes")
		}
		e.fails(exitNotFound, []string{missing, "no store"}, args...)
	}
	if after := tree(t, e.conf, filepath.Dir(missing)); !slices.Equal(before, after) {
		t.Fatalf("commands on a missing store created files:\n%v\n%v", before, after)
	}

	// A wrong KEK: exit 5, for every command that needs the keyring.
	wrong := base64.StdEncoding.EncodeToString(keyring.NewKEK().Bytes())
	for _, cmd := range append(keyed, "ls", "rm") {
		args := append([]string{cmd}, extra[cmd]...)
		if cmd != "ls" {
			args = append(args, good)
		}
		if cmd == "rm" {
			args = append(args, "--yes")
		}
		r := e.run([]string{"SOP_PME_STORE=" + e.store, "SOP_PME_KEK=" + wrong, "SOP_PME_KEYRING=" + e.ringPath()}, args...)
		checkFailure(t, r, exitKey, []string{"the KEK in $SOP_PME_KEK does not open the keyring", "wrong key"}, args)
	}
	e.ok("verify", good) // the object is still there

	// A wrong DEK for an object whose bytes verify: exit 5, not 4.
	id, _ := storageid.Parse(good)
	kek, err := keyring.LoadKEKFile(e.kekPath())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ring, err := keyring.Open(ctx, e.ringPath(), kek)
	if err != nil {
		t.Fatal(err)
	}
	right, err := ring.ResolveDEK(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	ring.Put(ctx, id, pme.NewDEK())
	for _, cmd := range []string{"export", "schema"} {
		e.fails(exitKey, []string{good, "does not open the object, whose bytes match the storage_id: wrong key"}, append([]string{cmd, good}, extra[cmd]...)...)
	}
	r := e.fails(exitNonConform, []string{good, "not a conformant"}, "check", good)
	if !regexp.MustCompile(`FAIL +modules +footer: module authentication failed`).MatchString(r.stdout) {
		t.Errorf("check with a wrong DEK:\n%s", r.stdout)
	}
	e.ok("verify", good)
	ring.Put(ctx, id, right)

	// No DEK at all: exit 5.
	other := e.importJSON(in, "--assign-field-ids", "--row-group-rows", "999").StorageID
	oid, _ := storageid.Parse(other)
	ring.Delete(ctx, oid)
	e.fails(exitKey, []string{other, "holds no DEK"}, "export", other, "--format", "csv")

	// A damaged object: exit 4 from verify, export and check; inspect of
	// the damaged range too.
	data := filepath.Join(e.store, good+".data")
	b, _ := os.ReadFile(data)
	b[len(b)/3] ^= 0x40
	os.WriteFile(data, b, 0o600)
	for _, cmd := range []string{"verify", "export", "check"} {
		e.fails(exitVerify, []string{good, "do not match the storage_id"}, append([]string{cmd, good}, extra[cmd]...)...)
	}
	// An export to a file that fails leaves no file.
	out := filepath.Join(t.TempDir(), "out.csv")
	e.fails(exitVerify, []string{good}, "export", good, "-o", out)
	if ents, _ := os.ReadDir(filepath.Dir(out)); len(ents) != 0 {
		t.Errorf("a failed export left %v", ents)
	}
}

// TestReadOnlyCommandsCreateNothing: the commands that only read, without
// a KEK or a keyring, fail and create no file or directory. Version 1
// created a kek and a keyring.json in the store.
func TestReadOnlyCommandsCreateNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	in := filepath.Join(t.TempDir(), "t.csv")
	os.WriteFile(in, []byte("a\n1\n"), 0o600)
	id := e.importJSON(in, "--assign-field-ids").StorageID
	os.RemoveAll(e.conf)
	before := tree(t, filepath.Dir(e.conf))
	for _, args := range [][]string{{"export", id, "--format", "csv"}, {"schema", id}, {"check", id}} {
		e.fails(exitNotFound, []string{"no KEK at " + e.kekPath()}, args...)
	}
	kekPath := filepath.Join(t.TempDir(), "kek")
	keyring.CreateKEKFile(kekPath)
	before = append(before, tree(t, filepath.Dir(kekPath))...)
	slices.Sort(before)
	for _, args := range [][]string{{"export", id, "--format", "csv"}, {"schema", id}, {"check", id}} {
		e.fails(exitNotFound, []string{"no keyring at"}, append(args, "--kek", kekPath)...)
	}
	// ls and inspect work without keys, and say what they leave out.
	if r := e.ok("ls"); !strings.Contains(r.stdout, id+"  ") || !strings.Contains(r.stderr, "no KEK") {
		t.Errorf("ls without keys:\n%s", r)
	}
	if r := e.ok("inspect", id); strings.Contains(r.stdout, "With the DEK") || !strings.Contains(r.stderr, "footer metadata not shown") {
		t.Errorf("inspect without keys:\n%s", r)
	}
	e.ok("verify", id)
	if after := tree(t, filepath.Dir(e.conf), filepath.Dir(kekPath)); !slices.Equal(before, after) {
		t.Fatalf("read-only commands created files:\nbefore %v\nafter  %v", before, after)
	}
}
