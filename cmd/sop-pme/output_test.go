package main

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// demoObject writes the demo's sample table of rows rows into the env's
// store and returns its storage_id.
func (e *env) demoObject(rows int) string {
	e.t.Helper()
	r := e.ok("demo", "--rows", strconv.Itoa(rows))
	m := storageIDLine.FindStringSubmatch(r.stdout)
	if m == nil {
		e.t.Fatalf("demo printed no storage_id:\n%s", r)
	}
	return m[1]
}

// TestExportOutputKinds: export -o PATH replaces PATH only when it is a
// regular file (or nothing); a FIFO, a character device, and a symlink's
// target are written in place, and the FIFO, the device node and the
// symlink are still there afterwards. Everything lives in the test's own
// directory: its own FIFO, symlinks, and a device node made with mknod
// (the null device's numbers), never the system's /dev.
//
// Before: -o fifo replaced the FIFO with a regular file (its reader got 0
// bytes, exit 0); -o link replaced the symlink and left its target as it
// was; -o on a device node replaced it with a 0600 regular file.
func TestExportOutputKinds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.demoObject(2000)
	want := e.ok("export", id, "--format", "csv").stdout
	if !strings.HasPrefix(want, "order_id,customer") || strings.Count(want, "\n") != 2001 {
		t.Fatalf("export to stdout:\n%.200s", want)
	}
	dir := t.TempDir()
	export := func(path string) result {
		return e.sop("export", id, "--format", "csv", "-o", path)
	}
	// read returns the file's contents ("" if there is none).
	read := func(path string) string {
		b, _ := os.ReadFile(path)
		return string(b)
	}

	t.Run("new file", func(t *testing.T) {
		p := filepath.Join(dir, "new.csv")
		if r := export(p); r.code != 0 || read(p) != want {
			t.Fatalf("export to a new file: %s", r)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 1 {
			t.Errorf("left beside it: %v", ents)
		}
	})

	t.Run("regular file", func(t *testing.T) {
		p := filepath.Join(dir, "old.csv")
		os.WriteFile(p, []byte("old contents\n"), 0o640)
		os.Chmod(p, 0o640)
		before, _ := os.Lstat(p)
		if r := export(p); r.code != 0 || read(p) != want {
			t.Fatalf("export over a regular file: %s", r)
		}
		after, _ := os.Lstat(p)
		if os.SameFile(before, after) {
			t.Errorf("the regular file was written in place, not replaced by rename")
		}
		if after.Mode() != 0o640 {
			t.Errorf("the replaced file's mode is %v, want -rw-r-----", after.Mode())
		}
	})

	t.Run("FIFO", func(t *testing.T) {
		p := filepath.Join(dir, "fifo")
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
		got := readFIFO(t, p)
		r := export(p)
		if read := got(); r.code != 0 || read != want {
			t.Fatalf("export into a FIFO: the reader got %d bytes, want %d\n%s", len(read), len(want), r)
		}
		isKind(t, p, fs.ModeNamedPipe)
	})

	t.Run("symlink", func(t *testing.T) {
		target := filepath.Join(dir, "target.csv")
		os.WriteFile(target, []byte("old\n"), 0o600)
		link := filepath.Join(dir, "link.csv")
		os.Symlink("target.csv", link)
		if r := export(link); r.code != 0 || read(target) != want {
			t.Fatalf("export through a symlink: the target holds %d bytes\n%s", len(read(target)), r)
		}
		isKind(t, link, fs.ModeSymlink)
		if to, _ := os.Readlink(link); to != "target.csv" {
			t.Errorf("the link points to %q", to)
		}
	})

	t.Run("dangling symlink", func(t *testing.T) {
		link := filepath.Join(dir, "dangling.csv")
		os.Symlink("made.csv", link)
		if r := export(link); r.code != 0 || read(filepath.Join(dir, "made.csv")) != want {
			t.Fatalf("export through a dangling symlink: %s", r)
		}
		isKind(t, link, fs.ModeSymlink)
	})

	t.Run("symlink to FIFO", func(t *testing.T) {
		fifo := filepath.Join(dir, "fifo2")
		syscall.Mkfifo(fifo, 0o600)
		link := filepath.Join(dir, "stdout") // as /dev/stdout is a link
		os.Symlink(fifo, link)
		got := readFIFO(t, fifo)
		r := export(link)
		if read := got(); r.code != 0 || read != want {
			t.Fatalf("export through a link to a FIFO: the reader got %d bytes, want %d\n%s", len(read), len(want), r)
		}
		isKind(t, link, fs.ModeSymlink)
		isKind(t, fifo, fs.ModeNamedPipe)
	})

	t.Run("symlink to the command's stdout", func(t *testing.T) {
		// As /dev/stdout is (through /dev/fd) a link to /proc/self/fd/1:
		// here a link of the test's own, to the child's own stdout, a pipe
		// the test reads.
		link := filepath.Join(dir, "out")
		os.Symlink("/proc/self/fd/1", link)
		r := export(link)
		if r.code != 0 || r.stdout != want {
			t.Fatalf("export through a link to /proc/self/fd/1: stdout got %d bytes, want %d\n%.300s", len(r.stdout), len(want), r)
		}
		isKind(t, link, fs.ModeSymlink)
	})

	t.Run("character device", func(t *testing.T) {
		p := filepath.Join(dir, "null")
		// The null device's numbers (1, 3) on Linux: what is written goes
		// nowhere, and the node must stay a device node.
		err := unix.Mknod(p, unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3)))
		if errors.Is(err, unix.EPERM) {
			if os.Getenv("CI") == "true" {
				t.Fatalf("mknod of a character device in the test's directory: %v: the device case must run under CI (it runs as root)", err)
			}
			t.Skipf("mknod of a character device: %v (needs root): the device case is not tested", err)
		}
		if err != nil {
			t.Fatal(err)
		}
		before, _ := os.Lstat(p)
		if r := export(p); r.code != 0 {
			t.Fatalf("export into a character device: %s", r)
		}
		isKind(t, p, fs.ModeDevice|fs.ModeCharDevice)
		after, _ := os.Lstat(p)
		if !os.SameFile(before, after) || after.Sys().(*syscall.Stat_t).Rdev != before.Sys().(*syscall.Stat_t).Rdev {
			t.Errorf("the device node was replaced")
		}
	})

	t.Run("directory", func(t *testing.T) {
		p := filepath.Join(dir, "adir")
		os.Mkdir(p, 0o700)
		r := export(p)
		checkFailure(t, r, exitFailure, []string{p, "not a regular file, FIFO, character device", "a directory"}, []string{"export", "-o", p})
		if ents, _ := os.ReadDir(p); len(ents) != 0 {
			t.Errorf("export wrote into the directory: %v", ents)
		}
	})

	t.Run("FIFO without a reader", func(t *testing.T) {
		// No reader ever comes: an interrupt ends the wait, with exit
		// code 130, and the FIFO is left as it was.
		p := filepath.Join(dir, "lonely")
		syscall.Mkfifo(p, 0o600)
		cmd := exec.Command(e.binary(), "export", id, "--format", "csv", "-o", p)
		cmd.Env = append(slices.Clone(e.vars), "SOP_PME_STORE="+e.store)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		time.Sleep(500 * time.Millisecond)
		cmd.Process.Signal(os.Interrupt)
		select {
		case err := <-done:
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
				t.Errorf("export into a FIFO nobody reads, interrupted: %v, want exit %d\n%s", err, exitInterrupted, stderr.String())
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Fatal("export into a FIFO nobody reads did not end within 10 s of SIGINT")
		}
		isKind(t, p, fs.ModeNamedPipe)
	})
}

