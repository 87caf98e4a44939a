package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sovm/sop-pme/keyring"
	"github.com/sovm/sop-pme/storageid"
)

// importSome imports n small tables and returns their storage_ids.
func (e *env) importSome(n int, flags ...string) []string {
	e.t.Helper()
	var ids []string
	for i := range n {
		in := filepath.Join(e.t.TempDir(), "t.csv")
		os.WriteFile(in, []byte(fmt.Sprintf("a,b\n%d,x\n%d,y\n", i, i+1)), 0o600)
		r := e.sop(append([]string{"import", "--json", "--assign-field-ids", in}, flags...)...)
		if r.code != 0 {
			e.t.Fatalf("import: %s", r)
		}
		var res importResult
		json.Unmarshal([]byte(r.stdout), &res)
		ids = append(ids, res.StorageID)
	}
	return ids
}

// readsAll checks that every object exports, with the given flags.
func (e *env) readsAll(ids []string, extra []string, flags ...string) {
	e.t.Helper()
	for _, id := range ids {
		r := e.run(append([]string{"SOP_PME_STORE=" + e.store}, extra...), append([]string{"export", id, "--format", "csv"}, flags...)...)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "a") || strings.Count(r.stdout, "\n") < 2 {
			e.t.Fatalf("%s does not read: %s", id, r)
		}
	}
}

// TestKEKSources: the KEK by flag, by file named in the environment, inline
// in the environment, and a KMS key by URL; refused: a KEK or keyring in the
// store, a KEK file open to others, two sources at once, bad base64.
func TestKEKSources(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	keys := t.TempDir()
	kekPath, ringPath := filepath.Join(keys, "my.kek"), filepath.Join(keys, "ring")
	in := filepath.Join(t.TempDir(), "t.csv")
	os.WriteFile(in, []byte("a\n1\n"), 0o600)
	r := e.ok("import", in, "--assign-field-ids", "--kek", kekPath, "--keyring", ringPath)
	if !strings.Contains(r.stderr, "created a new KEK in "+kekPath) || !strings.Contains(r.stderr, "created a keyring in "+ringPath) {
		t.Fatalf("import --kek: %s", r)
	}
	if _, err := os.Stat(e.conf); err == nil {
		t.Fatal("import --kek created the configuration directory")
	}
	id := storageIDLine.FindStringSubmatch(r.stdout)[1]
	raw, _ := os.ReadFile(kekPath)
	b64 := base64.StdEncoding.EncodeToString(raw)
	for name, c := range map[string]struct{ env, args []string }{
		"flag":             {nil, []string{"--kek", kekPath, "--keyring", ringPath}},
		"SOP_PME_KEK_FILE": {[]string{"SOP_PME_KEK_FILE=" + kekPath}, []string{"--keyring", ringPath}},
		"SOP_PME_KEK":      {[]string{"SOP_PME_KEK=" + b64, "SOP_PME_KEYRING=" + ringPath}, nil},
	} {
		e.readsAll([]string{id}, c.env, c.args...)
		_ = name
	}
	// Without --keyring, the keyring is "keyring" beside the KEK file.
	os.Rename(ringPath, filepath.Join(keys, "keyring"))
	e.readsAll([]string{id}, []string{"SOP_PME_KEK_FILE=" + kekPath})
	os.Rename(filepath.Join(keys, "keyring"), ringPath)

	inStore := filepath.Join(e.store, "kek")
	os.WriteFile(inStore, raw, 0o600)
	open := filepath.Join(keys, "open.kek")
	os.WriteFile(open, raw, 0o644)
	os.Chmod(open, 0o644)
	for name, c := range map[string]struct {
		env, args []string
		code      int
		want      string
	}{
		"bad base64":    {[]string{"SOP_PME_KEK=%%%"}, []string{"--keyring", ringPath}, exitFailure, "not standard base64"},
		"both in env":   {[]string{"SOP_PME_KEK=" + b64, "SOP_PME_KEK_FILE=" + kekPath}, nil, exitUsage, "set one"},
		"both flags":    {nil, []string{"--kek", kekPath, "--kms", "base64key://"}, exitUsage, "not both"},
		"KEK in store":  {nil, []string{"--kek", inStore, "--keyring", ringPath}, exitFailure, "untrusted side"},
		"ring in store": {nil, []string{"--kek", kekPath, "--keyring", filepath.Join(e.store, "ring")}, exitFailure, "untrusted side"},
		"open KEK file": {nil, []string{"--kek", open, "--keyring", ringPath}, exitFailure, "open to group or others"},
		"unknown KMS":   {nil, []string{"--kms", "nosuch://key", "--keyring", ringPath}, exitUsage, "--kms nosuch://key"},
	} {
		args := append([]string{"export", id, "--format", "csv"}, c.args...)
		r := e.run(append([]string{"SOP_PME_STORE=" + e.store}, c.env...), args...)
		checkFailure(t, r, c.code, []string{c.want}, append([]string{name}, args...))
	}
	r = e.sop("import", in, "--assign-field-ids", "--kek", inStore)
	checkFailure(t, r, exitFailure, []string{"untrusted side"}, []string{"import --kek in store"})
}

