//go:build iroh

package main

import (
	"bytes"
	"context"
	"encoding/base32"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sovm/sop-pme/blobs/iroh"
)

// dnsServerVersion is the iroh-dns-server .ci/install-dns-server installs:
// the pkarr relay and DNS server of our iroh (1.4.1).
const dnsServerVersion = "1.4.1"

// dnsServerTool is iroh-dns-server, which .ci/install-dns-server
// installs.
var dnsServerTool = cachedTool{name: "iroh-dns-server", env: "SOP_PME_IROH_DNS_SERVER",
	rel: "iroh-dns-server-" + dnsServerVersion + "/bin/iroh-dns-server", install: ".ci/install-dns-server"}

// syncBuffer is a bytes.Buffer safe for a process's output and a test's
// reads at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// dnsServer is an iroh-dns-server run by a test.
type dnsServer struct {
	cmd     *exec.Cmd
	pkarr   string // the pkarr relay's URL, http://127.0.0.1:PORT/pkarr
	mport   int
	log     *syncBuffer
	exited  chan struct{} // closed when the process has exited
	stopped bool
}

// startDNSServer runs iroh-dns-server with a config that binds everything
// it listens on to 127.0.0.1 (HTTP with the pkarr relay, DNS on UDP and
// TCP, metrics; no HTTPS section, so no HTTPS listener and no ACME), the
// mainline DHT off, and its database in a temporary directory; waits until
// it answers; and checks with ss that every socket it listens on is on
// 127.0.0.1. Its log (RUST_LOG debug for its HTTP requests) is kept. The
// test's cleanup stops it.
func startDNSServer(t *testing.T) *dnsServer {
	t.Helper()
	bin := dnsServerTool.path(t)
	dir := t.TempDir()
	port, dport, mport := freePort(t), freePort(t), freePort(t)
	cfg := fmt.Sprintf(`pkarr_put_rate_limit = "disabled"
data_dir = %q

[http]
port = %d
bind_addr = "127.0.0.1"

[dns]
port = %d
bind_addr = "127.0.0.1"
default_soa = "ns.sop-pme.test. hostmaster.sop-pme.test. 0 10800 3600 604800 3600"
default_ttl = 30
origins = ["sop-pme.test.", "."]

[metrics]
disabled = false
bind_addr = "127.0.0.1:%d"

[mainline]
enabled = false
`, filepath.Join(dir, "data"), port, dport, mport)
	if err := os.WriteFile(filepath.Join(dir, "dns.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	d := &dnsServer{pkarr: fmt.Sprintf("http://127.0.0.1:%d/pkarr", port), mport: mport, log: &syncBuffer{}, exited: make(chan struct{})}
	d.cmd = exec.Command(bin, "--config", filepath.Join(dir, "dns.toml"))
	d.cmd.Dir = dir
	d.cmd.Env = append(os.Environ(), "RUST_LOG=info,tower_http=debug,iroh_dns_server=debug", "NO_COLOR=1")
	d.cmd.Stdout, d.cmd.Stderr = d.log, d.log
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		d.cmd.Wait()
		close(d.exited)
	}()
	t.Cleanup(d.stop)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", port)); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 && d.metrics(t) != "" {
				break
			}
		}
		select {
		case <-d.exited:
			t.Fatalf("iroh-dns-server exited: %v\n%s", d.cmd.ProcessState, d.log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("iroh-dns-server did not answer on 127.0.0.1:%d within 30 s\n%s", port, d.log.String())
		}
	}
	d.checkLoopbackOnly(t, []int{port, dport, mport})
	return d
}

// checkLoopbackOnly checks, with ss, that every TCP and UDP socket the
// server listens on is on 127.0.0.1, and that it listens on each of ports.
func (d *dnsServer) checkLoopbackOnly(t *testing.T, ports []int) {
	t.Helper()
	out, err := exec.Command("ss", "-H", "-ltnup").CombinedOutput()
	if err != nil {
		t.Fatalf("ss -ltnup: %v\n%s", err, out)
	}
	pid := fmt.Sprintf("pid=%d,", d.cmd.Process.Pid)
	var local []string
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.Contains(line, pid) {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 5 {
			t.Fatalf("ss line %q: too few fields", line)
		}
		local = append(local, f[4])
		if !strings.HasPrefix(f[4], "127.0.0.1:") {
			t.Errorf("iroh-dns-server listens on %s, not on 127.0.0.1: %s", f[4], line)
		}
	}
	for _, p := range ports {
		if !bytes.Contains([]byte(strings.Join(local, " ")+" "), []byte(fmt.Sprintf("127.0.0.1:%d ", p))) {
			t.Errorf("iroh-dns-server does not listen on 127.0.0.1:%d (it listens on %v)", p, local)
		}
	}
	t.Logf("iroh-dns-server listens on %v", local)
}

