//go:build iroh

package iroh

import (
	"bytes"
	"encoding/base32"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// zbase32 is the z-base-32 encoding pkarr names keys with in its URLs.
var zbase32 = base32.NewEncoding("ybndrfg8ejkmcpqxot1uwisza345h769").WithPadding(base32.NoPadding)

// pkarrRelay is a minimal pkarr relay on 127.0.0.1 (httptest): PUT
// /pkarr/<key> stores the body, GET returns it (404 if none). It counts
// the GETs of each key, and can be told to flip a byte of what it returns.
type pkarrRelay struct {
	srv     *httptest.Server
	mu      sync.Mutex
	packets map[string][]byte
	gets    map[string]int
	tamper  bool
}

func newPkarrRelay(t *testing.T) *pkarrRelay {
	t.Helper()
	p := &pkarrRelay{packets: map[string][]byte{}, gets: map[string]int{}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, ok := strings.CutPrefix(r.URL.Path, "/pkarr/")
		if !ok {
			http.NotFound(w, r)
			return
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		switch r.Method {
		case http.MethodPut:
			b, err := io.ReadAll(io.LimitReader(r.Body, 2000))
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			p.packets[key] = b
			w.WriteHeader(http.StatusNoContent)
		case http.MethodGet:
			p.gets[key]++
			b, ok := p.packets[key]
			if !ok {
				http.NotFound(w, r)
				return
			}
			b = bytes.Clone(b)
			if p.tamper {
				b[len(b)-1] ^= 1
			}
			w.Write(b)
		default:
			http.Error(w, "", http.StatusMethodNotAllowed)
		}
	}))
	p.srv.Listener.Close()
	p.srv.Listener = l
	p.srv.Start()
	t.Cleanup(p.srv.Close)
	return p
}

func (p *pkarrRelay) url() string { return p.srv.URL + "/pkarr" }

func (p *pkarrRelay) getsOf(key string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gets[key]
}

// TestDiscovery: a node serving with a discovery URL publishes its signed
// record to that pkarr relay (here a minimal one in Go on 127.0.0.1) before
// ServeWith returns; Resolve of its endpoint id at that relay gives a ticket
// naming the address it serves on, from which another store fetches a blob;
// the resolving side made the one GET the relay counted. A record the relay
// altered fails the signature check; an id it has no record of, a relay
// that is not there, an id alone given to Fetch, and bad URLs fail with the
// codes documented.
func TestDiscovery(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	relay := newPkarrRelay(t)
	a := openStore(t, t.TempDir())
	b := openStore(t, t.TempDir())
	data := randBytes(77, 3<<16+5)
	blob, err := a.ImportBytes(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"ftp://127.0.0.1:1/pkarr", "http://", "127.0.0.1:1", "http://127.0.0.1:1/pkarr?x=1", "http://u:p@127.0.0.1:1/pkarr"} {
		if _, err := openStore(t, t.TempDir()).ServeWith(ctx, ServeOptions{Discovery: bad}); !isCode(err, CodeInvalid) {
			t.Errorf("ServeWith(discovery %q): %v, want CodeInvalid", bad, err)
		}
	}
	addr, err := a.ServeWith(ctx, ServeOptions{Bind: "127.0.0.1:0", Discovery: relay.url()})
	if err != nil {
		t.Fatal(err)
	}
	id, err := EndpointID(addr)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(addr, id+"@") {
		t.Fatalf("EndpointID(%q) = %q", addr, id)
	}
	if again, err := EndpointID(id); err != nil || again != id {
		t.Fatalf("EndpointID(id) = %q, %v; want it unchanged", again, err)
	}
	raw, err := hex.DecodeString(id)
	if err != nil {
		t.Fatal(err)
	}
	key := zbase32.EncodeToString(raw)
	relay.mu.Lock()
	published := len(relay.packets[key])
	relay.mu.Unlock()
	if published == 0 {
		t.Fatalf("ServeWith returned before the relay held a record of %s", key)
	}
	// The store's endpoint keeps the discovery URL it was bound with.
	if _, err := a.ServeWith(ctx, ServeOptions{Bind: "127.0.0.1:0"}); !isCode(err, CodeInvalid) {
		t.Fatalf("ServeWith without the discovery URL the endpoint has: %v, want CodeInvalid", err)
	}
	// An id alone is no address to Fetch: it must be resolved.
	if _, err := b.Fetch(ctx, id, blob, 0, 1); !isCode(err, CodeInvalid) {
		t.Fatalf("Fetch(id alone): %v, want CodeInvalid", err)
	}

	gets := relay.getsOf(key)
	ticket, err := Resolve(ctx, id, relay.url())
	if err != nil {
		t.Fatal(err)
	}
	if n := relay.getsOf(key); n != gets+1 {
		t.Fatalf("Resolve made %d GETs of the record, want 1", n-gets)
	}
	want, err := Ticket(addr)
	if err != nil {
		t.Fatal(err)
	}
	if ticket != want {
		t.Fatalf("Resolve gave %q, want the ticket of %s (%q)", ticket, addr, want)
	}
	if _, err := b.Fetch(ctx, ticket, blob, 0, uint64(len(data))); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t)(b.Slice(ctx, blob, 0, uint64(len(data)))); !bytes.Equal(got, wantSlice(t, data, 0, uint64(len(data)))) {
		t.Fatal("blob fetched through the resolved ticket differs")
	}

	// A record the relay altered does not verify.
	relay.mu.Lock()
	relay.tamper = true
	relay.mu.Unlock()
	if _, err := Resolve(ctx, id, relay.url()); !isCode(err, CodeNetwork) || !strings.Contains(err.Error(), "erif") {
		t.Fatalf("Resolve of an altered record: %v, want CodeNetwork (verification)", err)
	} else {
		t.Logf("altered record: %v", err)
	}
	relay.mu.Lock()
	relay.tamper = false
	relay.mu.Unlock()

	// An id the relay has no record of.
	bAddr, err := b.Serve(ctx)
	if err != nil {
		t.Fatal(err)
	}
	other, err := EndpointID(bAddr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Resolve(ctx, other, relay.url()); !isCode(err, CodeNetwork) {
		t.Fatalf("Resolve of an unknown id: %v, want CodeNetwork", err)
	} else {
		t.Logf("unknown id: %v", err)
	}
	// No relay there: a closed port on 127.0.0.1, bounded in time.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String() + "/pkarr"
	l.Close()
	start := time.Now()
	if _, err := Resolve(ctx, id, closed); !isCode(err, CodeNetwork) && !isCode(err, CodeTimeout) {
		t.Fatalf("Resolve at a closed port: %v, want CodeNetwork or CodeTimeout", err)
	}
	if d := time.Since(start); d > DefaultResolveTimeout+5*time.Second {
		t.Fatalf("Resolve at a closed port took %v", d)
	}
	for _, bad := range []struct{ id, url string }{
		{id, ""}, {id, "ftp://127.0.0.1:1/pkarr"}, {"nothex", relay.url()}, {addr, relay.url()}, {strings.Repeat("ab", 32), relay.url()},
	} {
		if _, err := Resolve(ctx, bad.id, bad.url); !isCode(err, CodeInvalid) {
			t.Errorf("Resolve(%q, %q): %v, want CodeInvalid", bad.id, bad.url, err)
		}
	}
}
