//go:build !duckdb

package main

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestSQLNotBuilt: a build without the duckdb tag has the sql command, which
// exits 1 with one line saying how to build one with SQL, whatever its
// command line (as JSON under --json); its help says so too. The build line
// it gives works: go install with it, run without building (-n), succeeds
// from the clone (before: "go install -tags duckdb -C cmd/sop-pme ." failed
// with "-C flag must be first flag on command line").
func TestSQLNotBuilt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const lead = "sop-pme: this build has no SQL; build with: "
	r := e.run(nil, "sql", "SELECT 1")
	if r.code != exitFailure || !strings.HasPrefix(r.stderr, lead) || strings.Count(r.stderr, "\n") != 1 || r.stdout != "" {
		t.Fatalf("sop-pme sql SELECT 1: want exit 1 and one line %q...\n%s", lead, r)
	}
	hint := strings.TrimSpace(strings.TrimPrefix(r.stderr, lead))
	words, err := shWords(hint)
	if err != nil || len(words) < 3 || words[0] != "go" || words[1] != "install" {
		t.Fatalf("the build line %q is not a go install command", hint)
	}
	cmd := exec.Command("go", withDryRun(words)[1:]...)
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("the build line %q, run from the clone with -n: %v\n%s", hint, err, out)
	}
	want := r.stderr
	for _, args := range [][]string{
		{"sql"},
		{"sql", "SELECT 1", "SELECT 2"},
		{"sql", "--frob", "SELECT 1"},
		{"sql", "--view", "orders=not-an-id", "SELECT 1"},
		{"sql", "--store", "/nonexistent/store", "SELECT 1"},
	} {
		r := e.run(nil, args...)
		if r.code != exitFailure || r.stderr != want || r.stdout != "" {
			t.Errorf("sop-pme %s: want exit 1 and %q\n%s", strings.Join(args, " "), want, r)
		}
	}
	wantJSON, _ := jsonLine(jsonError{Error: strings.TrimPrefix(strings.TrimSpace(want), "sop-pme: "), Code: exitFailure})
	if r := e.run(nil, "sql", "--csv", "--json", "SELECT 1"); r.code != exitFailure || r.stderr != wantJSON+"\n" || r.stdout != "" {
		t.Errorf("sop-pme sql --csv --json SELECT 1: want exit 1 and %s\n%s", wantJSON, r)
	}
	if r := e.run(nil, "sql", "-h"); r.code != 0 || !strings.Contains(r.stdout, hint) {
		t.Errorf("sop-pme sql -h does not say how to build with SQL (%s):\n%s", hint, r)
	}
	if r := e.run(nil, "-h"); r.code != 0 || !strings.Contains(r.stdout, "(not in this build)") {
		t.Errorf("sop-pme -h does not say that sql is not in this build:\n%s", r)
	}
}

// TestSQLNotBuiltLinksNoDuckDB: the build without the duckdb tag, pure Go,
// depends on no DuckDB package, not on the duckdb module and not on the
// printer of its rows (sqlout); the build with the tag does (so that the
// check can fail).
func TestSQLNotBuiltLinksNoDuckDB(t *testing.T) {
	t.Parallel()
	deps := func(env []string, tags string) []string {
		t.Helper()
		cmd := exec.Command("go", "list", "-e", "-deps", "-tags", tags, ".")
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps -tags %q: %v", tags, err)
		}
		return strings.Fields(string(out))
	}
	duck := func(p string) bool {
		return strings.Contains(p, "duckdb") || strings.HasSuffix(p, "/sqlout")
	}
	if bad := slices.DeleteFunc(deps([]string{"CGO_ENABLED=0"}, ""), func(p string) bool { return !duck(p) }); len(bad) > 0 {
		t.Errorf("the build without the duckdb tag depends on %v", bad)
	}
	tagged := deps(nil, "duckdb")
	for _, want := range []string{"github.com/sovm/sop-pme/duckdb/sopsql", "github.com/sovm/sop-pme/cmd/sop-pme/internal/sqlout", "github.com/duckdb/duckdb-go/v2"} {
		if !slices.Contains(tagged, want) {
			t.Errorf("the build with the duckdb tag does not depend on %s", want)
		}
	}
}
