//go:build !iroh

package main

import (
	"strings"
	"testing"
)

// TestIrohUntaggedBuild: the build without the iroh tag has serve, fetch
// and iroh:// stores only to say it lacks them (exit 1, naming the build
// to make), and links no Rust library.
func TestIrohUntaggedBuild(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ticket := "endpointacaomvdtwxrllyib6nfwgmjz5mwzngbhvqyfazzb2fieultshzwtgaibab7qaaab36lqg"
	id := strings.Repeat("ab", 32)
	for _, args := range [][]string{
		{"serve"},
		{"fetch", id, "--from", ticket},
		{"verify", id, "--store", "iroh://" + ticket},
		{"export", id, "--format", "csv", "--store", "iroh://" + ticket},
	} {
		e.fails(exitFailure, []string{"built without iroh", "-tags iroh"}, args...)
	}
	e.fails(exitUsage, []string{"iroh://TICKET"}, "verify", id, "--store", "iroh://")
	if r := e.ok("version"); !strings.Contains(r.stdout, "iroh      no (build with: make iroh-lib") {
		t.Errorf("version does not say how to get iroh:\n%s", r.stdout)
	}
}
