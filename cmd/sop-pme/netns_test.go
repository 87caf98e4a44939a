package main

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// netnsVar is set in the copy of the test binary that runs inside the
// network namespace.
const netnsVar = "SOP_PME_TEST_IN_NETNS"

// inLoopbackNetns reports whether the test runs inside the namespace that
// reexecInLoopbackNetns made. Outside it, it re-runs the test named test
// (this test binary, with env added) inside a new network namespace whose
// only interface is loopback, brought up (unshare -n; -rn in a user
// namespace when not root), waits for it, logs its output, fails the test
// if it failed, and returns false: the caller then returns. A server that
// listens on every interface (local-kms, sendme) can then be reached only
// over 127.0.0.1. need reports a missing tool or a namespace that cannot
// be made: a failure under CI=true, a skip otherwise.
func inLoopbackNetns(t *testing.T, test string, env []string, need func(t *testing.T, format string, a ...any)) bool {
	t.Helper()
	if os.Getenv(netnsVar) != "" {
		return true
	}
	for _, tool := range []string{"unshare", "ip"} {
		if _, err := exec.LookPath(tool); err != nil {
			need(t, "%s is missing (util-linux, iproute2): %v", tool, err)
		}
	}
	flags := "-n"
	if os.Geteuid() != 0 {
		flags = "-rn" // a user namespace, where we may make a network one
	}
	args := []string{flags, "sh", "-c", `ip link set lo up && exec "$0" "$@"`,
		os.Args[0], "-test.run=^" + test + "$", "-test.count=1", "-test.timeout=5m"}
	if testing.Verbose() {
		args = append(args, "-test.v")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "unshare", args...)
	cmd.Env = append(append(os.Environ(), netnsVar+"=1"), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "unshare failed") || strings.Contains(string(out), "Operation not permitted") {
			need(t, "cannot make a network namespace: %v\n%s", err, out)
		}
		t.Fatalf("%s in a network namespace: %v\n%s", test, err, out)
	}
	t.Logf("in a network namespace:\n%s", out)
	return false
}