// metrics returns the server's Prometheus metrics ("" if it does not
// answer).
func (d *dnsServer) metrics(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("http://127.0.0.1:%d/metrics", d.mport), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return string(b)
}

// counter returns the value of the server's counter name (its metrics
// carry a prefix, dns_server_, and may carry a _total suffix).
func (d *dnsServer) counter(t *testing.T, name string) int64 {
	t.Helper()
	m := d.metrics(t)
	re := regexp.MustCompile(`(?m)^\w*` + name + `(?:_total)?(?:\{[^}]*\})? (\d+)`)
	g := re.FindStringSubmatch(m)
	if g == nil {
		t.Fatalf("iroh-dns-server's metrics have no %s:\n%s", name, m)
	}
	n, err := strconv.ParseInt(g[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// gets counts the GETs of the record of key (z-base-32) that the server's
// log shows it answered with 200, and returns the last such line.
func (d *dnsServer) gets(key string) (int, string) {
	n, last := 0, ""
	for _, line := range strings.Split(d.log.String(), "\n") {
		if strings.Contains(line, "GET") && strings.Contains(line, "/pkarr/"+key) && strings.Contains(line, "status=200") {
			n++
			last = line
		}
	}
	return n, last
}

func (d *dnsServer) stop() {
	if d.stopped {
		return
	}
	d.stopped = true
	d.cmd.Process.Kill()
	<-d.exited
}

// zbase32 is the z-base-32 encoding pkarr names keys with in its URLs.
var zbase32 = base32.NewEncoding("ybndrfg8ejkmcpqxot1uwisza345h769").WithPadding(base32.NoPadding)

// TestIrohDiscovery: serve --discovery URL with a real pkarr relay
// (iroh-dns-server 1.4.1 on 127.0.0.1 only, checked with ss), and readers
// given only the node's endpoint id: the id's record is at the server once
// serve printed its ticket; with SOP_PME_IROH_DISCOVERY set to the server's
// pkarr URL, export (a projection) and verify over iroh://ID and fetch
// --from ID give the bytes the local store gives, and the server's log
// shows it answered one GET of the id's record for each (its metrics count
// them as well): an id alone carries no address, so the reader could have
// learnt the node's from nowhere else. Without SOP_PME_IROH_DISCOVERY the
// id alone is a usage error (exit 2); a whole ticket is never looked up,
// even with it set; a node serving through a relay (iroh-relay) on [::1]
// publishes the relay too, and a reader by id reaches it through the relay
// (its metrics show the bytes); a wrong URL, and the server stopped, make
// the read fail within seconds, with no output.
func TestIrohDiscovery(t *testing.T) {
	t.Parallel()
	dns := startDNSServer(t)
	a := newEnv(t)
	a.bin = irohBinary(t)
	dir := t.TempDir()
	id := a.importJSON(bigCSV(t, dir, "a.csv", 0, 3000), "--assign-field-ids").StorageID
	data, err := os.ReadFile(filepath.Join(a.store, id+".data"))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"ftp://127.0.0.1:1/pkarr", "127.0.0.1:1", "http://127.0.0.1:1/pkarr?x=1"} {
		a.fails(exitUsage, []string{"--discovery"}, "serve", "--discovery", bad, "--iroh-dir", filepath.Join(t.TempDir(), "bad"))
	}
	put0 := dns.counter(t, "pkarr_publish_update")
	srv := serve(t, a, filepath.Join(t.TempDir(), "iroh-a"), "--discovery", dns.pkarr, "--rescan", "0")
	node, err := iroh.EndpointID(srv.ticket)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := hex.DecodeString(node)
	if err != nil {
		t.Fatal(err)
	}
	key := zbase32.EncodeToString(raw)
	// serve printed its ticket only once the server gave its record back;
	// look again, bounded, as a reader would.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		resp, err := http.Get(dns.pkarr + "/" + key)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("iroh-dns-server has no record of %s within 20 s (%v)\n%s", key, err, dns.log.String())
		}
	}
	if n := dns.counter(t, "pkarr_publish_update"); n <= put0 {
		t.Fatalf("iroh-dns-server counted %d pkarr publications, %d before serve", n, put0)
	}

	disc := "SOP_PME_IROH_DISCOVERY=" + dns.pkarr
	store := "SOP_PME_STORE=iroh://" + node
	want := a.ok("export", id, "--format", "csv", "--fields", "id").stdout
	gets0, _ := dns.gets(key)
	ok0 := dns.counter(t, "http_requests_success")
	r := a.run([]string{store, disc}, "export", id, "--format", "csv", "--fields", "id")
	if r.code != 0 || r.stdout != want {
		t.Fatalf("projection over iroh://ID: %s\nwant stdout %.100q", r, want)
	}
	if r := a.run([]string{store, disc}, "verify", id); r.code != 0 {
		t.Fatalf("verify over iroh://ID: %s", r)
	}
	local := filepath.Join(t.TempDir(), "store")
	if r := a.run([]string{disc}, "fetch", id, "--from", node, "--store", local, "--cache", filepath.Join(t.TempDir(), "cache")); r.code != 0 {
		t.Fatalf("fetch --from ID: %s", r)
	}
	got, err := os.ReadFile(filepath.Join(local, id+".data"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("object fetched by endpoint id differs (%v)", err)
	}
	// Each of the three runs looked the id up once, at the server.
	time.Sleep(200 * time.Millisecond) // the log line of the last request
	gets, line := dns.gets(key)
	gets -= gets0
	ok := dns.counter(t, "http_requests_success") - ok0
	t.Logf("the three readers: %d GETs of the record in iroh-dns-server's log (the last: %s), %d successful HTTP requests in its metrics", gets, line, ok)
	if gets != 3 || ok < 3 {
		t.Fatalf("iroh-dns-server answered %d GETs of %s (log) and %d requests (metrics), want 3 each: the readers did not learn the address from it\n%s", gets, key, ok, dns.log.String())
	}

	// No discovery URL: an id alone is a usage error, before any lookup.
	reqs := dns.counter(t, "http_requests")
	if r := a.run([]string{store}, "export", id, "--format", "csv", "--fields", "id"); r.code != exitUsage || r.stdout != "" || !strings.Contains(r.stderr, "SOP_PME_IROH_DISCOVERY") {
		t.Fatalf("iroh://ID without SOP_PME_IROH_DISCOVERY: %s\nwant exit %d, no output, a message naming the variable", r, exitUsage)
	}
	if r := a.run(nil, "fetch", id, "--from", node, "--store", filepath.Join(t.TempDir(), "s2"), "--cache", filepath.Join(t.TempDir(), "c2")); r.code != exitUsage || r.stdout != "" {
		t.Fatalf("fetch --from ID without SOP_PME_IROH_DISCOVERY: %s\nwant exit %d", r, exitUsage)
	}
	// A whole ticket is not looked up, even with the variable set.
	if r := a.run([]string{"SOP_PME_STORE=iroh://" + srv.ticket, disc}, "export", id, "--format", "csv", "--fields", "id"); r.code != 0 || r.stdout != want {
		t.Fatalf("projection over iroh://TICKET: %s", r)
	}
	if n := dns.counter(t, "http_requests"); n != reqs {
		t.Fatalf("iroh-dns-server got %d requests from runs that had no id to look up", n-reqs)
	}

	// With a relay as well (iroh-relay on 127.0.0.1), the node on [::1],
	// which a reader bound to 127.0.0.1 cannot dial: the record names the
	// relay (serve waited for it to), and a read by id goes through it.
	relayURL, relayMetrics := startRelay(t)
	srv2 := serve(t, a, filepath.Join(t.TempDir(), "iroh-b"), "--discovery", dns.pkarr, "--relay", relayURL, "--bind", "[::1]:0", "--rescan", "0")
	node2, err := iroh.EndpointID(srv2.ticket)
	if err != nil {
		t.Fatal(err)
	}
	recv0, _ := relayedBytes(t, relayMetrics())
	if r := a.run([]string{"SOP_PME_STORE=iroh://" + node2, disc}, "verify", id); r.code != 0 {
		t.Fatalf("verify over iroh://ID of a node with a relay: %s", r)
	}
	recv, _ := relayedBytes(t, relayMetrics())
	t.Logf("verify by id of the node on [::1] with a relay: the relay received %d bytes (object %d bytes)", recv-recv0, len(data))
	if recv-recv0 < int64(len(data)) {
		t.Fatalf("the relay received %d bytes, less than the object's %d: the read did not go through the relay the record names", recv-recv0, len(data))
	}
	srv2.stop()

	// A wrong URL (no pkarr relay at that path), then the server stopped:
	// the read fails, soon, with nothing on stdout.
	for _, c := range []struct {
		what, url string
		before    func()
	}{
		{"a wrong URL", strings.TrimSuffix(dns.pkarr, "/pkarr") + "/nothing", func() {}},
		{"the server stopped", dns.pkarr, dns.stop},
	} {
		c.before()
		start := time.Now()
		r := a.run([]string{store, "SOP_PME_IROH_DISCOVERY=" + c.url}, "export", id, "--format", "csv", "--fields", "id")
		took := time.Since(start)
		t.Logf("%s: exit %d after %v: %s", c.what, r.code, took.Round(time.Millisecond), strings.TrimSpace(r.stderr))
		if r.code == 0 || r.code == exitUsage || r.stdout != "" || !strings.Contains(r.stderr, "discovery: looking up "+node) {
			t.Fatalf("iroh://ID with %s: %s\nwant a failure (not a usage error) naming the lookup, no output", c.what, r)
		}
		if took > 30*time.Second {
			t.Fatalf("iroh://ID with %s took %v to fail", c.what, took)
		}
	}
}
