package keyring_test

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sovm/sop-pme/keyring"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/storageid"
)

// rotateFiles rotates the KEK file at kekPath as sop-pme keys rotate does:
// a new KEK written to kekPath.next, the ring re-keyed under it, then
// kekPath.next renamed over kekPath and the directory synced. With
// stopBefore "rename" it stops after the re-key.
func rotateFiles(ctx context.Context, r *keyring.Ring, kekPath, stopBefore string) (keyring.KEK, error) {
	next := kekPath + ".next"
	nk, err := keyring.CreateKEKFile(next)
	if err != nil {
		return keyring.KEK{}, err
	}
	if err := r.Rekey(ctx, nk); err != nil {
		return keyring.KEK{}, err
	}
	if stopBefore == "rename" {
		return nk, nil
	}
	if err := os.Rename(next, kekPath); err != nil {
		return keyring.KEK{}, err
	}
	d, err := os.Open(filepath.Dir(kekPath))
	if err != nil {
		return keyring.KEK{}, err
	}
	defer d.Close()
	return nk, d.Sync()
}

// openFiles opens the ring under the KEK file, following rotations.
func openFiles(ctx context.Context, path, kekPath string, opts ...keyring.Option) (*keyring.Ring, error) {
	k, err := keyring.LoadKEKFile(kekPath)
	if err != nil {
		return nil, err
	}
	opts = append(opts, keyring.WithReload(keyring.ReloadKEKFiles(kekPath+".next", kekPath)))
	return keyring.Open(ctx, path, k, opts...)
}

// TestReloadAfterRotation: a Ring kept open across rotations made by
// another Ring follows them (WithReload): it puts and resolves while the
// new KEK is still KEK.next, after the rename, and after a second
// rotation, and its Master is the new KEK each time. A Ring without it
// fails with ErrMaster, as every long-lived service did.
func TestReloadAfterRotation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	path, kekPath := filepath.Join(dir, "ring"), filepath.Join(dir, "kek")
	k0, err := keyring.CreateKEKFile(kekPath)
	if err != nil {
		t.Fatal(err)
	}
	createRing(t, path, k0)
	long, err := openFiles(ctx, path, kekPath)
	if err != nil {
		t.Fatal(err)
	}
	plain := openRing(t, path, k0)
	objs := ids(20)
	deks := map[storageid.ID]pme.DEK{}
	for _, id := range objs[:5] {
		deks[id] = pme.NewDEK()
		if err := long.Put(ctx, id, deks[id]); err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string, r *keyring.Ring, want keyring.KEK) {
		t.Helper()
		for id, d := range deks {
			if got, err := r.ResolveDEK(ctx, id); err != nil || !got.Equal(d) {
				t.Fatalf("%s: ResolveDEK: %v", when, err)
			}
		}
		if m, ok := r.Master().(keyring.KEK); !ok || !m.Equal(want) {
			t.Fatalf("%s: the Ring's master is not the new KEK", when)
		}
	}
	other := openRing(t, path, k0)
	for i, stop := range []string{"rename", "", ""} {
		var nk keyring.KEK
		if i == 1 {
			// Finish the first rotation: the rename.
			if err := os.Rename(kekPath+".next", kekPath); err != nil {
				t.Fatal(err)
			}
			nk, _ = keyring.LoadKEKFile(kekPath)
		} else if nk, err = rotateFiles(ctx, other, kekPath, stop); err != nil {
			t.Fatal(err)
		}
		when := fmt.Sprintf("rotation %d (stopped before %q)", i, stop)
		id := objs[5+i]
		deks[id] = pme.NewDEK()
		if err := long.Put(ctx, id, deks[id]); err != nil {
			t.Fatalf("%s: Put through the long-lived Ring: %v", when, err)
		}
		check(when, long, nk)
		// A Ring that opens now, with the KEK file it read before.
		fresh, err := keyring.Open(ctx, path, k0, keyring.WithReload(keyring.ReloadKEKFiles(kekPath+".next", kekPath)))
		if err != nil {
			t.Fatalf("%s: Open with a stale KEK and a reload: %v", when, err)
		}
		check(when+", fresh Ring", fresh, nk)
	}
	if err := plain.Put(ctx, objs[19], pme.NewDEK()); !errors.Is(err, keyring.ErrMaster) {
		t.Fatalf("a Ring without reload after the rotations: %v", err)
	}
	if _, err := plain.ResolveDEK(ctx, objs[0]); !errors.Is(err, keyring.ErrMaster) {
		t.Fatalf("a Ring without reload after the rotations: %v", err)
	}
	// Nothing to reload from: ErrMaster, after a bounded number of tries.
	gone := filepath.Join(dir, "gone")
	r, err := keyring.Open(ctx, path, k0, keyring.WithReload(keyring.ReloadKEKFiles(gone)))
	if !errors.Is(err, keyring.ErrMaster) || r != nil {
		t.Fatalf("Open with nothing to reload: %v", err)
	}
	if _, err := keyring.Open(ctx, path, k0, keyring.WithReload(nil)); err == nil {
		t.Fatal("WithReload(nil) was accepted")
	}
}

