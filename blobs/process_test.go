package blobs_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
)

// The tests in this file run real processes on one store: the test binary
// itself, re-executed with childEnv set, runs TestHelperProcess, which does
// what its arguments say and reports on stdout, one line per event.

const (
	childEnv = "BLOBS_TEST_CHILD"
	// childLifetime bounds every child process: past it, it exits with
	// status 3 whatever it is doing.
	childLifetime = 60 * time.Second
	// lineTimeout bounds how long the parent waits for a child's line.
	lineTimeout = 45 * time.Second
)

// objectBytes is the object of a seed: its size varies with the seed, from
// one to several 16 KiB groups.
func objectBytes(seed uint64) []byte {
	return randBytes(int(seed%5)*verify.GroupSize+int(seed%7)*1000+100, seed)
}

// TestHelperProcess is not a test: it is the body of the child processes.
// Arguments after "--": an action, the store's path, and the action's own.
//
//	import SEED [PAUSE]  import objectBytes(SEED); PAUSE "write" stops half
//	                     way through the writes, any other PAUSE at that
//	                     Commit step: print "paused", and wait for a line on
//	                     stdin. Print "committed ID".
//	open rw|ro           OpenDir, read-write or read-only; print "opened".
//	imports SEED...      wait for a line on stdin, import each object,
//	                     print "committed ID" for each.
//	import-loop SEED N   wait for a line, import the object N times.
//	delete-loop SEED STOP
//	                     wait for a line, Delete the object again and again
//	                     until the file STOP exists (20 s at most); print
//	                     "deleted K" with K the deletes that found it.
//	verify-loop SEED STOP
//	                     read-only: likewise, Verify the object; every
//	                     result must be nil or ErrNotFound, and the object's
//	                     data must never be seen without its outboard.
//
// On error it prints "error MESSAGE" and exits 1.
func TestHelperProcess(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		return // run as a test: nothing to do
	}
	time.AfterFunc(childLifetime, func() {
		fmt.Fprintln(os.Stderr, "child: lifetime exceeded")
		os.Exit(3)
	})
	args := os.Args
	for len(args) > 0 && args[0] != "--" {
		args = args[1:]
	}
	if err := child(args[1:]); err != nil {
		fmt.Printf("error %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func child(args []string) error {
	ctx := context.Background()
	if len(args) < 2 {
		return fmt.Errorf("bad arguments %q", args)
	}
	action, path, rest := args[0], args[1], args[2:]
	stdin := bufio.NewReader(os.Stdin)
	wait := func() { stdin.ReadString('\n') }
	seed := func(i int) uint64 {
		n, _ := strconv.ParseUint(rest[i], 10, 64)
		return n
	}
	count := func(i int) int {
		n, _ := strconv.Atoi(rest[i])
		return n
	}
	// until reports whether to go on: the file named by argument i does
	// not exist yet, and 20 s have not passed.
	deadline := time.Now().Add(20 * time.Second)
	until := func(i int) bool {
		_, err := os.Stat(rest[i])
		return errors.Is(err, os.ErrNotExist) && time.Now().Before(deadline)
	}
	if action == "open" {
		var opts []blobs.DirOption
		if rest[0] == "ro" {
			opts = append(opts, blobs.ReadOnly())
		}
		if _, err := blobs.OpenDir(path, opts...); err != nil {
			return err
		}
		fmt.Println("opened")
		return nil
	}
	if action == "verify-loop" {
		d, err := blobs.OpenDir(path, blobs.ReadOnly())
		if err != nil {
			return err
		}
		data := objectBytes(seed(0))
		id := storageid.Sum(data)
		wait()
		found := 0
		for until(1) {
			if err := checkOutboard(path, id); err != nil {
				return err
			}
			err := verify.Verify(ctx, d, id, verify.WithExpectedSize(int64(len(data))))
			if err == nil {
				found++
			} else if !errors.Is(err, blobs.ErrNotFound) {
				return fmt.Errorf("a reader racing imports and deletes: %w", err)
			}
		}
		fmt.Printf("verified %d\n", found)
		return nil
	}
	d, err := blobs.OpenDir(path)
	if err != nil {
		return err
	}
	switch action {
	case "import":
		data := objectBytes(seed(0))
		pause := ""
		if len(rest) > 1 {
			pause = rest[1]
		}
		blobs.SetTestHooks(d, nil, func(step string) error {
			if step == pause {
				fmt.Println("paused")
				wait()
			}
			return nil
		})
		p, err := d.Create(ctx)
		if err != nil {
			return err
		}
		defer p.Abort()
		half := len(data) / 2
		if _, err := p.Write(data[:half]); err != nil {
			return err
		}
		if pause == "write" {
			fmt.Println("paused")
			wait()
		}
		if _, err := p.Write(data[half:]); err != nil {
			return err
		}
		id, err := p.Commit(ctx)
		if err != nil {
			return err
		}
		fmt.Printf("committed %s\n", id)
	case "imports":
		wait()
		for i := range rest {
			id, err := importBytes(ctx, d, objectBytes(seed(i)))
			if err != nil {
				return err
			}
			fmt.Printf("committed %s\n", id)
		}
	case "import-loop":
		data := objectBytes(seed(0))
		wait()
		for range count(1) {
			if _, err := importBytes(ctx, d, data); err != nil {
				return err
			}
		}
		fmt.Println("imported")
	case "delete-loop":
		id := storageid.Sum(objectBytes(seed(0)))
		wait()
		found := 0
		for until(1) {
			err := d.Delete(ctx, id)
			if err == nil {
				found++
			} else if !errors.Is(err, blobs.ErrNotFound) {
				return err
			}
			time.Sleep(time.Millisecond)
		}
		fmt.Printf("deleted %d\n", found)
	default:
		return fmt.Errorf("unknown action %q", action)
	}
	return nil
}

// checkOutboard fails if it sees the same .data file of id before and
// after seeing no outboard: a visible .data file must always have its
// outboard. (Commit renames the outboard before the data, and Delete
// removes the data before the outboard, under the object's lock; so once
// the outboard is gone, the .data file seen before it is gone too.)
func checkOutboard(path string, id storageid.ID) error {
	data := filepath.Join(path, id.String()+".data")
	before, err := os.Stat(data)
	if err != nil {
		return nil
	}
	if _, err := os.Stat(filepath.Join(path, id.String()+".obao4")); err == nil {
		return nil
	}
	if after, err := os.Stat(data); err == nil && os.SameFile(before, after) {
		return fmt.Errorf("%s.data is visible without its outboard", id)
	}
	return nil
}

// A proc is a child process and its stdout, line by line.
type proc struct {
	t      *testing.T
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	stderr bytes.Buffer
	done   chan error
}

// start runs the test binary as a child that does args (see
// TestHelperProcess). The child is killed at the end of the test if it is
// still running.
func start(t *testing.T, args ...string) *proc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), childLifetime+10*time.Second)
	cmd := exec.CommandContext(ctx, os.Args[0], append([]string{"-test.run=^TestHelperProcess$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	p := &proc{t: t, name: strings.Join(args[:1], " "), cmd: cmd, lines: make(chan string, 100), done: make(chan error, 1)}
	cmd.Stderr = &p.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.stdin = stdin
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			p.lines <- s.Text()
		}
		close(p.lines)
		p.done <- cmd.Wait()
		cancel()
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.done
		p.done <- nil
	})
	return p
}

