package keyring_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sovm/sop-pme/keyring"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/storageid"
)

// The regression tests of this file use only the API that version 1 had
// (through helpers_test.go), so that they can be run against it: there, a
// Ring rewrote the whole file from its own memory on every Put, and DEKs put
// through other Rings or processes were lost.

// childEnv selects a child-process mode of the test binary (see TestMain).
const childEnv = "SOP_PME_KEYRING_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(childMain(mode))
	}
	os.Exit(m.Run())
}

// childMain runs in a child process started by runChildren: it puts N DEKs
// into the ring (or runs another mode) and prints one "ack ID DEK" line per
// DEK that Put acknowledged. Its lifetime is bounded by SOP_PME_DEADLINE.
func childMain(mode string) int {
	deadline, _ := time.ParseDuration(os.Getenv("SOP_PME_DEADLINE"))
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	raw, _ := hex.DecodeString(os.Getenv("SOP_PME_KEK"))
	kek, err := keyring.KEKFromBytes(raw)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	n, _ := strconv.Atoi(os.Getenv("SOP_PME_N"))
	path, prefix := os.Getenv("SOP_PME_RING"), os.Getenv("SOP_PME_PREFIX")
	if mode != "put" {
		return extraChild(ctx, mode, path, kek, n)
	}
	r := openRing(&childTB{}, path, kek)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for i := range n {
		id := storageid.Sum([]byte(fmt.Sprint(prefix, i)))
		d := pme.NewDEK()
		if err := r.Put(ctx, id, d); err != nil {
			fmt.Fprintln(os.Stderr, "put:", err)
			return 1
		}
		fmt.Fprintf(out, "ack %s %x\n", id, d.Bytes())
	}
	return 0
}

// childTB lets the test helpers run in a child process.
type childTB struct{ testing.TB }

func (childTB) Helper() {}
func (childTB) Fatal(args ...any) {
	fmt.Fprintln(os.Stderr, args...)
	os.Exit(3)
}

type acked struct {
	mu   sync.Mutex
	deks map[storageid.ID]pme.DEK
}

func (a *acked) add(id storageid.ID, d pme.DEK) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.deks == nil {
		a.deks = map[storageid.ID]pme.DEK{}
	}
	a.deks[id] = d
}

// check resolves every acknowledged DEK through a fresh Ring.
func (a *acked) check(t *testing.T, path string, kek keyring.KEK) {
	t.Helper()
	r := openRing(t, path, kek)
	lost := 0
	for id, want := range a.deks {
		got, err := r.ResolveDEK(context.Background(), id)
		if err != nil || !got.Equal(want) {
			lost++
			if lost <= 3 {
				t.Errorf("acknowledged DEK of %s: %v", id, err)
			}
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged DEKs lost", lost, len(a.deks))
	}
	if n := ringLen(t, r); n != len(a.deks) {
		t.Fatalf("the ring holds %d DEKs, %d were acknowledged", n, len(a.deks))
	}
}

// putMany puts n fresh DEKs through r from one goroutine.
func putMany(t *testing.T, r *keyring.Ring, prefix string, n int, a *acked) {
	for i := range n {
		id := storageid.Sum([]byte(fmt.Sprint(prefix, i)))
		d := pme.NewDEK()
		if err := r.Put(context.Background(), id, d); err != nil {
			t.Errorf("put %s: %v", id, err)
			return
		}
		a.add(id, d)
	}
}

func TestConcurrentPutsOneRing(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ring")
	kek := keyring.NewKEK()
	r := createRing(t, path, kek)
	var a acked
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() { putMany(t, r, fmt.Sprint("one ring ", g, " "), 25, &a) })
	}
	wg.Wait()
	a.check(t, path, kek)
}

// TestConcurrentPutsManyRings puts through four Rings on one file at once.
// Version 1 lost most of these DEKs.
func TestConcurrentPutsManyRings(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ring")
	kek := keyring.NewKEK()
	createRing(t, path, kek)
	var a acked
	var wg sync.WaitGroup
	for g := range 4 {
		r := openRing(t, path, kek)
		for h := range 2 {
			wg.Go(func() { putMany(t, r, fmt.Sprint("ring ", g, " goroutine ", h, " "), 20, &a) })
		}
	}
	wg.Wait()
	a.check(t, path, kek)
}

// runChildren runs the test binary once per mode, concurrently, on the ring
// at path, and collects the DEKs the children acknowledged.
func runChildren(t *testing.T, path string, kek keyring.KEK, n int, modes ...string) *acked {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var a acked
	var wg sync.WaitGroup
	for i, mode := range modes {
		cmd := exec.CommandContext(ctx, exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+mode,
			"SOP_PME_RING="+path, "SOP_PME_KEK="+hex.EncodeToString(kek.Bytes()),
			"SOP_PME_N="+strconv.Itoa(n), fmt.Sprintf("SOP_PME_PREFIX=child %d ", i),
			"SOP_PME_DEADLINE=90s")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			err := cmd.Wait()
			if err != nil {
				t.Errorf("child %d (%s): %v\n%s", i, mode, err, stderr.String())
			}
			for line := range strings.Lines(stdout.String()) {
				f := strings.Fields(line)
				if len(f) != 3 || f[0] != "ack" {
					continue
				}
				id, err1 := storageid.Parse(f[1])
				raw, err2 := hex.DecodeString(f[2])
				d, err3 := pme.DEKFromBytes(raw)
				if err1 != nil || err2 != nil || err3 != nil {
					t.Errorf("child %d printed %q", i, line)
					continue
				}
				a.add(id, d)
			}
		})
	}
	wg.Wait()
	return &a
}

// TestConcurrentPutsProcesses puts from two child processes at once, while
// this process puts too. Version 1 lost DEKs here, exiting 0.
func TestConcurrentPutsProcesses(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ring")
	kek := keyring.NewKEK()
	r := createRing(t, path, kek)
	var mine acked
	done := make(chan struct{})
	go func() { defer close(done); putMany(t, r, "parent ", 30, &mine) }()
	a := runChildren(t, path, kek, 100, "put", "put")
	<-done
	if len(a.deks) != 200 {
		t.Fatalf("the children acknowledged %d DEKs, want 200", len(a.deks))
	}
	for id, d := range mine.deks {
		a.add(id, d)
	}
	a.check(t, path, kek)
}
