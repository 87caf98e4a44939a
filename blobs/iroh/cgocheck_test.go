//go:build iroh

package iroh

import (
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
)

// TestBuiltWithCgocheck2 checks that under CI this package's tests run with
// GOEXPERIMENT=cgocheck2, as make test-iroh runs them. The experiment makes
// the Go runtime check every write of a pointer into memory that is not Go's,
// so a Go pointer left in the Rust library's memory (which cgo's pointer
// rules forbid, and the default check does not see) crashes the test run.
func TestBuiltWithCgocheck2(t *testing.T) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		t.Fatal("the test binary has no build information")
	}
	var exp string
	for _, s := range bi.Settings {
		if s.Key == "GOEXPERIMENT" {
			exp = s.Value
		}
	}
	if slices.Contains(strings.Split(exp, ","), "cgocheck2") {
		t.Logf("built with GOEXPERIMENT=%s", exp)
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("built with GOEXPERIMENT=%q, want cgocheck2: run the tests with make test-iroh", exp)
	}
	t.Skipf("built with GOEXPERIMENT=%q: the cgocheck2 pointer checks are off (make test-iroh turns them on)", exp)
}
