package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sovm/sop-pme/keyring"
	"github.com/sovm/sop-pme/storageid"
)

// runMainEnv makes the test binary run main (see TestMain), so that the
// tests see real exit codes and real processes.
const runMainEnv = "SOP_PME_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		os.Args = append([]string{"sop-pme"}, os.Args[1:]...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// isolate points the user configuration directory at a fresh directory and
// clears the KEK variables; it returns the directory.
func isolate(t *testing.T) string {
	t.Helper()
	conf := filepath.Join(t.TempDir(), "config")
	t.Setenv("XDG_CONFIG_HOME", conf)
	t.Setenv("HOME", filepath.Join(t.TempDir(), "home"))
	t.Setenv("SOP_PME_KEK", "")
	t.Setenv("SOP_PME_KEK_FILE", "")
	return conf
}

type result struct {
	code           int
	stdout, stderr string
}

// run runs sop-pme in a child process (bounded to a minute) with the
// environment of the test plus env.
func run(t *testing.T, env []string, args ...string) result {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = append(append(os.Environ(), runMainEnv+"=1"), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code, stdout.String(), stderr.String()}
}

// files lists every file and directory under the given roots.
func files(t *testing.T, roots ...string) []string {
	t.Helper()
	var out []string
	for _, root := range roots {
		filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
			if err == nil {
				out = append(out, p)
			}
			return nil
		})
	}
	slices.Sort(out)
	return out
}

var storageIDLine = regexp.MustCompile(`storage_id\s+([0-9a-f]{64})`)

func TestDemoReadVerifyCheck(t *testing.T) {
	conf := isolate(t)
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "store")
	var out bytes.Buffer
	if err := demo(ctx, &out, []string{"-store", dir, "-rows", "5000"}); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	kekPath := filepath.Join(conf, "sop-pme", "kek")
	for _, want := range []string{"storage_id", "size", "unpadded size", "key_ref", "pme.DEK(REDACTED)",
		"conformant SOP-PME-1 object", "object verified: false", "object verified: true",
		"created a new KEK in " + kekPath, "KEK            in " + kekPath} {
		if !strings.Contains(text, want) {
			t.Errorf("demo output lacks %q:\n%s", want, text)
		}
	}
	kek, _ := os.ReadFile(kekPath)
	if len(kek) != 32 || bytes.Contains(out.Bytes(), kek) {
		t.Fatal("the KEK is missing or was printed")
	}
	for _, name := range []string{"kek", "keyring", "keyring.json"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			t.Errorf("the store holds %s", name)
		}
	}
	id := storageIDLine.FindStringSubmatch(text)
	if id == nil {
		t.Fatalf("no storage_id in:\n%s", text)
	}
	// A second demo uses the same KEK and says nothing about creating one.
	out.Reset()
	if err := demo(ctx, &out, []string{"-store", dir, "-rows", "10"}); err != nil || strings.Contains(out.String(), "created") {
		t.Fatalf("second demo: %v\n%s", err, out.String())
	}
	if again, _ := os.ReadFile(kekPath); !bytes.Equal(again, kek) {
		t.Fatal("the second demo replaced the KEK")
	}
	out.Reset()
	if err := read(ctx, &out, []string{"-store", dir, "-id", id[1], "-fields", "2,3", "-limit", "2"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "customer=customer-00001  amount=7") || !strings.Contains(out.String(), "5000 rows") {
		t.Fatalf("read output:\n%s", out.String())
	}
	out.Reset()
	if err := verifyCmd(ctx, &out, []string{"-store", dir, "-id", id[1]}); err != nil || !strings.Contains(out.String(), "every byte matches") {
		t.Fatalf("verify: %v\n%s", err, out.String())
	}
	// Damage the object: verify and check fail.
	data := filepath.Join(dir, id[1]+".data")
	b, _ := os.ReadFile(data)
	b[len(b)/2] ^= 1
	os.WriteFile(data, b, 0o600)
	if err := verifyCmd(ctx, &out, []string{"-store", dir, "-id", id[1]}); err == nil {
		t.Fatal("verify of a damaged object succeeded")
	}
	out.Reset()
	if err := check(ctx, &out, []string{"-store", dir, "-id", id[1]}); !errors.Is(err, errNotConformant) || !strings.Contains(out.String(), "storage_id") {
		t.Fatalf("check of a damaged object: %v\n%s", err, out.String())
	}
	if err := read(ctx, &out, []string{"-store", dir, "-id", "nope"}); err == nil {
		t.Fatal("read with a bad id succeeded")
	}
}