// fileChild runs the child modes of TestPutsWhileDeletingAndRotating, on
// the KEK file $SOP_PME_KEKFILE:
//
//   - "file-put" opens the ring (WithReload), puts n DEKs, resolves each one
//     again, and prints "ack ID DEK" for each;
//   - "file-rotate" puts a DEK and deletes it, then rotates the KEK file
//     (rotateFiles), printing "del ID" and "rotated", until the file
//     $SOP_PME_STOP exists or n rotations are done.
func fileChild(ctx context.Context, mode, path string, n int) int {
	kekPath := os.Getenv("SOP_PME_KEKFILE")
	r, err := openFiles(ctx, path, kekPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		return 3
	}
	prefix := os.Getenv("SOP_PME_PREFIX")
	switch mode {
	case "file-put":
		for i := range n {
			id, d := storageid.Sum(fmt.Append(nil, prefix, i)), pme.NewDEK()
			if err := r.Put(ctx, id, d); err != nil {
				fmt.Fprintln(os.Stderr, "put:", err)
				return 1
			}
			got, err := r.ResolveDEK(ctx, id)
			if err != nil || !got.Equal(d) {
				fmt.Fprintln(os.Stderr, "resolve:", err)
				return 1
			}
			fmt.Fprintf(os.Stdout, "ack %s %x\n", id, d.Bytes())
			time.Sleep(2 * time.Millisecond) // leave room for rotations
		}
	case "file-rotate":
		for i := range n {
			if _, err := os.Stat(os.Getenv("SOP_PME_STOP")); err == nil {
				break
			}
			id := storageid.Sum(fmt.Append(nil, prefix, i))
			if err := r.Put(ctx, id, pme.NewDEK()); err != nil {
				fmt.Fprintln(os.Stderr, "put:", err)
				return 1
			}
			if err := r.Delete(ctx, id); err != nil {
				fmt.Fprintln(os.Stderr, "delete:", err)
				return 1
			}
			fmt.Fprintf(os.Stdout, "del %s\n", id)
			if _, err := rotateFiles(ctx, r, kekPath, ""); err != nil {
				fmt.Fprintln(os.Stderr, "rotate:", err)
				return 1
			}
			fmt.Fprintln(os.Stdout, "rotated")
			time.Sleep(time.Duration(2+rand.IntN(10)) * time.Millisecond)
		}
	}
	return 0
}