// expect returns the rest of the child's next line, which must start with
// prefix.
func (p *proc) expect(prefix string) string {
	p.t.Helper()
	select {
	case line, ok := <-p.lines:
		if !ok {
			p.t.Fatalf("%s: exited (%v) before %q; stderr: %s", p.name, p.wait(), prefix, p.stderr.String())
		}
		rest, found := strings.CutPrefix(line, prefix)
		if !found {
			p.t.Fatalf("%s: got %q, want %q; stderr: %s", p.name, line, prefix, p.stderr.String())
		}
		return strings.TrimSpace(rest)
	case <-time.After(lineTimeout):
		p.t.Fatalf("%s: no %q after %v", p.name, prefix, lineTimeout)
		return ""
	}
}

// resume sends the child the line it waits for.
func (p *proc) resume() {
	p.t.Helper()
	if _, err := io.WriteString(p.stdin, "go\n"); err != nil {
		p.t.Fatalf("%s: %v", p.name, err)
	}
}

// wait waits for the child to exit, and returns its error.
func (p *proc) wait() error {
	for range p.lines {
	}
	err := <-p.done
	p.done <- err
	return err
}

// succeed waits for the child to exit 0.
func (p *proc) succeed() {
	p.t.Helper()
	if err := p.wait(); err != nil {
		p.t.Fatalf("%s: %v; stderr: %s", p.name, err, p.stderr.String())
	}
}

