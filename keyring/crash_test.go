package keyring_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/sovm/sop-pme/keyring"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/storageid"
)

// The tests of this file kill processes that shred (SIGKILL, no cleanup)
// at chosen and at random points, and run processes that put while others
// delete and rotate, to check that shredding loses no acknowledged DEK,
// leaves a file bbolt and the ring open, and finishes when run again.

// crashChild runs the child modes of this file (see extraChild):
//
//   - "churn": puts DEKs, deletes every third one again and re-keys every
//     seventh step, printing "ack ID DEK" once a Put returned, "deleting
//     ID" before a Delete and "del ID" once it returned, until killed or
//     n steps are done;
//   - "kill-at": runs $SOP_PME_OP ("delete" of $SOP_PME_ID, or "rekey"
//     under the KEK in $SOP_PME_NEWKEK) with a hook that kills the process
//     at the step $SOP_PME_STEP;
//   - "file-put" and "file-rotate": see TestPutsWhileDeletingAndRotating.
func crashChild(ctx context.Context, mode, path string, kek keyring.KEK, n int) int {
	fail := func(what string, err error) int {
		fmt.Fprintln(os.Stderr, what+":", err)
		return 1
	}
	switch mode {
	case "churn":
		r, err := keyring.Open(ctx, path, kek)
		if err != nil {
			return fail("open", err)
		}
		prefix := os.Getenv("SOP_PME_PREFIX")
		var last storageid.ID
		for i := range n {
			id, d := storageid.Sum(fmt.Append(nil, prefix, i)), pme.NewDEK()
			if err := r.Put(ctx, id, d); err != nil {
				return fail("put", err)
			}
			fmt.Fprintf(os.Stdout, "ack %s %x\n", id, d.Bytes())
			if i%3 == 2 {
				fmt.Fprintf(os.Stdout, "deleting %s\n", last)
				if err := r.Delete(ctx, last); err != nil {
					return fail("delete", err)
				}
				fmt.Fprintf(os.Stdout, "del %s\n", last)
			}
			if i%7 == 6 {
				fmt.Fprintln(os.Stdout, "rekeying")
				if err := r.Rekey(ctx, nil); err != nil {
					return fail("rekey", err)
				}
				fmt.Fprintln(os.Stdout, "rekeyed")
			}
			last = id
		}
		return 0
	case "kill-at":
		step := os.Getenv("SOP_PME_STEP")
		kill := keyring.WithHook(func(s string) {
			if s == step {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			}
		})
		r, err := keyring.Open(ctx, path, kek, kill)
		if err != nil {
			return fail("open", err)
		}
		switch os.Getenv("SOP_PME_OP") {
		case "delete":
			id, _ := storageid.Parse(os.Getenv("SOP_PME_ID"))
			err = r.Delete(ctx, id)
		case "rekey":
			raw, _ := hex.DecodeString(os.Getenv("SOP_PME_NEWKEK"))
			nk, kerr := keyring.KEKFromBytes(raw)
			if kerr != nil {
				return fail("new KEK", kerr)
			}
			err = r.Rekey(ctx, nk)
		}
		return fail("the operation ended without reaching "+step, err)
	case "file-put", "file-rotate":
		return fileChild(ctx, mode, path, n)
	}
	fmt.Fprintln(os.Stderr, "unknown child mode", mode)
	return 2
}

// child is a child process of the test binary.
type child struct {
	cmd            *exec.Cmd
	stdout, stderr *bytes.Buffer
	mu             *sync.Mutex
	started        chan struct{} // closed at the first line of output
	done           chan struct{} // closed once the child ended and its output was read
}

// startChild starts the test binary in mode on the ring at path, with the
// extra environment variables env ("NAME=value").
func startChild(t *testing.T, mode, path string, kek keyring.KEK, n int, env ...string) *child {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode, "SOP_PME_RING="+path,
		"SOP_PME_KEK="+hex.EncodeToString(kek.Bytes()), "SOP_PME_N="+strconv.Itoa(n), "SOP_PME_DEADLINE=90s")
	cmd.Env = append(cmd.Env, env...)
	c := &child{cmd: cmd, stdout: new(bytes.Buffer), stderr: new(bytes.Buffer), mu: new(sync.Mutex),
		started: make(chan struct{}), done: make(chan struct{})}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, c.stderr
	read := make(chan struct{})
	go func() {
		defer close(read)
		br := bufio.NewReader(pr)
		first := true
		for {
			line, err := br.ReadString('\n')
			c.mu.Lock()
			c.stdout.WriteString(line)
			c.mu.Unlock()
			if first && line != "" {
				close(c.started)
				first = false
			}
			if err != nil {
				if first {
					close(c.started)
				}
				return
			}
		}
	}()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		cmd.Wait()
		pw.Close()
		<-read
		close(c.done)
	}()
	return c
}

