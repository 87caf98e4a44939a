package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// repoRoot is the root of the clone the command is built from, where the
// README's install lines run.
const repoRoot = "../.."

// A readmeLine is one command of a sh block of the README, split into
// words as sh would (quotes removed, the comment dropped), with its
// redirection of stdout, if any.
type readmeLine struct {
	text  string
	words []string
	out   string // "> FILE"
}

// readmeCommands returns the commands of README.md's sh blocks, in order.
func readmeCommands(t *testing.T) []readmeLine {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []readmeLine
	in := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "```"):
			in = !in && strings.TrimPrefix(l, "```") == "sh"
			continue
		case !in || strings.TrimSpace(l) == "":
			continue
		}
		words, err := shWords(l)
		if err != nil {
			t.Fatalf("README: %q: %v", l, err)
		}
		rl := readmeLine{text: l}
		for i := 0; i < len(words); i++ {
			if words[i] == ">" && i+1 < len(words) {
				rl.out = words[i+1]
				i++
				continue
			}
			rl.words = append(rl.words, words[i])
		}
		if len(rl.words) > 0 {
			lines = append(lines, rl)
		}
	}
	if len(lines) == 0 {
		t.Fatal("README.md has no sh block")
	}
	return lines
}

// shWords splits a line of sh into words: blanks separate words outside
// quotes, '…' and "…" quote (no expansion is needed by the README), and an
// unquoted # at the start of a word begins a comment.
func shWords(line string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case c == '#' && !inWord:
			return words, nil
		case c == '\'' || c == '"':
			j := strings.IndexByte(line[i+1:], c)
			if j < 0 {
				return nil, errors.New("unterminated quote")
			}
			w.WriteString(line[i+1 : i+1+j])
			i += j + 1
			inWord = true
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}

// withDryRun returns a go install command line with -n (print the
// commands, run none) before its package argument, keeping every flag
// where the README puts it.
func withDryRun(words []string) []string {
	return slices.Concat(words[:len(words)-1], []string{"-n"}, words[len(words)-1:])
}

// TestREADME runs the README's shell commands, as a user at a terminal
// would, in a directory of its own: the install line (go install, into a
// directory of the test's), then each sop-pme command with the binary it
// installed, against a store in that directory, with ID the storage_id of
// the first import; orders.parquet and data.csv are made first. Each must
// exit 0, except sql, which in a build without DuckDB must exit 1 saying how
// to build one, and that build line runs too (dry: go install -n; the
// tagged test run, TestSQLREADME, runs the sql lines with DuckDB). Lines
// that cannot run here are only the make targets (make test runs this test;
// make demo writes into the clone) and lines with a "..." placeholder.
//
// Before: the SQL install line, go install -tags duckdb -C cmd/sop-pme .,
// failed with "-C flag must be first flag on command line".
func TestREADME(t *testing.T) {
	t.Parallel()
	runREADME(t, "")
}

