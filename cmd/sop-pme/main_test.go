package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The tests run the command as a user does: a binary built from this
// package, in child processes, checking exit codes, stdout and stderr.
// Each binary is built on first use, once per test binary, into TestMain's
// directory: a run of some of the tests builds only the binaries they run
// (the tagged run of the TestSQL tests, only sqlBinary).
var (
	binDir string // TestMain's directory of the builds

	sopBinary   = builder("sop-pme", "")               // go build .
	crashBinary = builder("sop-pme-crash", "sopcrash") // keys rotate dies on cue
	// sqlBinary, with DuckDB, is declared in sql_test.go (tag duckdb).
)

// builder returns a function that builds sop-pme with the build tags into
// binDir/name on its first call and returns the binary's path; a failed
// build fails every test that asks for the binary.
func builder(name, tags string) func(t testing.TB) string {
	build := sync.OnceValues(func() (string, error) {
		out := filepath.Join(binDir, name)
		// -buildvcs=auto: the VCS revision, where the toolchain finds a
		// checkout, whatever GOFLAGS says (sop-pme version reports it).
		cmd := exec.Command("go", "build", "-buildvcs=auto", "-tags", tags, "-o", out, ".")
		if b, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go build -tags %q: %v\n%s", tags, err, b)
		}
		return out, nil
	})
	return func(t testing.TB) string {
		t.Helper()
		bin, err := build()
		if err != nil {
			t.Fatalf("building %s: %v", name, err)
		}
		return bin
	}
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sop-pme-test-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// env is an isolated user: a configuration directory of its own (where the
// default KEK and keyring go), a home, no SOP_PME_* variables from the
// test's environment, and a store path.
type env struct {
	t     *testing.T
	conf  string
	store string
	vars  []string
	bin   string // the binary the env runs ("": sopBinary); see binary
	stdin io.Reader
	dir   string // the working directory of the command ("": the test's)
}

func newEnv(t *testing.T) *env {
	t.Helper()
	root := t.TempDir()
	e := &env{t: t, conf: filepath.Join(root, "config"), store: filepath.Join(root, "store")}
	e.vars = []string{"XDG_CONFIG_HOME=" + e.conf, "HOME=" + filepath.Join(root, "home"), "PATH=" + os.Getenv("PATH")}
	return e
}

// binary returns the binary the env runs: e.bin, or sopBinary, built on
// first use (so that an env of the tests of another build builds none).
func (e *env) binary() string {
	if e.bin != "" {
		return e.bin
	}
	return sopBinary(e.t)
}

// kekPath is the default KEK file of the env.
func (e *env) kekPath() string  { return filepath.Join(e.conf, "sop-pme", "kek") }
func (e *env) ringPath() string { return filepath.Join(e.conf, "sop-pme", "keyring") }

type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// run runs the command (bounded to two minutes) with the env's variables
// plus extra ("NAME=value").
func (e *env) run(extra []string, args ...string) result {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.binary(), args...)
	cmd.Env = append(slices.Clone(e.vars), extra...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Stdin = e.stdin
	cmd.Dir = e.dir
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatal(err)
	}
	return result{code, stdout.String(), stderr.String()}
}

// sop runs the command against the env's store.
func (e *env) sop(args ...string) result {
	e.t.Helper()
	return e.run([]string{"SOP_PME_STORE=" + e.store}, args...)
}

// ok runs the command and fails the test unless it exits 0.
func (e *env) ok(args ...string) result {
	e.t.Helper()
	r := e.sop(args...)
	if r.code != 0 {
		e.t.Fatalf("sop-pme %s: %s", strings.Join(args, " "), r)
	}
	return r
}

// fails runs the command and checks that it exits with code, printing one
// line on stderr that contains each of want.
func (e *env) fails(code int, want []string, args ...string) result {
	e.t.Helper()
	r := e.sop(args...)
	checkFailure(e.t, r, code, want, args)
	return r
}

func checkFailure(t *testing.T, r result, code int, want []string, args []string) {
	t.Helper()
	if r.code != code {
		t.Errorf("sop-pme %s: exit %d, want %d\n%s", strings.Join(args, " "), r.code, code, r)
		return
	}
	lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
	last := lines[len(lines)-1]
	if i := slices.Index(args, "--json"); i >= 0 && !slices.Contains(args[:i], "--") {
		// Under --json the error is a JSON object: {"error": the line
		// less its prefix, "code": the exit code}. Check the line in it.
		var je jsonError
		dec := json.NewDecoder(strings.NewReader(last))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&je); err != nil || je.Code != r.code || je.Error == "" {
			t.Errorf("sop-pme %s: under --json, the error line %q is not {\"error\": ..., \"code\": %d}: %v", strings.Join(args, " "), last, r.code, err)
			return
		}
		last = "sop-pme: " + je.Error
	}
	if !strings.HasPrefix(last, "sop-pme: ") {
		t.Errorf("sop-pme %s: the error line %q lacks the prefix", strings.Join(args, " "), last)
	}
	if strings.HasPrefix(last, "sop-pme: sop-pme") {
		t.Errorf("sop-pme %s: the error line %q has the prefix twice", strings.Join(args, " "), last)
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "sop-pme: ") && l != last && !strings.Contains(l, "warning") && !strings.Contains(l, "not shown") {
			t.Errorf("sop-pme %s: more than one error line:\n%s", strings.Join(args, " "), r.stderr)
		}
	}
	for _, w := range want {
		if !strings.Contains(last, w) {
			t.Errorf("sop-pme %s: the error line %q lacks %q", strings.Join(args, " "), last, w)
		}
	}
	if p := pkgPrefix.FindString(strings.TrimPrefix(last, "sop-pme: ")); p != "" {
		t.Errorf("sop-pme %s: the error line %q repeats a package prefix %q", strings.Join(args, " "), last, p)
	}
}

// pkgPrefix matches the package prefixes of the library's errors, which the
// command's error lines must not repeat.
var pkgPrefix = regexp.MustCompile(`(^|[^-\w/.])(reader|verify|keyring|blobs|pme|writer|formats|sopsql): `)

var storageIDLine = regexp.MustCompile(`storage_id\s+([0-9a-f]{64})`)

// importJSON imports path with extra flags and returns the result.
func (e *env) importJSON(path string, flags ...string) importResult {
	e.t.Helper()
	r := e.ok(append([]string{"import", "--json", path}, flags...)...)
	var res importResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		e.t.Fatalf("import --json: %v\n%s", err, r)
	}
	return res
}

// tree lists every file and directory under the given roots, with sizes.
func tree(t *testing.T, roots ...string) []string {
	t.Helper()
	var out []string
	for _, root := range roots {
		filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
			if err == nil {
				out = append(out, fmt.Sprintf("%s %d", p, fi.Size()*int64(map[bool]int{true: 0, false: 1}[fi.IsDir()])))
			}
			return nil
		})
	}
	slices.Sort(out)
	return out
}