// TestReadOnlyCommandsCreateNothing: read, verify and check without a KEK
// or a keyring fail and create no file or directory. Version 1 created a
// kek and a keyring.json in the store.
func TestReadOnlyCommandsCreateNothing(t *testing.T) {
	conf := isolate(t)
	store := filepath.Join(t.TempDir(), "store")
	os.Mkdir(store, 0o700)
	id := storageid.Sum([]byte("x")).String()
	before := files(t, conf, store)
	for _, cmd := range []string{"read", "verify", "check"} {
		r := run(t, nil, cmd, "-store", store, "-id", id)
		if r.code != 1 || !strings.Contains(r.stderr, "no KEK at") {
			t.Errorf("%s without a KEK: exit %d, %s", cmd, r.code, r.stderr)
		}
	}
	// With a KEK but no keyring.
	kekPath := filepath.Join(t.TempDir(), "kek")
	keyring.CreateKEKFile(kekPath)
	before = append(before, files(t, filepath.Dir(kekPath))...)
	slices.Sort(before)
	for _, cmd := range []string{"read", "verify", "check"} {
		r := run(t, nil, cmd, "-store", store, "-kek", kekPath, "-id", id)
		if r.code != 1 || !strings.Contains(r.stderr, "no keyring at") {
			t.Errorf("%s without a keyring: exit %d, %s", cmd, r.code, r.stderr)
		}
	}
	if after := files(t, conf, store, filepath.Dir(kekPath)); !slices.Equal(before, after) {
		t.Fatalf("read-only commands created files:\nbefore %v\nafter  %v", before, after)
	}
}