func parseID(t *testing.T, s string) storageid.ID {
	t.Helper()
	id, err := storageid.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// named returns the names in the directory that start with prefix.
func named(t *testing.T, path, prefix string) []string {
	var out []string
	for _, name := range files(t, path) {
		if strings.HasPrefix(name, prefix) {
			out = append(out, name)
		}
	}
	return out
}

// TestProcessesOpenDuringImport is the regression test of the shared store:
// a writer process is stopped half way through an import, and then
// between the two renames of its Commit, while other processes open the
// store, read-write and read-only. Each time the import must commit. (Before
// the store locked its temporary files, any OpenDir removed them, and the
// writer failed at its rename.)
func TestProcessesOpenDuringImport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, path := openDir(t)
	old, err := importBytes(ctx, d, objectBytes(1))
	if err != nil {
		t.Fatal(err)
	}
	for _, pause := range []string{"write", "rename-data"} {
		w := start(t, "import", path, "2", pause)
		w.expect("paused")
		before := files(t, path)
		if len(named(t, path, ".tmp-")) == 0 {
			t.Fatalf("pause %s: no temporary file in %q", pause, before)
		}
		start(t, "open", path, "rw").succeed()
		start(t, "open", path, "ro").succeed()
		if _, err := blobs.OpenDir(path); err != nil { // and this process
			t.Fatal(err)
		}
		if after := files(t, path); !slices.Equal(after, before) {
			t.Errorf("pause %s: opening the store changed %q to %q", pause, before, after)
		}
		w.resume()
		id := parseID(t, w.expect("committed"))
		w.succeed()
		if id != storageid.Sum(objectBytes(2)) {
			t.Fatalf("pause %s: committed %s", pause, id)
		}
		if err := verify.Verify(ctx, d, id); err != nil {
			t.Fatalf("pause %s: %v", pause, err)
		}
		wantFiles(t, path, old, id)
		if err := d.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
}

// TestProcessKilled kills (SIGKILL) one writer half way through its writes
// and another between the two renames of its Commit. A read-only open
// leaves what they left; a read-write open removes it all (their
// temporary files, the lock files, the outboard without its data), and the
// object can be imported again.
func TestProcessKilled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, path := openDir(t)
	old, err := importBytes(ctx, d, objectBytes(3))
	if err != nil {
		t.Fatal(err)
	}
	var writers []*proc
	for _, pause := range []string{"write", "rename-data"} {
		w := start(t, "import", path, "4", pause)
		w.expect("paused")
		writers = append(writers, w)
	}
	for _, w := range writers {
		w.cmd.Process.Kill() // SIGKILL on Unix
		if err := w.wait(); err == nil {
			t.Fatal("the killed child exited 0")
		}
	}
	left := files(t, path)
	id := storageid.Sum(objectBytes(4))
	for _, want := range []string{id.String() + ".obao4", ".lock-" + id.String()} {
		if !slices.Contains(left, want) {
			t.Fatalf("the killed writers left %q, without %s", left, want)
		}
	}
	if n := len(named(t, path, ".tmp-")); n != 4 { // a .data and a .lock each
		t.Fatalf("the killed writers left %q", left)
	}

	start(t, "open", path, "ro").succeed()
	ro, err := blobs.OpenDir(path, blobs.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	if err := ro.Sweep(ctx); !errors.Is(err, blobs.ErrReadOnly) {
		t.Fatalf("Sweep of a read-only Dir: %v", err)
	}
	if now := files(t, path); !slices.Equal(now, left) {
		t.Fatalf("read-only opens changed %q to %q", left, now)
	}
	if _, err := ro.Slice(ctx, id, 0, 1); !errors.Is(err, blobs.ErrNotFound) {
		t.Fatalf("Slice of the half-committed object: %v", err)
	}

	start(t, "open", path, "rw").succeed()
	wantFiles(t, path, old)
	got, err := importBytes(ctx, d, objectBytes(4))
	if err != nil || got != id {
		t.Fatalf("import after the sweep: %s, %v", got, err)
	}
	wantFiles(t, path, old, id)
	if err := verify.Verify(ctx, ro, id); err != nil {
		t.Fatal(err)
	}
}

// TestProcessesCommitSameBytes runs three processes that import the same
// objects at the same time, then two that import again an object whose
// stored copy was damaged in place.
func TestProcessesCommitSameBytes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, path := openDir(t)
	seeds := []string{"10", "11", "12", "13", "14", "15"}
	var procs []*proc
	for range 3 {
		procs = append(procs, start(t, append([]string{"imports", path}, seeds...)...))
	}
	for _, p := range procs {
		p.resume()
	}
	var ids []storageid.ID
	for _, p := range procs {
		for _, s := range seeds {
			n, _ := strconv.ParseUint(s, 10, 64)
			id := parseID(t, p.expect("committed"))
			if id != storageid.Sum(objectBytes(n)) {
				t.Fatalf("seed %s: committed %s", s, id)
			}
			ids = append(ids, id)
		}
		p.succeed()
	}
	wantFiles(t, path, ids...)
	for _, id := range ids {
		if err := verify.Verify(ctx, d, id); err != nil {
			t.Fatal(err)
		}
	}

	// A copy damaged in place, imported again by two processes at once.
	damaged := ids[len(ids)-1]
	f, err := os.OpenFile(filepath.Join(path, damaged.String()+".data"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("damage"), 10)
	f.Close()
	if err := verify.Verify(ctx, d, damaged); !errors.Is(err, verify.ErrVerify) {
		t.Fatalf("Verify of the damaged copy: %v", err)
	}
	procs = procs[:0]
	for range 2 {
		procs = append(procs, start(t, "imports", path, seeds[len(seeds)-1]))
	}
	for _, p := range procs {
		p.resume()
	}
	for _, p := range procs {
		if id := parseID(t, p.expect("committed")); id != damaged {
			t.Fatalf("re-import: %s", id)
		}
		p.succeed()
	}
	if err := verify.Verify(ctx, d, damaged); err != nil {
		t.Fatalf("after two processes re-imported the damaged object: %v", err)
	}
	wantFiles(t, path, ids...)
}

// TestProcessesDeleteRacesImport runs, on one object, a process that
// imports it again and again, one that deletes it again and again, and a
// read-only one that verifies it again and again. Every import and delete
// succeeds (or finds nothing to delete), every read verifies or finds no
// object, never a damaged one, and the store is left consistent.
func TestProcessesDeleteRacesImport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, path := openDir(t)
	const seed = "20"
	id := storageid.Sum(objectBytes(20))
	// On a loaded machine the imports may all end before the deletes
	// begin: the race is run again with more imports, at most 4 times.
	deleted := 0
	for attempt := range 4 {
		n := 40 << attempt
		stop := filepath.Join(t.TempDir(), "stop")
		imp := start(t, "import-loop", path, seed, strconv.Itoa(n))
		del := start(t, "delete-loop", path, seed, stop)
		rd := start(t, "verify-loop", path, seed, stop)
		for _, p := range []*proc{imp, del, rd} {
			p.resume()
		}
		imp.expect("imported")
		if err := os.WriteFile(stop, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		deleted, _ = strconv.Atoi(del.expect("deleted"))
		verified, _ := strconv.Atoi(rd.expect("verified"))
		for _, p := range []*proc{imp, del, rd} {
			p.succeed()
		}
		t.Logf("during %d imports, the deletes found the object %d times, and %d reads verified it", n, deleted, verified)
		if deleted > 0 {
			break
		}
	}
	if deleted == 0 {
		t.Fatal("no delete found the object: the processes did not race")
	}
	if now := files(t, path); len(now) != 1 && len(now) != 3 {
		t.Fatalf("after the race the store holds %q", now)
	}
	if _, err := os.Stat(filepath.Join(path, id.String()+".data")); err == nil {
		wantFiles(t, path, id)
		if err := verify.Verify(ctx, d, id); err != nil {
			t.Fatal(err)
		}
	} else {
		wantFiles(t, path)
	}
	if got, err := importBytes(ctx, d, objectBytes(20)); err != nil || got != id {
		t.Fatalf("import after the race: %s, %v", got, err)
	}
	wantFiles(t, path, id)
}

// TestProcessesOpenAndImport runs processes that import different objects
// while others open the store read-write (sweeping it) and read-only, all
// at once.
func TestProcessesOpenAndImport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, path := openDir(t)
	var importers []*proc
	var want []storageid.ID
	for i := range 3 {
		var seeds []string
		for j := range 4 {
			s := uint64(30 + 4*i + j)
			seeds = append(seeds, strconv.FormatUint(s, 10))
			want = append(want, storageid.Sum(objectBytes(s)))
		}
		importers = append(importers, start(t, append([]string{"imports", path}, seeds...)...))
	}
	for _, p := range importers {
		p.resume()
	}
	var wg sync.WaitGroup
	openErrs := make(chan error, 12)
	for i := range 12 {
		mode := []string{"rw", "ro"}[i%2]
		p := start(t, "open", path, mode)
		wg.Go(func() {
			if err := p.wait(); err != nil {
				openErrs <- fmt.Errorf("open %s: %v: %s", mode, err, p.stderr.String())
			}
		})
	}
	for _, p := range importers {
		for range 4 {
			p.expect("committed")
		}
		p.succeed()
	}
	wg.Wait()
	close(openErrs)
	for err := range openErrs {
		t.Error(err)
	}
	wantFiles(t, path, want...)
	for _, id := range want {
		if err := verify.Verify(ctx, d, id); err != nil {
			t.Fatal(err)
		}
	}
}
