package main

import (
	"encoding/json"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// goVersionM returns what the Go toolchain reads from a binary's build
// information (go version -m): the main module's version and the build
// settings.
func goVersionM(t *testing.T, bin string) (version string, settings map[string]string) {
	t.Helper()
	out, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatalf("go version -m %s: %v", bin, err)
	}
	settings = map[string]string{}
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Split(strings.TrimSpace(l), "\t")
		switch {
		case len(f) >= 3 && f[0] == "mod":
			version = f[2]
		case len(f) == 2 && f[0] == "build":
			k, v, _ := strings.Cut(f[1], "=")
			settings[k] = v
		}
	}
	return version, settings
}

// checkVersion runs --version, version and version --json with bin and
// checks them against the toolchain's reading of the binary (go version
// -m) and, if it recorded a revision, against git; sql says whether bin
// is a build with DuckDB.
func checkVersion(t *testing.T, bin string, sql bool) {
	e := newEnv(t)
	e.bin = bin
	flag, cmd := e.ok("--version"), e.ok("version")
	if flag.stdout != cmd.stdout || !strings.HasPrefix(flag.stdout, "sop-pme ") {
		t.Errorf("--version and version differ:\n%s\n%s", flag.stdout, cmd.stdout)
	}
	var b buildInfo
	r := e.ok("version", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &b); err != nil {
		t.Fatalf("version --json: %v\n%s", err, r)
	}
	mv, set := goVersionM(t, bin)
	if b.Version != mv || b.Go != runtime.Version() || b.Revision != set["vcs.revision"] ||
		b.Modified != (set["vcs.modified"] == "true") || b.Tags != set["-tags"] || b.SQL != sql || b.Iroh {
		t.Errorf("version --json says %+v; go version -m says version %s, settings %v (the test's Go: %s, sql %v)", b, mv, set, runtime.Version(), sql)
	}
	for _, want := range []string{"sop-pme " + mv, runtime.Version(), map[bool]string{true: "sql       yes", false: "sql       no"}[sql], "iroh      no"} {
		if !strings.Contains(cmd.stdout, want) {
			t.Errorf("version lacks %q:\n%s", want, cmd.stdout)
		}
	}
	if b.Revision == "" {
		if !strings.Contains(cmd.stdout, "revision  unknown") {
			t.Errorf("version of a build without a VCS revision:\n%s", cmd.stdout)
		}
		return
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("the build recorded revision %s, and git rev-parse HEAD fails: %v", b.Revision, err)
	}
	if rev := strings.TrimSpace(string(head)); b.Revision != rev || !strings.Contains(cmd.stdout, "revision  "+rev) {
		t.Errorf("version says revision %s; git HEAD is %s\n%s", b.Revision, rev, cmd.stdout)
	}
}

// TestVersion: sop-pme --version and sop-pme version say what the build
// recorded (runtime/debug.ReadBuildInfo): the module version, the VCS
// revision, the Go version, and that this build has no SQL and no iroh.
//
// Before: both were usage errors (exit 2), "unknown flag: --version" and
// "unknown command "version"".
func TestVersion(t *testing.T) {
	t.Parallel()
	checkVersion(t, sopBinary(t), false)
}
