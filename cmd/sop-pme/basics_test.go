package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/sovm/sop-pme/keyring"
	"github.com/sovm/sop-pme/storageid"
)

// TestJSONErrors: under --json, a failure prints one JSON object on one
// line of stderr, {"error": ..., "code": ...}: the line the command prints
// without --json (less its "sop-pme: " prefix) and the exit code; usage
// errors too, even when the command line does not parse.
//
// Before: "sop-pme: ..." lines, as without --json.
func TestJSONErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.demoObject(100)
	unknown := storageid.Sum([]byte("no such object")).String()
	missing := filepath.Join(t.TempDir(), "missing.csv")
	cases := []struct {
		code int
		args []string
	}{
		{exitNotFound, []string{"verify", unknown}},
		{exitNotFound, []string{"check", unknown}},
		{exitNotFound, []string{"inspect", unknown}},
		{exitUsage, []string{"inspect", "zz"}},
		{exitUsage, []string{"ls", "--frob"}},
		{exitUsage, []string{"version", "x"}},
		{exitNotFound, []string{"import", missing}},
		{exitNotFound, []string{"ls", "--store", filepath.Join(t.TempDir(), "typo")}},
		{exitKey, []string{"check", id, "--kek", writeKEK(t), "--keyring", e.ringPath()}},
	}
	for _, c := range cases {
		plain := e.sop(c.args...)
		checkFailure(t, plain, c.code, nil, c.args)
		args := append([]string{c.args[0], "--json"}, c.args[1:]...)
		r := e.sop(args...)
		if r.code != c.code {
			t.Errorf("sop-pme %s: exit %d, want %d\n%s", strings.Join(args, " "), r.code, c.code, r)
			continue
		}
		lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
		var got map[string]any
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &got); err != nil {
			t.Errorf("sop-pme %s: the error is not JSON: %v\n%s", strings.Join(args, " "), err, r)
			continue
		}
		want := strings.TrimPrefix(strings.TrimSpace(plain.stderr[strings.LastIndex(strings.TrimSpace(plain.stderr), "\n")+1:]), "sop-pme: ")
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range got {
				if !yield(k) {
					return
				}
			}
		})
		if !slices.Equal(keys, []string{"code", "error"}) || got["code"] != float64(c.code) || got["error"] != want {
			t.Errorf("sop-pme %s: %v, want {error: %q, code: %d}", strings.Join(args, " "), got, want, c.code)
		}
	}
}