// TestPutsWhileDeletingAndRotating runs two processes that put (and resolve)
// DEKs while a third deletes and rotates the KEK file again and again, as
// sop-pme keys rotate does. Every Put succeeds (before Rings followed
// rotations, 11 of 60 imports failed with "the master key does not open the
// ring key"), every acknowledged DEK resolves under the final KEK, every
// deleted one is gone, and the ring file is still the one created.
func TestPutsWhileDeletingAndRotating(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	path, kekPath, stop := filepath.Join(dir, "ring"), filepath.Join(dir, "kek"), filepath.Join(dir, "stop")
	k0, err := keyring.CreateKEKFile(kekPath)
	if err != nil {
		t.Fatal(err)
	}
	createRing(t, path, k0)
	inode, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"SOP_PME_KEKFILE=" + kekPath, "SOP_PME_STOP=" + stop}
	rot := startChild(t, "file-rotate", path, k0, 200, append(env, "SOP_PME_PREFIX=rotating ")...)
	<-rot.started
	const perChild = 60
	var puts []*child
	for i := range 2 {
		puts = append(puts, startChild(t, "file-put", path, k0, perChild, append(env, fmt.Sprintf("SOP_PME_PREFIX=putter %d ", i))...))
	}
	var a acked
	failed := 0
	for i, c := range puts {
		if st := c.wait(t); st != "exit 0" {
			failed++
			t.Errorf("putter %d: %s\n%s", i, st, c.stderr)
		}
		for _, l := range c.lines() {
			if f := strings.Fields(l); len(f) == 3 && f[0] == "ack" {
				id, _ := storageid.Parse(f[1])
				raw, _ := hex.DecodeString(f[2])
				d, err := pme.DEKFromBytes(raw)
				if err != nil {
					t.Fatal(err)
				}
				a.add(id, d)
			}
		}
	}
	os.WriteFile(stop, nil, 0o600)
	if st := rot.wait(t); st != "exit 0" {
		t.Fatalf("rotating child: %s\n%s", st, rot.stderr)
	}
	rotations := 0
	var gone []storageid.ID
	for _, l := range rot.lines() {
		f := strings.Fields(l)
		switch {
		case len(f) == 1 && f[0] == "rotated":
			rotations++
		case len(f) == 2 && f[0] == "del":
			id, _ := storageid.Parse(f[1])
			gone = append(gone, id)
		}
	}
	t.Logf("%d Puts acknowledged by 2 processes, %d failed processes, %d rotations and %d deletions meanwhile",
		len(a.deks), failed, rotations, len(gone))
	if rotations < 2 {
		t.Fatalf("only %d rotations ran during the Puts", rotations)
	}
	if len(a.deks) != 2*perChild {
		t.Fatalf("%d of %d Puts acknowledged", len(a.deks), 2*perChild)
	}
	final, err := keyring.LoadKEKFile(kekPath)
	if err != nil {
		t.Fatal(err)
	}
	a.check(t, path, final)
	r := openRing(t, path, final)
	for _, id := range gone {
		if _, err := r.ResolveDEK(ctx, id); !errors.Is(err, keyring.ErrNotFound) {
			t.Fatalf("a deleted DEK: %v", err)
		}
	}
	if _, err := keyring.Open(ctx, path, k0); !errors.Is(err, keyring.ErrWrongKEK) {
		t.Fatalf("the first KEK after the rotations: %v", err)
	}
	// The ring file is the one created: never replaced, so the lock every
	// process takes on it is on the live file, and no process can have
	// written into an unlinked copy.
	if now, err := os.Stat(path); err != nil || !os.SameFile(inode, now) {
		t.Fatalf("the ring file was replaced: %v", err)
	}
}

// TestRetryAfterReload: every operation of a Ring goes through one retry
// loop. When the master does not open the ring key (another Ring rotated
// it) and the reload function finds the new master only on its second call
// (a rotation made elsewhere between two of its steps), each operation
// reads the file again, adopts the master the reload found, and succeeds:
// Open, Put, Delete and ResolveDEK did so before, Rotate and Rekey failed
// with ErrMaster at once.
func TestRetryAfterReload(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	id, dek := ids(1)[0], pme.NewDEK()
	ops := map[string]func(r *keyring.Ring, path string, reload keyring.ReloadFunc) error{
		"Open": func(_ *keyring.Ring, path string, reload keyring.ReloadFunc) error {
			_, err := keyring.Open(ctx, path, keyring.NewKEK(), keyring.WithReload(reload))
			return err
		},
		"Put": func(r *keyring.Ring, _ string, _ keyring.ReloadFunc) error {
			return r.Put(ctx, storageid.Sum([]byte("another")), pme.NewDEK())
		},
		"Delete": func(r *keyring.Ring, _ string, _ keyring.ReloadFunc) error { return r.Delete(ctx, id) },
		"ResolveDEK": func(r *keyring.Ring, _ string, _ keyring.ReloadFunc) error {
			got, err := r.ResolveDEK(ctx, id)
			if err == nil && !got.Equal(dek) {
				err = errors.New("another DEK")
			}
			return err
		},
		"Rotate": func(r *keyring.Ring, _ string, _ keyring.ReloadFunc) error { return r.Rotate(ctx, keyring.NewKEK()) },
		"Rekey":  func(r *keyring.Ring, _ string, _ keyring.ReloadFunc) error { return r.Rekey(ctx, keyring.NewKEK()) },
	}
	for name, op := range ops {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ring")
			k0, k1 := keyring.NewKEK(), keyring.NewKEK()
			createRing(t, path, k0)
			calls := 0
			reload := func(context.Context) ([]keyring.Master, error) {
				if calls++; calls == 1 {
					return nil, nil
				}
				return []keyring.Master{k1}, nil
			}
			r, err := keyring.Open(ctx, path, k0, keyring.WithReload(reload))
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Put(ctx, id, dek); err != nil {
				t.Fatal(err)
			}
			if err := openRing(t, path, k0).Rotate(ctx, k1); err != nil {
				t.Fatal(err)
			}
			if err := op(r, path, reload); err != nil {
				t.Fatalf("%s after a rotation elsewhere, the new master reloaded on the second call: %v", name, err)
			}
			if calls < 2 {
				t.Fatalf("%s called the reload function %d times, not twice", name, calls)
			}
		})
	}
}