// wait waits for the child to end (within a minute) and returns its exit
// state: "exit N" or "killed".
func (c *child) wait(t *testing.T) string {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(time.Minute):
		c.cmd.Process.Kill()
		<-c.done
		t.Fatal("a child process did not end within a minute")
	}
	ws := c.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		return "killed"
	}
	return fmt.Sprint("exit ", ws.ExitStatus())
}

// lines returns the child's complete output lines.
func (c *child) lines() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for l := range strings.Lines(c.stdout.String()) {
		if strings.HasSuffix(l, "\n") {
			out = append(out, strings.TrimSuffix(l, "\n"))
		}
	}
	return out
}

// boltCheck runs bbolt's own consistency check on the file.
func boltCheck(t *testing.T, path string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, PreLoadFreelist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			t.Errorf("bbolt check: %v", err)
		}
		return nil
	})
}

// TestKillDuringShred kills a Delete and a Rekey (SIGKILL) after their
// transaction committed and before the scrub began, and in the middle of
// the scrub. The change holds, the file opens, and the old wrapped keys
// left in free pages by a scrub cut short go when the operation is run
// again (Delete) or Scrub runs (as keys rotate does when it finishes an
// interrupted rotation).
func TestKillDuringShred(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, step := range []string{"committed", "scrub-write"} {
		t.Run("delete/"+step, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ring")
			kek := keyring.NewKEK()
			r := createRing(t, path, kek)
			objs, deks := fillRing(t, r, 200)
			id := objs[77]
			old := map[string][]byte{"the wrapped DEK": dekValues(t, path)[string(id[:])]}
			mustHold(t, path, old)
			c := startChild(t, "kill-at", path, kek, 0, "SOP_PME_STEP="+step, "SOP_PME_OP=delete", "SOP_PME_ID="+id.String())
			if st := c.wait(t); st != "killed" {
				t.Fatalf("the child was not killed at %s: %s\n%s", step, st, c.stderr)
			}
			boltCheck(t, path)
			r = openRing(t, path, kek)
			if _, err := r.ResolveDEK(ctx, id); !errors.Is(err, keyring.ErrNotFound) {
				t.Fatalf("the DEK after a Delete killed at %s: %v", step, err)
			}
			if step == "committed" {
				mustHold(t, path, old) // the point is real: the scrub had not run
			}
			for i, o := range objs {
				if i == 77 {
					continue
				}
				if got, err := r.ResolveDEK(ctx, o); err != nil || !got.Equal(deks[i]) {
					t.Fatalf("another DEK after the crash: %v", err)
				}
			}
			if err := r.Delete(ctx, id); err != nil {
				t.Fatal(err)
			}
			fileHolds(t, path, "after the Delete was run again", old)
			if pages, tail := residue(t, path); len(pages) > 0 || tail {
				t.Errorf("free pages %v hold bytes (past the last page: %v)", pages, tail)
			}
		})
		t.Run("rekey/"+step, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ring")
			k1, k2 := keyring.NewKEK(), keyring.NewKEK()
			r := createRing(t, path, k1)
			objs, deks := fillRing(t, r, 200)
			old := map[string][]byte{"the wrapped ring key": ringKeyOf(t, path)}
			for k, v := range dekValues(t, path) {
				old["the old wrapping of "+hex.EncodeToString([]byte(k))] = v
			}
			c := startChild(t, "kill-at", path, k1, 0, "SOP_PME_STEP="+step, "SOP_PME_OP=rekey", "SOP_PME_NEWKEK="+hex.EncodeToString(k2.Bytes()))
			if st := c.wait(t); st != "killed" {
				t.Fatalf("the child was not killed at %s: %s\n%s", step, st, c.stderr)
			}
			boltCheck(t, path)
			if _, err := keyring.Open(ctx, path, k1); !errors.Is(err, keyring.ErrWrongKEK) {
				t.Fatalf("the old KEK after a Rekey killed at %s: %v", step, err)
			}
			r = openRing(t, path, k2)
			for i, o := range objs {
				if got, err := r.ResolveDEK(ctx, o); err != nil || !got.Equal(deks[i]) {
					t.Fatalf("a DEK after a Rekey killed at %s: %v", step, err)
				}
			}
			if step == "committed" {
				mustHold(t, path, map[string][]byte{"the wrapped ring key": old["the wrapped ring key"]})
			}
			if err := r.Scrub(ctx); err != nil {
				t.Fatal(err)
			}
			fileHolds(t, path, "after Scrub", old)
			if pages, tail := residue(t, path); len(pages) > 0 || tail {
				t.Errorf("free pages %v hold bytes (past the last page: %v)", pages, tail)
			}
		})
	}
}