// base64Key returns a base64key:// URL for a fresh random key (the
// localsecrets driver of gocloud.dev/secrets).
func base64Key() string {
	k := make([]byte, 32)
	rand.Read(k)
	return "base64key://" + base64.URLEncoding.EncodeToString(k)
}

// TestKMS: a KMS key (base64key://, through gocloud.dev/secrets) is the
// master of the keyring; keys rotate moves the ring to another KMS key
// (rewrapping the ring key, or every DEK with --rekey); the old key then no
// longer opens it.
func TestKMS(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k1, k2, k3 := base64Key(), base64Key(), base64Key()
	ring := filepath.Join(t.TempDir(), "ring")
	ids := e.importSome(2, "--kms", k1, "--keyring", ring)
	if _, err := os.Stat(e.kekPath()); err == nil {
		t.Fatal("a KMS import created a KEK file")
	}
	e.readsAll(ids, []string{"SOP_PME_KMS=" + k1, "SOP_PME_KEYRING=" + ring})
	r := e.ok("keys", "rotate", "--kms", k1, "--to-kms", k2, "--keyring", ring)
	if !strings.Contains(r.stdout, "ring key") || strings.Contains(r.stdout, k2[12:]) {
		t.Errorf("rotate: %s", r)
	}
	e.readsAll(ids, nil, "--kms", k2, "--keyring", ring)
	checkFailure(t, e.sop("export", ids[0], "--format", "csv", "--kms", k1, "--keyring", ring), exitKey, []string{"KMS key", "wrong key"}, nil)
	r = e.ok("keys", "rotate", "--kms", k2, "--to-kms", k3, "--keyring", ring, "--rekey", "--json")
	var res rotateResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || !res.Rekeyed || res.DEKs != 2 {
		t.Fatalf("rotate --rekey: %v %s", err, r)
	}
	e.readsAll(ids, nil, "--kms", k3, "--keyring", ring)
}

// ringKEK opens the ring at path under the KEK file kek, read-only.
func ringKEK(t *testing.T, ring, kek string) (*keyring.Ring, error) {
	t.Helper()
	k, err := keyring.LoadKEKFile(kek)
	if err != nil {
		return nil, err
	}
	return keyring.Open(context.Background(), ring, k, keyring.WithReadOnly())
}

