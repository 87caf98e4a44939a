package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sovm/sop-pme/keyring"
	"github.com/sovm/sop-pme/storageid"
)

// TestJSONErrors: under --json, a failure prints one JSON object on one
// line of stderr, {"error": ..., "code": ...}: the line the command prints
// without --json (less its "sop-pme: " prefix) and the exit code; usage
// errors too, even when the command line does not parse.
//
// Before: "sop-pme: ..." lines, as without --json.
func TestJSONErrors(t *testing.T) {
	e := newEnv(t)
	id := e.demoObject(100)
	unknown := storageid.Sum([]byte("no such object")).String()
	missing := filepath.Join(t.TempDir(), "missing.csv")
	cases := []struct {
		code int
		args []string
	}{
		{exitNotFound, []string{"verify", unknown}},
		{exitNotFound, []string{"check", unknown}},
		{exitNotFound, []string{"inspect", unknown}},
		{exitUsage, []string{"inspect", "zz"}},
		{exitUsage, []string{"ls", "--frob"}},
		{exitUsage, []string{"version", "x"}},
		{exitNotFound, []string{"import", missing}},
		{exitNotFound, []string{"ls", "--store", filepath.Join(t.TempDir(), "typo")}},
		{exitKey, []string{"check", id, "--kek", writeKEK(t), "--keyring", e.ringPath()}},
	}
	for _, c := range cases {
		plain := e.sop(c.args...)
		checkFailure(t, plain, c.code, nil, c.args)
		args := append([]string{c.args[0], "--json"}, c.args[1:]...)
		r := e.sop(args...)
		if r.code != c.code {
			t.Errorf("sop-pme %s: exit %d, want %d\n%s", strings.Join(args, " "), r.code, c.code, r)
			continue
		}
		lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
		var got map[string]any
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &got); err != nil {
			t.Errorf("sop-pme %s: the error is not JSON: %v\n%s", strings.Join(args, " "), err, r)
			continue
		}
		want := strings.TrimPrefix(strings.TrimSpace(plain.stderr[strings.LastIndex(strings.TrimSpace(plain.stderr), "\n")+1:]), "sop-pme: ")
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range got {
				if !yield(k) {
					return
				}
			}
		})
		if !slices.Equal(keys, []string{"code", "error"}) || got["code"] != float64(c.code) || got["error"] != want {
			t.Errorf("sop-pme %s: %v, want {error: %q, code: %d}", strings.Join(args, " "), got, want, c.code)
		}
	}
}

// writeKEK writes a new random KEK into a file of the test's and returns
// its path.
func writeKEK(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kek")
	if _, err := keyring.CreateKEKFile(p); err != nil {
		t.Fatal(err)
	}
	return p
}
