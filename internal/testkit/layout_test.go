package testkit_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const (
	module  = "github.com/sovm/sop-pme"
	testkit = module + "/internal/testkit"
)

// goList runs go list with args in dir, outside any go.work (each module as
// its go.mod describes it), and returns the import paths it prints.
func goList(t *testing.T, dir string, args ...string) []string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go list needs the go command: %v", err)
	}
	cmd := exec.Command(gobin, append([]string{"list"}, args...)...)
	cmd.Dir = dir
	// CGO_ENABLED=1: what the cgo builds ship (DuckDB and iroh link through
	// cgo), whether or not this test runs with cgo (make purego runs it
	// with CGO_ENABLED=0, under which the DuckDB bindings have no files).
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=", "CGO_ENABLED=1")
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list %s in %s: %v\n%s", strings.Join(args, " "), dir, err, stderr)
	}
	return strings.Fields(string(out))
}

func inTestkit(path string) bool {
	return path == testkit || strings.HasPrefix(path, testkit+"/")
}

// TestLayout checks what internal/ says (README.md, "Packages"): nothing
// under internal/testkit is compiled into the library or the sop-pme
// command, and every other package under internal/ is. The shipped
// packages are the non-test dependencies (go list -deps) of the library's
// public packages (with and without the iroh tag) and of the command (with
// and without DuckDB).
func TestLayout(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	all := goList(t, root, "./...")
	var public, internal []string
	for _, p := range all {
		if strings.HasPrefix(p, module+"/internal/") {
			internal = append(internal, p)
		} else {
			public = append(public, p)
		}
	}
	if len(public) < 8 {
		t.Fatalf("go list ./... found %d public packages: %v", len(public), public)
	}
	shipped := map[string][]string{} // package → the builds that ship it
	add := func(build string, deps []string) {
		if len(deps) == 0 {
			t.Fatalf("%s: go list -deps found nothing", build)
		}
		for _, d := range deps {
			shipped[d] = append(shipped[d], build)
		}
	}
	add("library", goList(t, root, append([]string{"-deps"}, public...)...))
	add("library -tags iroh", goList(t, root, append([]string{"-deps", "-tags", "iroh"}, public...)...))
	cli := filepath.Join(root, "cmd", "sop-pme")
	add("sop-pme", goList(t, cli, "-deps", "."))
	add("sop-pme -tags duckdb", goList(t, cli, "-deps", "-tags", "duckdb", "."))

	for p, builds := range shipped {
		if inTestkit(p) {
			t.Errorf("%s is test support, but %s compiles it in", p, strings.Join(builds, " and "))
		}
	}
	var kit []string
	for _, p := range internal {
		switch {
		case inTestkit(p):
			kit = append(kit, p)
		case shipped[p] == nil:
			t.Errorf("%s is in internal/ but no build ships it: test support goes under internal/testkit", p)
		}
	}
	// The check above could not fail if nothing were in testkit, or if go
	// list -deps did not see what imports it: the tests do.
	if len(kit) < 6 {
		t.Fatalf("internal/testkit holds %d packages: %v", len(kit), kit)
	}
	withTests := goList(t, root, append([]string{"-deps", "-test"}, public...)...)
	if !slices.ContainsFunc(withTests, inTestkit) {
		t.Fatal("go list -deps -test of the library finds no testkit package: the check sees nothing")
	}
}