// runREADME runs the README's commands (see TestREADME) with the binary
// its install line installs, or, if bin is not "", with bin (a build with
// DuckDB, whose sql commands must then succeed), every install line then
// checked without building.
func runREADME(t *testing.T, bin string) {
	lines := readmeCommands(t)
	e := newEnv(t)
	work := t.TempDir()
	e.dir = work
	gobin := filepath.Join(t.TempDir(), "bin")
	sop := ""
	id := ""
	recipient := ""
	vars := slices.Clone(e.vars)
	makeInputs(t, e, work)
	ran := 0
	for _, l := range lines {
		w := l.words
		switch {
		case w[0] == "make":
			t.Logf("not run here (make): %s", l.text)
			continue
		case slices.ContainsFunc(w, func(s string) bool { return strings.Contains(s, "...") }):
			t.Logf("not run here (a placeholder): %s", l.text)
			continue
		case w[0] == "export" && len(w) == 2 && strings.Contains(w[1], "="):
			vars = append(vars, w[1])
			continue
		case w[0] == "go" && len(w) > 1 && w[1] == "install":
			args := w[1:]
			sql := slices.Contains(w, "duckdb")
			if sql || bin != "" {
				// A DuckDB build takes minutes: its flags and packages
				// are checked without building; the tagged test run
				// (make cli) builds and runs it.
				args = withDryRun(w)[1:]
			}
			cmd := exec.Command("go", args...)
			cmd.Dir = repoRoot
			cmd.Env = append(os.Environ(), "GOBIN="+gobin)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("README: %s: %v\n%s", l.text, err, out)
			}
			switch {
			case bin != "":
				sop = bin
			case !sql:
				sop = filepath.Join(gobin, "sop-pme")
				if _, err := os.Stat(sop); err != nil {
					t.Fatalf("README: %s installed no sop-pme in GOBIN: %v", l.text, err)
				}
			}
			ran++
			continue
		case w[0] != "sop-pme":
			t.Fatalf("README: a command the test does not know how to run: %s", l.text)
		}
		if sop == "" {
			t.Fatalf("README: %s comes before any install line", l.text)
		}
		args := slices.Clone(w[1:])
		for i, a := range args {
			args[i] = strings.ReplaceAll(a, "ID", id)
			if a == "RECIPIENT" {
				args[i] = recipient
			}
		}
		r := runTTY(t, sop, work, vars, l.out, args...)
		switch {
		case w[1] == "sql" && bin == "":
			if r.code != exitFailure || !strings.Contains(r.stdout, "this build has no SQL; build with: go install") {
				t.Errorf("README: %s: %s", l.text, r)
			}
		case r.code != 0:
			t.Errorf("README: %s: %s", l.text, r)
		}
		if w[1] == "import" && id == "" {
			if m := storageIDLine.FindStringSubmatch(r.stdout); m != nil {
				id = m[1]
			} else {
				t.Fatalf("README: %s printed no storage_id:\n%s", l.text, r)
			}
		}
		if len(w) > 2 && w[1] == "keys" && w[2] == "identity" {
			// keys grant --to RECIPIENT: the one printed (here, this
			// node's own: the grant is accepted where it was made).
			recipient = ageRecipient.FindString(r.stdout)
		}
		if w[1] == "rm" {
			// The object is gone: the lines after it use a new one.
			r := runTTY(t, sop, work, vars, "", "import", "orders.parquet")
			m := storageIDLine.FindStringSubmatch(r.stdout)
			if r.code != 0 || m == nil {
				t.Fatalf("importing orders.parquet again after %s: %s", l.text, r)
			}
			id = m[1]
		}
		ran++
	}
	if sop == "" || id == "" || ran < 10 {
		t.Fatalf("the README's commands ran %d lines, installed %q, imported %q", ran, sop, id)
	}
}

// ageRecipient matches an age X25519 recipient, as keys identity prints it.
var ageRecipient = regexp.MustCompile(`age1[02-9ac-hj-np-z]{58}`)

// makeInputs writes the README's example inputs into dir: orders.parquet (the
// demo's table of orders, every field with a field ID) and data.csv.
func makeInputs(t *testing.T, e *env, dir string) {
	t.Helper()
	src := newEnv(t)
	oid := src.demoObject(500)
	src.ok("export", oid, "-o", filepath.Join(dir, "orders.parquet"))
	os.WriteFile(filepath.Join(dir, "data.csv"), []byte("customer,amount,paid\nada,12,true\nbob,7,false\n"), 0o600)
}

// runTTY runs bin with args in dir, its stdin, stdout and stderr on a
// pseudo-terminal, as at a user's terminal (stdout to the file out instead,
// if out is not ""), bounded to two minutes. The result's stdout holds
// what the terminal showed, with "\r\n" as "\n".
func runTTY(t *testing.T, bin, dir string, env []string, out string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env = dir, env
	if out != "" {
		f, err := os.OpenFile(filepath.Join(dir, out), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd.Stdout = f
	}
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: 160})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	done := make(chan struct{})
	go func() {
		io.Copy(&buf, tty) // until the terminal closes (EIO once the child exits)
		close(done)
	}()
	err = cmd.Wait()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
	tty.Close()
	<-done
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = -1
		}
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code: code, stdout: strings.ReplaceAll(buf.String(), "\r\n", "\n")}
}
