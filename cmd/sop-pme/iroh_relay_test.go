//go:build iroh

package main

import (
	"bytes"
	"context"
	"encoding/base32"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// relayVersion is the iroh-relay .ci/install-relay installs: the relay
// server of our iroh (1.4.1).
const relayVersion = "1.4.1"

// relayTool is iroh-relay, which .ci/install-relay installs.
var relayTool = cachedTool{name: "iroh-relay", env: "SOP_PME_IROH_RELAY",
	rel: "iroh-relay-" + relayVersion + "/bin/iroh-relay", install: ".ci/install-relay"}

// startRelay runs iroh-relay in dev mode (plain HTTP, no QUIC address
// discovery) with its relay and its metrics bound to 127.0.0.1 only (the
// config file's http_bind_addr and metrics_bind_addr; iroh-relay binds
// nothing else then), waits until it answers, and returns its URL and a
// function reading its metrics. The test's cleanup stops it.
func startRelay(t *testing.T) (string, func() string) {
	t.Helper()
	bin := relayTool.path(t)
	dir := t.TempDir()
	port, mport := freePort(t), freePort(t)
	cfg := fmt.Sprintf("enable_relay = true\nhttp_bind_addr = \"127.0.0.1:%d\"\nenable_quic_addr_discovery = false\nenable_metrics = true\nmetrics_bind_addr = \"127.0.0.1:%d\"\n", port, mport)
	if err := os.WriteFile(filepath.Join(dir, "relay.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--dev", "-c", filepath.Join(dir, "relay.toml"))
	cmd.Dir = dir
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	metrics := func() string {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("http://127.0.0.1:%d/metrics", mport), nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return string(b)
	}
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if resp, err := http.Get(url + "/generate_204"); err == nil {
			resp.Body.Close()
			if metrics() != "" {
				return url, metrics
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("iroh-relay did not answer on %s within 30 s\n%s", url, log.String())
		}
	}
}

// relayedBytes sums the relay's counters of bytes it received and sent,
// from its Prometheus metrics.
func relayedBytes(t *testing.T, metrics string) (recv, sent int64) {
	t.Helper()
	for _, m := range []struct {
		name string
		v    *int64
	}{{"bytes_recv", &recv}, {"bytes_sent", &sent}} {
		re := regexp.MustCompile(`(?m)^\w*` + m.name + `\w*(?:\{[^}]*\})? (\d+)`)
		for _, g := range re.FindAllStringSubmatch(metrics, -1) {
			n, err := strconv.ParseInt(g[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			*m.v += n
		}
	}
	return recv, sent
}

// relayOnly returns ticket (an iroh endpoint ticket naming the relay at
// url and one IP address) without its IP address: its postcard bytes are
// the ticket variant, the endpoint id, the number of addresses, then the
// addresses in order, the relay (variant 0, the URL's length, the URL)
// before the IP one (variant 1), which is cut.
func relayOnly(t *testing.T, ticket, url string) string {
	t.Helper()
	enc := base32.StdEncoding.WithPadding(base32.NoPadding)
	b, err := enc.DecodeString(strings.ToUpper(strings.TrimPrefix(ticket, "endpoint")))
	if err != nil {
		t.Fatalf("ticket %q: %v", ticket, err)
	}
	i := bytes.Index(b, []byte(url))
	if i < 3 {
		t.Fatalf("ticket %x names no relay %s", b, url)
	}
	n := int(b[i-1])
	end := i + n
	if b[i-2] != 0 || b[i-3] != 2 || end >= len(b) || b[end] != 1 {
		t.Fatalf("ticket %x: not the layout expected (2 addresses, the relay first)", b)
	}
	out := append([]byte{}, b[:end]...)
	out[i-3] = 1
	return "endpoint" + strings.ToLower(enc.EncodeToString(out))
}

// TestIrohRelay: serve --relay URL with a real relay (iroh-relay 1.4.1 on
// 127.0.0.1), and a reader given a ticket that names the relay and no IP
// address, so that it can reach the node only through the relay: it
// exports a projection of an object and verifies it over iroh://TICKET,
// and fetches it whole; the relay's metrics show it carried at least the
// object's bytes. The node binds [::1] and the reader 127.0.0.1 (its
// binding for a peer whose only address is a relay on loopback), so no
// direct path between them exists: one first run with both on 127.0.0.1
// saw iroh find the direct one (it learns the node's addresses through the
// relay) and the relay carry 57 KB of the 225 KB read.
func TestIrohRelay(t *testing.T) {
	t.Parallel()
	url, metrics := startRelay(t)
	a := newEnv(t)
	a.bin = irohBinary(t)
	dir := t.TempDir()
	id := a.importJSON(bigCSV(t, dir, "a.csv", 0, 3000), "--assign-field-ids").StorageID
	data, err := os.ReadFile(filepath.Join(a.store, id+".data"))
	if err != nil {
		t.Fatal(err)
	}
	a.fails(exitUsage, []string{"--relay"}, "serve", "--relay", "ftp://x", "--iroh-dir", filepath.Join(t.TempDir(), "bad"))
	srv := serve(t, a, filepath.Join(t.TempDir(), "iroh-a"), "--relay", url, "--bind", "[::1]:0", "--rescan", "0")
	ticket := relayOnly(t, srv.ticket, url)
	recv0, sent0 := relayedBytes(t, metrics())

	want := a.ok("export", id, "--format", "csv", "--fields", "id").stdout
	r := a.run([]string{"SOP_PME_STORE=iroh://" + ticket}, "export", id, "--format", "csv", "--fields", "id")
	if r.code != 0 || r.stdout != want {
		t.Fatalf("projection through the relay: %s\nwant stdout %.100q", r, want)
	}
	if r := a.run([]string{"SOP_PME_STORE=iroh://" + ticket}, "verify", id); r.code != 0 {
		t.Fatalf("verify through the relay: %s", r)
	}
	local := filepath.Join(t.TempDir(), "store")
	r = a.run(nil, "fetch", id, "--from", ticket, "--store", local, "--cache", filepath.Join(t.TempDir(), "cache"))
	if r.code != 0 {
		t.Fatalf("fetch through the relay: %s", r)
	}
	got, err := os.ReadFile(filepath.Join(local, id+".data"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("object fetched through the relay differs (%v)", err)
	}
	recv, sent := relayedBytes(t, metrics())
	t.Logf("object %d bytes; the relay received %d and sent %d bytes during the reads", len(data), recv-recv0, sent-sent0)
	// verify and fetch each read the whole object from the node.
	if recv-recv0 < 2*int64(len(data)) || sent-sent0 < 2*int64(len(data)) {
		t.Fatalf("the relay carried %d/%d bytes (received/sent), less than the %d bytes of two whole reads: the bytes did not go through it\n%s",
			recv-recv0, sent-sent0, 2*len(data), metrics())
	}
}