// TestKeysRotate: rotate replaces the KEK file and rewraps every DEK under
// a new ring key; the old KEK no longer opens the ring; every object reads.
func TestKeysRotate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ids := e.importSome(3)
	old, _ := os.ReadFile(e.kekPath())
	r := e.ok("keys", "rotate")
	if !strings.Contains(r.stdout, "3 DEKs") || !strings.Contains(r.stdout, "new ring key") {
		t.Fatalf("rotate: %s", r)
	}
	now, _ := os.ReadFile(e.kekPath())
	if len(now) != 32 || string(now) == string(old) {
		t.Fatal("the KEK file was not replaced")
	}
	if st, _ := os.Stat(e.kekPath()); st.Mode().Perm() != 0o600 {
		t.Fatalf("new KEK file mode %v", st.Mode())
	}
	e.readsAll(ids, nil)
	oldFile := filepath.Join(t.TempDir(), "old")
	os.WriteFile(oldFile, old, 0o600)
	if _, err := ringKEK(t, e.ringPath(), oldFile); err == nil {
		t.Fatal("the old KEK still opens the ring")
	}
	checkFailure(t, e.sop("export", ids[0], "--format", "csv", "--kek", oldFile, "--keyring", e.ringPath()), exitKey, []string{"wrong key"}, nil)

	// A KEK in $SOP_PME_KEK goes to --new-kek FILE.
	b64 := base64.StdEncoding.EncodeToString(now)
	newFile := filepath.Join(t.TempDir(), "new.kek")
	vars := []string{"SOP_PME_KEK=" + b64, "SOP_PME_KEYRING=" + e.ringPath()}
	checkFailure(t, e.run(vars, "keys", "rotate"), exitUsage, []string{"--new-kek"}, nil)
	r = e.run(vars, "keys", "rotate", "--new-kek", newFile)
	if r.code != 0 || !strings.Contains(r.stdout, "SOP_PME_KEK_FILE="+newFile) {
		t.Fatalf("rotate --new-kek: %s", r)
	}
	e.readsAll(ids, []string{"SOP_PME_KEK_FILE=" + newFile, "SOP_PME_KEYRING=" + e.ringPath()})
}

// TestKeysRotateCrash kills keys rotate (SIGKILL) after each of its steps:
// after the new KEK is written, and after the ring is re-keyed. At every
// point every DEK stays readable, by every command, and the next rotate
// completes; no DEK is lost.
func TestKeysRotateCrash(t *testing.T) {
	t.Parallel()
	for _, point := range []string{"after-new-kek", "after-rekey"} {
		t.Run(point, func(t *testing.T) {
			e := newEnv(t)
			ids := e.importSome(3)
			e.bin = crashBinary(t)
			r := e.run([]string{"SOP_PME_CRASH_AT=" + point}, "keys", "rotate")
			e.bin = sopBinary(t)
			if r.code != -1 {
				t.Fatalf("the rotate did not die: %s", r)
			}
			if _, err := os.Stat(nextKEK(e.kekPath())); err != nil {
				t.Fatalf("no KEK.next after the crash: %v", err)
			}
			// Every object reads, read-only, before any repair.
			e.readsAll(ids, nil)
			r = e.sop("export", ids[0], "--format", "csv")
			if point == "after-rekey" && !strings.Contains(r.stderr, "interrupted keys rotate") {
				t.Errorf("no warning about the interrupted rotation: %s", r)
			}
			// A new import works meanwhile, and its DEK survives too.
			ids = append(ids, e.importSome(1)...)
			r = e.ok("keys", "rotate")
			if point == "after-rekey" && !strings.Contains(r.stdout, "finished an interrupted rotation") {
				t.Errorf("rotate after the crash: %s", r)
			}
			if _, err := os.Stat(nextKEK(e.kekPath())); err == nil {
				t.Error("KEK.next is left after the rotation completed")
			}
			e.readsAll(ids, nil)
			if r := e.sop("export", ids[0], "--format", "csv"); strings.Contains(r.stderr, "warning") {
				t.Errorf("a warning after the rotation completed: %s", r)
			}
			ring, err := ringKEK(t, e.ringPath(), e.kekPath())
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range ids {
				id, _ := storageid.Parse(s)
				if _, err := ring.ResolveDEK(context.Background(), id); err != nil {
					t.Errorf("%s: %v", s, err)
				}
			}
		})
	}
}