// writeKEK writes a new random KEK into a file of the test's and returns
// its path.
func writeKEK(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kek")
	if _, err := keyring.CreateKEKFile(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// plantObject puts the files of an object named id into the store, with
// no bytes worth reading: enough for a listing, as untrusted storage could.
func plantObject(t *testing.T, store string, id string) {
	t.Helper()
	for _, ext := range []string{".data", ".obao4"} {
		if err := os.WriteFile(filepath.Join(store, id+ext), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestIDPrefix: every command that takes an ID takes a unique hex prefix of
// at least 8 digits, in either case, and does what it does with the whole
// storage_id; a prefix that several objects share is a usage error (exit 2)
// that lists them; one that none has is not found (exit 3); one shorter
// than 8 digits is a usage error.
//
// Before: any prefix was a usage error, "is not a storage_id".
func TestIDPrefix(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.demoObject(200)
	other := e.demoObject(100)
	// A second object sharing id's first 9 digits (named so by the
	// store: a listing is all a prefix needs).
	twin := id[:9] + strings.Repeat("0", 55)
	if twin == id {
		twin = id[:9] + strings.Repeat("1", 55)
	}
	plantObject(t, e.store, twin)
	unique := strings.ToUpper(id[:12])
	for _, args := range [][]string{
		{"export", "ID", "--format", "csv"},
		{"schema", "ID"},
		{"inspect", "ID"},
		{"verify", "ID"},
		{"check", "ID"},
	} {
		with := func(s string) []string {
			out := slices.Clone(args)
			out[slices.Index(out, "ID")] = s
			return out
		}
		full := e.ok(with(id)...)
		if r := e.ok(with(unique)...); r.stdout != full.stdout || r.stdout == "" {
			t.Errorf("sop-pme %s: with a prefix:\n%s\nwith the storage_id:\n%s", strings.Join(with(unique), " "), r.stdout, full.stdout)
		}
		r := e.fails(exitUsage, []string{id[:9], "ambiguous", id, twin}, with(id[:9])...)
		if strings.Contains(r.stderr, other) {
			t.Errorf("the ambiguous prefix lists %s, which does not start with it", other)
		}
		e.fails(exitNotFound, []string{"fedcba9876543", "no object"}, with("fedcba9876543")...)
		e.fails(exitUsage, []string{"at least 8"}, with(id[:7])...)
	}
	// rm takes prefixes too, and removes the object they name, only that.
	e.ok("rm", "--yes", other[:10])
	if r := e.ok("ls"); strings.Contains(r.stdout, other) || !strings.Contains(r.stdout, id) {
		t.Errorf("after rm of %s:\n%s", other[:10], r.stdout)
	}
}

// damage flips a byte of object id's data file at offset off.
func damage(t *testing.T, store, id string, off int64) {
	t.Helper()
	p := filepath.Join(store, id+".data")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[off] ^= 0x40
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestVerifyMany: verify and check take several IDs, or --all, go on past a
// failure, print a line (verify) or a report (check) for each object and a
// summary line, and exit with the gravest failure's code. A damaged object
// is reported with its first damaged range, and, with the keyring, the
// row group and column it falls in, which is where a verified read of the
// object then fails: exporting that field fails, exporting a field that is
// not there works.
//
// Before: verify and check took exactly one storage_id, and a damaged
// object's error said only "the bytes do not match the storage_id".
func TestVerifyMany(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, b, c := e.demoObject(300_000), e.demoObject(2000), e.demoObject(3000)
	fi, err := os.Stat(filepath.Join(e.store, a+".data"))
	if err != nil {
		t.Fatal(err)
	}
	off := fi.Size() / 3
	damage(t, e.store, a, off)
	ids := []string{a, b, c}
	sorted := slices.Sorted(slices.Values(ids))

	r := e.fails(exitVerify, []string{"1 of 3 objects failed verification"}, "verify", a, b, c)
	for _, id := range []string{b, c} {
		if !strings.Contains(r.stdout, id+": every byte matches its storage_id") {
			t.Errorf("verify of several: no line for %s:\n%s", id, r.stdout)
		}
	}
	if !strings.Contains(r.stdout, a+": FAILED: the bytes do not match the storage_id") || !strings.Contains(r.stdout, "3 objects: 2 verified, 1 failed\n") {
		t.Errorf("verify of several:\n%s", r.stdout)
	}
	all := e.fails(exitVerify, []string{"1 of 3 objects failed verification"}, "verify", "--all")
	if !sameLines(all.stdout, r.stdout) {
		t.Errorf("verify --all:\n%s\nverify a b c:\n%s", all.stdout, r.stdout)
	}
	if got := idsIn(all.stdout); !slices.Equal(got, sorted) {
		t.Errorf("verify --all reports %v, want every object in order %v", got, sorted)
	}

	// --json: every object, the damaged one with its range and where.
	var sum verifySummary
	r = e.sop("verify", "--all", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil || r.code != exitVerify {
		t.Fatalf("verify --all --json: %v\n%s", err, r)
	}
	if sum.Total != 3 || sum.Verified != 2 || sum.Failed != 1 || len(sum.Objects) != 3 {
		t.Fatalf("verify --all --json: %+v", sum)
	}
	var bad verifyResult
	for _, o := range sum.Objects {
		if o.StorageID == a {
			bad = o
		} else if !o.Verified || o.Error != "" {
			t.Errorf("verify --json: %+v", o)
		}
	}
	d := bad.Damaged
	if bad.Verified || bad.Code != exitVerify || d == nil || d.Proof || d.Offset > off || d.Offset+d.Length <= off || d.Length > 16<<10 {
		t.Fatalf("verify --json of the object damaged at %d: %+v", off, bad)
	}
	// The regions tile the damaged range; one holds the byte.
	var holder *locationJSON
	for i, l := range bad.Location {
		if l.Offset >= d.Offset+d.Length || l.Offset+l.Length <= d.Offset {
			t.Errorf("location %+v is outside the damaged range %+v", l, *d)
		}
		if l.Offset <= off && off < l.Offset+l.Length {
			holder = &bad.Location[i]
		}
	}
	if holder == nil || holder.Part != "column chunk" || holder.FieldID == nil || holder.RowGroup == nil {
		t.Fatalf("no column chunk holds the damaged byte %d: %+v", off, bad.Location)
	}
	located := map[int32]bool{}
	for _, l := range bad.Location {
		if l.FieldID != nil {
			located[*l.FieldID] = true
		}
	}
	e.fails(exitVerify, []string{a}, "export", a, "--format", "csv", "--fields", fmt.Sprint(*holder.FieldID))
	for f := int32(1); f <= 5; f++ {
		if !located[f] {
			e.ok("export", a, "--format", "csv", "--fields", fmt.Sprint(f))
			break
		}
	}

	// One object: one error line, with the range and where it falls.
	where := fmt.Sprintf("row group %d, column %s (field %d)", *holder.RowGroup, holder.Column, *holder.FieldID)
	rng := fmt.Sprintf("first damaged range: bytes [%d, %d)", d.Offset, d.Offset+d.Length)
	e.fails(exitVerify, []string{a, "do not match the storage_id", rng, where}, "verify", a)
	// Without a keyring, the range alone.
	r = e.run([]string{"SOP_PME_STORE=" + e.store, "XDG_CONFIG_HOME=" + t.TempDir()}, "verify", a)
	checkFailure(t, r, exitVerify, []string{rng}, []string{"verify", a})
	if strings.Contains(r.stderr, "row group") {
		t.Errorf("verify without a keyring names a row group:\n%s", r)
	}

	// check: a report for each, a summary, the gravest code.
	r = e.fails(exitVerify, []string{"1 of 3 objects failed the check"}, "check", "--all")
	if len(regexp.MustCompile(`(?m)^a conformant SOP-PME-1 object$`).FindAllString(r.stdout, -1)) != 2 || !strings.Contains(r.stdout, "3 objects: 2 conformant, 1 failed\n") {
		t.Errorf("check --all:\n%s", r.stdout)
	}
	e.fails(exitVerify, []string{a, rng, where}, "check", a)
	var csum checkSummary
	r = e.sop("check", "--json", b, a[:12])
	if err := json.Unmarshal([]byte(r.stdout), &csum); err != nil || csum.Total != 2 || csum.Failed != 1 || csum.Objects[1].Damaged == nil {
		t.Errorf("check --json b a: %v %+v\n%s", err, csum, r)
	}
	// A missing object among good ones: exit 3; with a damaged one, 4.
	unknown := storageid.Sum([]byte("none")).String()
	e.fails(exitNotFound, []string{"1 of 2 objects failed verification"}, "verify", b, unknown)
	e.fails(exitVerify, []string{"2 of 3 objects failed verification"}, "verify", unknown, a, b)
	// Neither IDs nor --all, or both: usage.
	e.fails(exitUsage, []string{"one or more storage_ids, or --all"}, "verify")
	e.fails(exitUsage, []string{"one or more storage_ids, or --all"}, "check", "--all", a)
}

// idsIn returns the storage_ids that begin the lines of out, in order.
func idsIn(out string) []string {
	var ids []string
	for _, l := range strings.Split(out, "\n") {
		if m := storageIDPrefix.FindString(l); m != "" {
			ids = append(ids, m[:64])
		}
	}
	return ids
}

var storageIDPrefix = regexp.MustCompile(`^[0-9a-f]{64}:`)

// sameLines reports whether a and b hold the same lines, in any order.
func sameLines(a, b string) bool {
	x, y := strings.Split(a, "\n"), strings.Split(b, "\n")
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// TestExportTable: the table says "the first N rows (more with --limit)"
// only when rows were cut, and on a terminal it starts on a line of its
// own, after the progress bar is cleared.
//
// Before: "the first 100 rows (more with --limit)" for all 100 rows of an
// object exported with --limit 100 (and the first 40 of 40 by default),
// and on a terminal the table's first line began after the bar's text
// ("| export (2.7 MB/s) [0s] ┌───").
func TestExportTable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	small := e.demoObject(40)
	big := e.demoObject(300_000)
	for _, c := range []struct {
		id, limit, want string
	}{
		{small, "", "\n40 rows\n"},
		{small, "40", "\n40 rows\n"},
		{small, "100", "\n40 rows\n"},
		{small, "39", "\nthe first 39 rows (more with --limit)\n"},
		{small, "3", "\nthe first 3 rows (more with --limit)\n"},
		{big, "", "\nthe first 40 rows (more with --limit)\n"},
		{big, "32768", "\nthe first 32768 rows (more with --limit)\n"}, // a row group's end
	} {
		args := []string{"export", c.id, "--format", "table"}
		if c.limit != "" {
			args = append(args, "--limit", c.limit)
		}
		r := e.ok(args...)
		if !strings.HasSuffix(r.stdout, c.want) {
			t.Errorf("sop-pme %s: the table ends with %q, want %q", strings.Join(args, " "), r.stdout[max(0, len(r.stdout)-60):], c.want)
		}
	}
	// At a terminal: the bar is drawn while the object is read, and
	// cleared before the table.
	r := runTTY(t, e.binary(), "", append(slices.Clone(e.vars), "SOP_PME_STORE="+e.store), "", "export", big, "--limit", "3")
	at := strings.Index(r.stdout, "┌")
	if r.code != 0 || at < 0 {
		t.Fatalf("export at a terminal: %s", r)
	}
	before := r.stdout[:at]
	line := before[strings.LastIndex(before, "\n")+1:]
	if shown := line[strings.LastIndex(line, "\r")+1:]; strings.TrimSpace(shown) != "" {
		t.Errorf("the table's first line starts after %q", shown)
	}
	if !strings.Contains(before, "export") {
		t.Errorf("no progress bar was drawn before the table (so the test shows nothing): %q", before)
	}
	if !strings.Contains(r.stdout, "the first 3 rows (more with --limit)") {
		t.Errorf("export at a terminal:\n%s", r.stdout)
	}
}

// TestDemoKeys: demo says where its KEK and keyring are, that the defaults
// are shared by every store, and how to keep a demo apart; the way it
// gives does keep one apart: a KEK and keyring of its own, and nothing of
// the defaults touched. Its hints then carry what they need to read the
// object.
//
// Before: demo said where the KEK was, not that every store shares it, nor
// how to keep a demo apart.
func TestDemoKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.ok("demo", "--rows", "10")
	for _, want := range []string{e.kekPath(), e.ringPath(), "shared by every store"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("demo with the default keys does not say %q:\n%s", want, r.stdout)
		}
	}
	defaults := tree(t, e.conf)
	// Each way demo gives to keep a demo apart, with DIR a new directory.
	ways := regexp.MustCompile(`(?m)^  ((SOP_PME_KEK_FILE=DIR/kek )?(sop-pme demo|make demo)( --kek DIR/kek)?)$`).FindAllStringSubmatch(r.stdout, -1)
	if len(ways) != 2 {
		t.Fatalf("demo gives %d ways to keep a demo apart, want --kek and SOP_PME_KEK_FILE:\n%s", len(ways), r.stdout)
	}
	for _, w := range ways {
		dir := filepath.Join(t.TempDir(), "demo-keys")
		line := strings.ReplaceAll(w[1], "DIR", dir)
		words, _ := shWords(line)
		var vars []string
		for len(words) > 0 && strings.Contains(words[0], "=") {
			vars, words = append(vars, words[0]), words[1:]
		}
		if words[0] == "make" {
			// make demo is bin/sop-pme demo --store ./demo-store: the
			// command it runs, with the same environment.
			words = []string{"sop-pme", "demo"}
		}
		r := e.run(append(vars, "SOP_PME_STORE="+filepath.Join(t.TempDir(), "store")), append(words[1:], "--rows", "10")...)
		if r.code != 0 {
			t.Fatalf("%s: %s", line, r)
		}
		for _, f := range []string{"kek", "keyring"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Errorf("%s: no %s in %s: %v", line, f, dir, err)
			}
			if !strings.Contains(r.stdout, filepath.Join(dir, f)) {
				t.Errorf("%s: the output does not say %s:\n%s", line, filepath.Join(dir, f), r.stdout)
			}
		}
		if after := tree(t, e.conf); !slices.Equal(after, defaults) {
			t.Errorf("%s changed the default keys:\nbefore %v\nafter  %v", line, defaults, after)
		}
		// The hint works as printed (with its environment, if any).
		hint := regexp.MustCompile(`(?m)^  (.*sop-pme export  --store .*)$`).FindStringSubmatch(r.stdout)
		if hint == nil {
			t.Fatalf("%s: no export hint:\n%s", line, r.stdout)
		}
		hw, _ := shWords(hint[1])
		var hv []string
		for len(hw) > 0 && strings.Contains(hw[0], "=") {
			hv, hw = append(hv, hw[0]), hw[1:]
		}
		if hr := e.run(hv, hw[1:]...); hr.code != 0 || !strings.Contains(hr.stdout, "customer-00001") {
			t.Errorf("the hint %q after %s: %s", hint[1], line, hr)
		}
	}
}