// TestKillAnywhere kills a process that puts, deletes and re-keys at
// random points, again and again on one ring. After each kill: bbolt's
// check passes, the ring opens, every DEK whose Put was acknowledged and
// not deleted resolves, every acknowledged deletion holds, and the next
// Delete leaves no byte in any free page.
func TestKillAnywhere(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ring")
	kek := keyring.NewKEK()
	createRing(t, path, kek)
	rounds := 12
	if testing.Short() {
		rounds = 4
	}
	live := map[storageid.ID]pme.DEK{}
	deleted := map[storageid.ID]bool{}
	killedMidDelete, killedMidRekey, rekeys := 0, 0, 0
	for round := range rounds {
		c := startChild(t, "churn", path, kek, 100_000, fmt.Sprintf("SOP_PME_PREFIX=round %d ", round))
		select {
		case <-c.started:
		case <-time.After(30 * time.Second):
			c.cmd.Process.Kill()
			t.Fatal("the child printed nothing in 30 s")
		}
		time.Sleep(time.Duration(rand.IntN(150)) * time.Millisecond)
		c.cmd.Process.Signal(syscall.SIGKILL)
		if st := c.wait(t); st != "killed" {
			t.Fatalf("round %d: the child ended by itself: %s\n%s", round, st, c.stderr)
		}
		inFlight := storageid.ID{}
		rekeying := false
		for _, l := range c.lines() {
			f := strings.Fields(l)
			switch {
			case l == "rekeying" || l == "rekeyed":
				rekeying = l == "rekeying"
				if !rekeying {
					rekeys++
				}
			case len(f) == 3 && f[0] == "ack":
				id, _ := storageid.Parse(f[1])
				raw, _ := hex.DecodeString(f[2])
				d, err := pme.DEKFromBytes(raw)
				if err != nil {
					t.Fatalf("child printed %q", l)
				}
				live[id] = d
			case len(f) == 2 && f[0] == "deleting":
				inFlight, _ = storageid.Parse(f[1])
			case len(f) == 2 && f[0] == "del":
				id, _ := storageid.Parse(f[1])
				delete(live, id)
				deleted[id] = true
				inFlight = storageid.ID{}
			}
		}
		if inFlight != (storageid.ID{}) {
			delete(live, inFlight) // killed during its Delete: either way
			killedMidDelete++
		}
		if rekeying {
			killedMidRekey++
		}
		boltCheck(t, path)
		r := openRing(t, path, kek)
		for id, d := range live {
			if got, err := r.ResolveDEK(ctx, id); err != nil || !got.Equal(d) {
				t.Fatalf("round %d: an acknowledged DEK: %v", round, err)
			}
		}
		for id := range deleted {
			if _, err := r.ResolveDEK(ctx, id); !errors.Is(err, keyring.ErrNotFound) {
				t.Fatalf("round %d: an acknowledged deletion: %v", round, err)
			}
		}
		if err := r.Delete(ctx, storageid.Sum([]byte("never held"))); err != nil {
			t.Fatal(err)
		}
		if pages, tail := residue(t, path); len(pages) > 0 || tail {
			t.Fatalf("round %d: after a Delete, free pages %v hold bytes (past the last page: %v)", round, pages, tail)
		}
	}
	t.Logf("%d kills; %d DEKs live, %d deleted, %d re-keys; %d kills during a Delete, %d during a Rekey",
		rounds, len(live), len(deleted), rekeys, killedMidDelete, killedMidRekey)
	if len(live) == 0 || len(deleted) == 0 {
		t.Fatal("the children acknowledged no Put or no Delete")
	}
}