// TestKEKSources gives the KEK by flag, by file in the environment and
// inline in the environment, and refuses a KEK in the store, an open KEK
// file and a wrong KEK.
func TestKEKSources(t *testing.T) {
	conf := isolate(t)
	store := filepath.Join(t.TempDir(), "store")
	keys := t.TempDir()
	kekPath, ringPath := filepath.Join(keys, "my.kek"), filepath.Join(keys, "ring")
	r := run(t, nil, "demo", "-store", store, "-rows", "100", "-kek", kekPath, "-keyring", ringPath)
	if r.code != 0 || !strings.Contains(r.stdout, "created a new KEK in "+kekPath) || !strings.Contains(r.stdout, "created a keyring in "+ringPath) {
		t.Fatalf("demo -kek: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "read -store "+store+" -kek "+kekPath+" -keyring "+ringPath+" -id") {
		t.Errorf("the next: hint lacks the key flags:\n%s", r.stdout)
	}
	if _, err := os.Stat(conf); err == nil {
		t.Fatal("demo -kek created the configuration directory")
	}
	id := storageIDLine.FindStringSubmatch(r.stdout)[1]
	raw, _ := os.ReadFile(kekPath)
	b64 := base64.StdEncoding.EncodeToString(raw)
	for name, c := range map[string]struct {
		env  []string
		args []string
	}{
		"flag":             {nil, []string{"-kek", kekPath, "-keyring", ringPath}},
		"SOP_PME_KEK_FILE": {[]string{"SOP_PME_KEK_FILE=" + kekPath}, []string{"-keyring", ringPath}},
		"SOP_PME_KEK":      {[]string{"SOP_PME_KEK=" + b64}, []string{"-keyring", ringPath}},
	} {
		r := run(t, c.env, append([]string{"verify", "-store", store, "-id", id}, c.args...)...)
		if r.code != 0 || !strings.Contains(r.stdout, "every byte matches") {
			t.Errorf("%s: exit %d\n%s%s", name, r.code, r.stdout, r.stderr)
		}
	}
	// Without -keyring, the keyring is the file "keyring" beside the KEK.
	os.Rename(ringPath, filepath.Join(keys, "keyring"))
	r = run(t, []string{"SOP_PME_KEK_FILE=" + kekPath}, "verify", "-store", store, "-id", id)
	os.Rename(filepath.Join(keys, "keyring"), ringPath)
	if r.code != 0 || !strings.Contains(r.stdout, "every byte matches") {
		t.Errorf("ring beside the KEK: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	other := base64.StdEncoding.EncodeToString(keyring.NewKEK().Bytes())
	inStore := filepath.Join(store, "kek")
	os.WriteFile(inStore, raw, 0o600)
	open := filepath.Join(keys, "open.kek")
	os.WriteFile(open, raw, 0o644)
	os.Chmod(open, 0o644)
	for name, c := range map[string]struct {
		env  []string
		args []string
		want string
	}{
		"wrong KEK":     {[]string{"SOP_PME_KEK=" + other}, []string{"-keyring", ringPath}, "wrong key-encryption key"},
		"bad base64":    {[]string{"SOP_PME_KEK=%%%"}, []string{"-keyring", ringPath}, "not standard base64"},
		"both":          {[]string{"SOP_PME_KEK=" + b64, "SOP_PME_KEK_FILE=" + kekPath}, nil, "set one"},
		"KEK in store":  {nil, []string{"-kek", inStore, "-keyring", ringPath}, "untrusted side"},
		"ring in store": {nil, []string{"-kek", kekPath, "-keyring", filepath.Join(store, "ring")}, "untrusted side"},
		"open KEK file": {nil, []string{"-kek", open, "-keyring", ringPath}, "open to group or others"},
	} {
		r := run(t, c.env, append([]string{"read", "-store", store, "-id", id}, c.args...)...)
		if r.code != 1 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%s: exit %d, %s", name, r.code, r.stderr)
		}
	}
	r = run(t, nil, "demo", "-store", store, "-rows", "10", "-kek", inStore)
	if r.code != 1 || !strings.Contains(r.stderr, "untrusted side") {
		t.Errorf("demo with the KEK in the store: exit %d, %s", r.code, r.stderr)
	}
}

// TestConcurrentFirstRuns runs two first demos at once, sharing the
// default KEK and keyring: both must end with the same KEK and every DEK
// readable. Version 1 created the KEK without O_EXCL (the last write won)
// and rewrote the keyring from memory, losing DEKs while exiting 0.
func TestConcurrentFirstRuns(t *testing.T) {
	for trial := range 3 {
		conf := isolate(t)
		stores := []string{filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")}
		results := make([]result, len(stores))
		var wg sync.WaitGroup
		for i, s := range stores {
			wg.Go(func() { results[i] = run(t, nil, "demo", "-store", s, "-rows", "2000") })
		}
		wg.Wait()
		created := 0
		for i, r := range results {
			if r.code != 0 {
				t.Fatalf("trial %d, demo %d: exit %d\n%s", trial, i, r.code, r.stderr)
			}
			if strings.Contains(r.stdout, "created a new KEK") {
				created++
			}
		}
		if created != 1 {
			t.Fatalf("trial %d: %d runs created a KEK", trial, created)
		}
		for i, r := range results {
			id := storageIDLine.FindStringSubmatch(r.stdout)[1]
			rr := run(t, nil, "read", "-store", stores[i], "-id", id, "-limit", "1")
			if rr.code != 0 || !strings.Contains(rr.stdout, "2000 rows") {
				t.Fatalf("trial %d: the object of demo %d does not read: exit %d, %s", trial, i, rr.code, rr.stderr)
			}
		}
		if st, err := os.Stat(filepath.Join(conf, "sop-pme", "kek")); err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("trial %d: KEK file: %v", trial, err)
		}
	}
}

// TestMigrate imports the keyring an earlier version kept in the store.
func TestMigrate(t *testing.T) {
	isolate(t)
	store := t.TempDir()
	for src, dst := range map[string]string{"ring.json": "keyring.json", "kek": "kek"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "keyring", "testdata", "v1", src))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(store, dst), b, 0o600)
	}
	r := run(t, nil, "migrate", "-store", store)
	if r.code != 0 || !strings.Contains(r.stdout, "imported 40 DEKs") {
		t.Fatalf("migrate: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = run(t, nil, "migrate", "-store", store)
	if r.code != 0 || !strings.Contains(r.stdout, "imported 0 DEKs") {
		t.Fatalf("second migrate: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// Every migrated DEK resolves from the new keyring.
	conf, _ := os.UserConfigDir()
	kek, err := keyring.LoadKEKFile(filepath.Join(conf, "sop-pme", "kek"))
	if err != nil {
		t.Fatal(err)
	}
	ring, err := keyring.Open(context.Background(), filepath.Join(conf, "sop-pme", "keyring"), kek, keyring.WithReadOnly())
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
