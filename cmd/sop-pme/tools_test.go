package main

import (
	"os"
	"path/filepath"
	"testing"
)

// A cachedTool is an outside program a test runs (a server, a peer), which
// a script of .ci installs once under $HOME/.cache/sop-pme/bin, in a
// directory of its version; an environment variable may name another
// binary.
type cachedTool struct {
	name    string // what the messages call it
	env     string // the variable naming another binary
	rel     string // its path under $HOME/.cache/sop-pme/bin
	install string // the script that installs it
}

// path returns the tool's binary: $env, or where its install script puts
// it. Missing, the test skips, or fails under CI=true.
func (c cachedTool) path(t *testing.T) string {
	t.Helper()
	p := os.Getenv(c.env)
	if p == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			c.need(t, "no home directory to find %s in: %v", c.name, err)
		}
		p = filepath.Join(home, ".cache", "sop-pme", "bin", filepath.FromSlash(c.rel))
	}
	if st, err := os.Stat(p); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		c.need(t, "no %s binary at %s (or set %s)", c.name, p, c.env)
	}
	return p
}

// need fails the test under CI=true, where every tool must be there, and
// skips it otherwise.
func (c cachedTool) need(t *testing.T, format string, a ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format+" (CI=true: a missing tool is a failure; run %s)", append(a, c.install)...)
	}
	t.Skipf(format+" (skipped; %s installs %s)", append(a, c.install, c.name)...)
}