// readFIFO starts reading the FIFO at path, and returns a function that
// waits (30 s at most) for what was read until end of file. If nothing
// opens the FIFO for writing in that time, the reader is released (by an
// open for writing of its own) and the test fails.
func readFIFO(t *testing.T, path string) func() string {
	got := make(chan string, 1)
	go func() {
		f, err := os.Open(path) // blocks until a writer opens it
		if err != nil {
			got <- "open: " + err.Error()
			return
		}
		defer f.Close()
		b, _ := io.ReadAll(f)
		got <- string(b)
	}()
	return func() string {
		t.Helper()
		select {
		case s := <-got:
			return s
		case <-time.After(30 * time.Second):
			if w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				w.Close()
			}
			t.Fatalf("the reader of the FIFO %s got no end of file in 30 s", path)
			return ""
		}
	}
}

// isKind fails the test unless path (not followed) is of the type typ.
func isKind(t *testing.T, path string, typ fs.FileMode) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Type() != typ {
		t.Errorf("%s is now %v, want type %v", path, fi.Mode().Type(), typ)
	}
}

// TestKeysThroughSymlinks: a KEK file and a keyring given as symlinks (to a
// directory kept elsewhere, say) stay symlinks through keys rotate, which
// replaces the KEK file by a rename: the new KEK goes to the link's target,
// and the keyring still opens through the links afterwards.
//
// Before: keys rotate --kek LINK renamed the new KEK over LINK, a regular
// file now, and left the old KEK in the target, which no longer opened the
// keyring (exit 5).
func TestKeysThroughSymlinks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	root := t.TempDir()
	secure, cfg := filepath.Join(root, "secure"), filepath.Join(root, "cfg")
	os.Mkdir(secure, 0o700)
	os.Mkdir(cfg, 0o700)
	kek, ring := filepath.Join(secure, "kek"), filepath.Join(secure, "keyring")
	kekLink, ringLink := filepath.Join(cfg, "kek"), filepath.Join(cfg, "keyring")
	os.Symlink("../secure/kek", kekLink)
	os.Symlink("../secure/keyring", ringLink)
	r := e.ok("demo", "--rows", "10", "--kek", kek, "--keyring", ring)
	id := storageIDLine.FindStringSubmatch(r.stdout)[1]
	old, _ := os.ReadFile(kek)
	for _, args := range [][]string{
		{"keys", "rotate", "--kek", kekLink, "--keyring", ringLink},
		{"keys", "rotate", "--kek", kekLink}, // the keyring beside the link
	} {
		e.ok(args...)
		isKind(t, kekLink, fs.ModeSymlink)
		isKind(t, ringLink, fs.ModeSymlink)
		isKind(t, kek, 0)
		if now, _ := os.ReadFile(kek); len(now) != 32 || bytes.Equal(now, old) {
			t.Fatalf("keys rotate %v: the KEK in the link's target was not replaced", args[2:])
		}
		old, _ = os.ReadFile(kek)
		for _, k := range [][]string{{"--kek", kek, "--keyring", ring}, {"--kek", kekLink}} {
			if r := e.sop(append([]string{"export", id, "--format", "csv"}, k...)...); r.code != 0 {
				t.Fatalf("after keys rotate %v, export %v: %s", args[2:], k, r)
			}
		}
	}
	if ents, _ := os.ReadDir(cfg); len(ents) != 2 {
		var names []string
		for _, d := range ents {
			names = append(names, d.Name())
		}
		t.Errorf("the links' directory holds %v, want only the two links", names)
	}
}
