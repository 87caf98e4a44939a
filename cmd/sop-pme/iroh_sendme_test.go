//go:build iroh

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sendmeVersion is the sendme .ci/install-sendme installs.
const sendmeVersion = "0.37.1"

// sendmeTool is sendme, which .ci/install-sendme installs.
var sendmeTool = cachedTool{name: "sendme", env: "SOP_PME_SENDME",
	rel: "sendme-" + sendmeVersion + "/bin/sendme", install: ".ci/install-sendme"}

// TestIrohSendme reads an object from an iroh node that is not ours:
// sendme 0.37.1 (iroh 1.3, iroh-blobs 0.103) sends the object's file, and
// the command, given sendme's blob ticket as --store iroh://TICKET, exports
// a projection of it (every range verified against the storage_id, which
// is the file's BLAKE3 hash: sendme serves the file's blob under it),
// verifies it whole, and fetches it into a store of its own.
//
// sendme binds the IPv6 unspecified address beside the IPv4 one it is
// given, so the test runs again, sendme and every command with it, in a
// network namespace of its own with only loopback (unshare -n, ip link set
// lo up), as TestKMSReal does.
func TestIrohSendme(t *testing.T) {
	if !inLoopbackNetns(t, "TestIrohSendme", []string{"SOP_PME_TEST_IROH_BINARY=" + irohBinary(t), "SOP_PME_SENDME=" + sendmeTool.path(t)}, sendmeTool.need) {
		return
	}
	sendmeInNetns(t)
}

func sendmeInNetns(t *testing.T) {
	e := newEnv(t)
	e.bin = os.Getenv("SOP_PME_TEST_IROH_BINARY")
	dir := t.TempDir()
	id := e.importJSON(bigCSV(t, dir, "a.csv", 0, 3000), "--assign-field-ids").StorageID
	data, err := os.ReadFile(filepath.Join(e.store, id+".data"))
	if err != nil {
		t.Fatal(err)
	}
	send := t.TempDir()
	if err := os.WriteFile(filepath.Join(send, "object"), data, 0o600); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	cmd := exec.Command(os.Getenv("SOP_PME_SENDME"), "send", "object", "--relay", "disabled",
		"--magic-ipv4-addr", fmt.Sprintf("127.0.0.1:%d", freePort(t)), "--ticket-type", "addresses", "--no-progress")
	cmd.Dir = send // sendme keeps its store in .sendme-send-* there
	cmd.Env = []string{"HOME=" + send, "PATH=" + os.Getenv("PATH")}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	tickets := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		found := false
		for sc.Scan() {
			for _, w := range strings.Fields(sc.Text()) {
				if !found && strings.HasPrefix(w, "blob") {
					tickets <- w
					found = true
				}
			}
		}
		close(tickets)
	}()
	var ticket string
	select {
	case tk, ok := <-tickets:
		if !ok {
			t.Fatalf("sendme printed no blob ticket\n%s", stderr.String())
		}
		ticket = tk
	case <-time.After(60 * time.Second):
		t.Fatalf("sendme printed no ticket within 60 s\n%s", stderr.String())
	}
	t.Logf("sendme ready in %v: %.40s…", time.Since(start).Round(time.Millisecond), ticket)

	want := e.ok("export", id, "--format", "csv", "--fields", "id").stdout
	r := e.run([]string{"SOP_PME_STORE=iroh://" + ticket}, "export", id, "--format", "csv", "--fields", "id")
	if r.code != 0 || r.stdout != want {
		t.Fatalf("projection read from sendme: %s\nwant stdout %.100q", r, want)
	}
	if r := e.run([]string{"SOP_PME_STORE=iroh://" + ticket}, "verify", id); r.code != 0 {
		t.Fatalf("verify over sendme: %s", r)
	}
	local := filepath.Join(t.TempDir(), "store")
	r = e.run(nil, "fetch", id, "--from", ticket, "--store", local, "--cache", filepath.Join(t.TempDir(), "cache"))
	if r.code != 0 {
		t.Fatalf("fetch from sendme: %s", r)
	}
	got, err := os.ReadFile(filepath.Join(local, id+".data"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("object fetched from sendme differs (%v)", err)
	}
	// An object sendme does not hold: not found.
	r = e.run([]string{"SOP_PME_STORE=iroh://" + ticket}, "verify", strings.Repeat("ab", 32))
	if r.code != exitNotFound {
		t.Errorf("verify of an object sendme lacks: %s, want exit %d", r, exitNotFound)
	}
}