// TestConcurrentFirstRuns runs two first imports at once, sharing the
// default KEK and keyring: both end with the same KEK and every DEK
// readable. Version 1 created the KEK without O_EXCL (the last write won)
// and rewrote the keyring from memory, losing DEKs while exiting 0.
func TestConcurrentFirstRuns(t *testing.T) {
	t.Parallel()
	for trial := range 3 {
		e := newEnv(t)
		in := filepath.Join(t.TempDir(), "t.csv")
		os.WriteFile(in, []byte("a\n1\n2\n"), 0o600)
		results := make([]result, 2)
		var wg sync.WaitGroup
		for i := range results {
			wg.Go(func() { results[i] = e.sop("import", "--assign-field-ids", "--row-group-rows", fmt.Sprint(i+1), in) })
		}
		wg.Wait()
		created := 0
		var ids []string
		for i, r := range results {
			if r.code != 0 {
				t.Fatalf("trial %d, import %d: %s", trial, i, r)
			}
			if strings.Contains(r.stderr, "created a new KEK") {
				created++
			}
			ids = append(ids, storageIDLine.FindStringSubmatch(r.stdout)[1])
		}
		if created != 1 {
			t.Fatalf("trial %d: %d runs created a KEK", trial, created)
		}
		e.readsAll(ids, nil)
	}
}

// TestMigrate imports the keyring an earlier version kept in the store.
func TestMigrate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	os.MkdirAll(e.store, 0o700)
	for src, dst := range map[string]string{"ring.json": "keyring.json", "kek": "kek"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "keyring", "testdata", "v1", src))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(e.store, dst), b, 0o600)
	}
	if r := e.ok("migrate"); !strings.Contains(r.stdout, "imported 40 DEKs") {
		t.Fatalf("migrate: %s", r)
	}
	if r := e.ok("migrate"); !strings.Contains(r.stdout, "imported 0 DEKs") {
		t.Fatalf("second migrate: %s", r)
	}
	ring, err := ringKEK(t, e.ringPath(), e.kekPath())
	if err != nil {
		t.Fatal(err)
	}
	list, _ := os.ReadFile(filepath.Join("..", "..", "keyring", "testdata", "v1", "deks.txt"))
	for line := range strings.Lines(string(list)) {
		id, err := storageid.Parse(strings.Fields(line)[0])
		if err != nil {
			t.Fatal(err)
		}
		d, err := ring.ResolveDEK(context.Background(), id)
		if err != nil || fmt.Sprintf("%x", d.Bytes()) != strings.Fields(line)[1] {
			t.Fatalf("%s after migrate: %v", id, err)
		}
	}
}

// TestRm: rm refuses without --yes off a terminal; with it, it forgets the
// DEK, then deletes the object; ls no longer lists it; export finds
// nothing; a second rm is "not found".
func TestRm(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ids := e.importSome(3)
	checkFailure(t, e.sop("rm", ids[0]), exitUsage, []string{"--yes"}, nil)
	e.readsAll(ids, nil)
	r := e.ok("rm", "--yes", ids[0], "--json")
	var res []rmResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || len(res) != 1 || !res[0].DEKForgotten || !res[0].ObjectDeleted {
		t.Fatalf("rm --json: %v %s", err, r)
	}
	if r := e.ok("ls"); strings.Contains(r.stdout, ids[0]) || !strings.Contains(r.stdout, ids[1]) {
		t.Errorf("ls after rm:\n%s", r.stdout)
	}
	e.fails(exitNotFound, []string{ids[0], "no such object"}, "export", ids[0], "--format", "csv")
	e.fails(exitNotFound, []string{ids[0], "no such object in the store, and no DEK"}, "rm", "--yes", ids[0])
	// An object whose DEK is already gone is deleted; a DEK whose object is
	// already gone is forgotten.
	ring := e.ringPath()
	kek, _ := keyring.LoadKEKFile(e.kekPath())
	rw, err := keyring.Open(context.Background(), ring, kek)
	if err != nil {
		t.Fatal(err)
	}
	id1, _ := storageid.Parse(ids[1])
	rw.Delete(context.Background(), id1)
	if r := e.ok("rm", "-y", ids[1]); !strings.Contains(r.stdout, "object deleted (the keyring held no DEK") {
		t.Errorf("rm without a DEK: %s", r)
	}
	os.Remove(filepath.Join(e.store, ids[2]+".data"))
	os.Remove(filepath.Join(e.store, ids[2]+".obao4"))
	if r := e.ok("rm", "-y", ids[2]); !strings.Contains(r.stdout, "DEK forgotten (the store held no such object)") {
		t.Errorf("rm without an object: %s", r)
	}
	if n, _ := rw.Len(context.Background()); n != 0 {
		t.Errorf("%d DEKs left", n)
	}
}

// TestImportsDuringRotate runs imports in three processes at a time while
// keys rotate runs again and again in another. Each import opens the keyring
// before it seals and puts the DEK after: a rotation that commits in between
// must not fail it (before imports followed a rotation, 11 of 60 exited 5,
// "the master key does not open the ring key"). Every import succeeds, and
// every object reads under the final KEK.
func TestImportsDuringRotate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ids := e.importSome(1)
	const importers, each = 3, 8
	in := filepath.Join(t.TempDir(), "t.csv")
	var rows strings.Builder
	rows.WriteString("a,b\n")
	for i := range 2000 {
		fmt.Fprintf(&rows, "%d,row %d\n", i, i)
	}
	os.WriteFile(in, []byte(rows.String()), 0o600)
	var (
		mu       sync.Mutex
		failed   []string
		rotated  int
		imported = ids
	)
	done := make(chan struct{})
	var wg, rot sync.WaitGroup
	rot.Go(func() {
		for range 60 {
			select {
			case <-done:
				return
			default:
			}
			r := e.sop("keys", "rotate")
			mu.Lock()
			if r.code != 0 {
				failed = append(failed, "rotate: "+r.String())
			} else {
				rotated++
			}
			mu.Unlock()
		}
	})
	for g := range importers {
		wg.Go(func() {
			for i := range each {
				r := e.sop("import", "--json", "--assign-field-ids", "--row-group-rows", fmt.Sprint(100+g*each+i), in)
				var res importResult
				mu.Lock()
				if r.code != 0 || json.Unmarshal([]byte(r.stdout), &res) != nil {
					failed = append(failed, r.String())
				} else {
					imported = append(imported, res.StorageID)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(done)
	rot.Wait()
	t.Logf("%d imports, %d rotations meanwhile, %d failures", importers*each, rotated, len(failed))
	for i, f := range failed {
		if i < 3 {
			t.Errorf("failed: %s", f)
		}
	}
	if len(failed) > 0 {
		t.Fatalf("%d of %d imports and rotations failed", len(failed), importers*each+rotated)
	}
	if rotated == 0 {
		t.Fatal("no rotation ran during the imports")
	}
	e.readsAll(imported, nil)
}

// TestRmShreds: after rm, the keyring file holds neither the storage_id nor
// the wrapped DEK of the object, anywhere in its bytes. bbolt stores a key
// and its value side by side in a leaf page, so the 60 bytes after the
// storage_id in the file before rm are its wrapped DEK. Before, bbolt's
// freed pages kept both, and bbolt could write the DEK back without a key.
func TestRmShreds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ids := e.importSome(3)
	id, err := storageid.Parse(ids[1])
	if err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(e.ringPath())
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(before, id[:])
	if i < 0 || i+32+60 > len(before) {
		t.Fatal("the keyring does not hold the storage_id before rm: the search proves nothing")
	}
	wrapped := bytes.Clone(before[i+32 : i+32+60])
	e.ok("rm", "--yes", ids[1])
	after, err := os.ReadFile(e.ringPath())
	if err != nil {
		t.Fatal(err)
	}
	if j := bytes.Index(after, wrapped); j >= 0 {
		t.Errorf("after rm, the keyring still holds the wrapped DEK at offset %d", j)
	}
	if j := bytes.Index(after, id[:]); j >= 0 {
		t.Errorf("after rm, the keyring still holds the storage_id at offset %d", j)
	}
	e.readsAll([]string{ids[0], ids[2]}, nil)
}
