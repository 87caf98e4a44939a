//go:build iroh

package iroh

/*
#include "sop_iroh.h"
*/
import "C"

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"time"

	"github.com/sovm/sop-pme/storageid"
)

// Serve serves the store's blobs over the iroh-blobs protocol on an endpoint
// bound to 127.0.0.1 (ephemeral port, no relays, no address lookup, no port
// mapping) and returns its address, "<endpoint id>@127.0.0.1:<port>". It
// serves until Close; calling it again returns the same address.
func (s *Store) Serve(ctx context.Context) (string, error) {
	return s.ServeOn(ctx, "", nil)
}

// ServeOn is Serve on the endpoint bound to bind, "<ip>:<port>" (port 0:
// an ephemeral one; "" is 127.0.0.1:0), serving every blob of the store if
// allow is nil, else only the blobs allow names (none if it is empty): a
// request for another is refused with iroh-blobs' permission error, which
// a fetching node reports as not found. The bind IP is the one peers dial,
// so an unspecified or multicast IP is refused (CodeInvalid). Anyone who
// can reach that address and knows the endpoint id can fetch every blob
// served. A store has one endpoint, bound by its first ServeOn or Fetch: a
// later ServeOn with another binding fails with CodeInvalid. A later one
// with the same binding replaces the allow-list, for the next request; it
// cannot switch between nil (every blob) and a list (CodeInvalid).
// [Store.Delete] also takes the blobs it deletes off the list.
func (s *Store) ServeOn(ctx context.Context, bind string, allow []storageid.ID) (string, error) {
	return s.ServeVia(ctx, bind, "", allow)
}

// ServeVia is ServeOn through the relay at the URL relay ("": none, which
// is ServeOn): the endpoint connects to that relay alone (never n0's public
// relays), so that a node that cannot reach bind directly reaches it
// through the relay. It returns, once connected to the relay (CodeNetwork
// if not within 20 s), the endpoint ticket naming the relay and bind's
// address, not "<endpoint id>@<ip>:<port>", which cannot carry a relay. The
// relay learns the node's id and IP address, and sees which nodes talk to
// it, when and how much (their traffic is QUIC, encrypted end to end). A
// relay URL that is not http(s)://HOST[:PORT] fails with CodeInvalid, as
// does a later call naming another relay than the store's endpoint has.
func (s *Store) ServeVia(ctx context.Context, bind, relay string, allow []storageid.ID) (string, error) {
	return s.ServeWith(ctx, ServeOptions{Bind: bind, Relay: relay, Allow: allow})
}

// ServeOptions are the settings of [Store.ServeWith].
type ServeOptions struct {
	// Bind is the address served on, "<ip>:<port>" ("": 127.0.0.1:0), as
	// for [Store.ServeOn].
	Bind string
	// Relay is the URL of the one relay served through ("": none), as for
	// [Store.ServeVia].
	Relay string
	// Discovery is the URL of a pkarr relay ("": none; iroh-dns-server
	// serves one at http(s)://HOST[:PORT]/pkarr) to which the node
	// publishes its endpoint id, its relay and the address bound, as a
	// packet signed with its key, whenever they change and every 5
	// minutes (iroh's PkarrPublisher with that URL alone: never n0's DNS
	// servers, never mDNS), so that a reader holding only the endpoint id
	// can find the node ([Resolve]). The pkarr relay's operator, and
	// anyone who asks it for the id, learns the node's IP address and
	// relay, and that it is online.
	Discovery string
	// Allow, if not nil, lists the only blobs served, as for
	// [Store.ServeOn].
	Allow []storageid.ID
}

// ServeWith is ServeOn with every setting: o.Bind and o.Allow as ServeOn
// takes them, o.Relay as ServeVia does, and o.Discovery. With a discovery
// URL it returns only once the pkarr relay gives back the node's record
// naming the address it returns (CodeNetwork if not within 20 s). A
// discovery URL that is not http(s)://HOST[:PORT][/PATH] fails with
// CodeInvalid, as does a later call naming another one than the store's
// endpoint was bound with.
func (s *Store) ServeWith(ctx context.Context, o ServeOptions) (string, error) {
	h, err := s.acquire(ctx)
	if err != nil {
		return "", err
	}
	defer s.release()
	b := []byte(o.Bind)
	rl := []byte(o.Relay)
	dl := []byte(o.Discovery)
	onlyAllowed := C.int32_t(0)
	var hashes []byte
	if o.Allow != nil {
		onlyAllowed = 1
		hashes = make([]byte, 0, 32*len(o.Allow))
		for _, id := range o.Allow {
			hashes = append(hashes, id[:]...)
		}
	}
	var ptr *C.uint8_t
	var ln C.size_t
	eb := errBuf()
	rc := C.sop_iroh_serve(h, u8(b), C.size_t(len(b)), u8(rl), C.size_t(len(rl)), u8(dl), C.size_t(len(dl)),
		onlyAllowed, u8(hashes), C.size_t(len(o.Allow)), &ptr, &ln, errPtr(eb), errCap)
	if err := mkErr("serve", rc, eb); err != nil {
		return "", err
	}
	defer C.sop_iroh_free(ptr, ln)
	return string(goBytes(ptr, ln)), nil
}

// EndpointID returns the endpoint id (64 hex digits) of a node's address
// in any form Fetch takes, or of an endpoint id alone (which Fetch does
// not take: [Resolve] turns it into a ticket). Its errors match
// CodeInvalid.
func EndpointID(addr string) (string, error) {
	a := []byte(addr)
	var ptr *C.uint8_t
	var ln C.size_t
	eb := errBuf()
	rc := C.sop_iroh_endpoint_id(u8(a), C.size_t(len(a)), &ptr, &ln, errPtr(eb), errCap)
	if err := mkErr("endpoint id", rc, eb); err != nil {
		return "", err
	}
	defer C.sop_iroh_free(ptr, ln)
	return string(goBytes(ptr, ln)), nil
}

// Resolve looks the endpoint id id (hex, as [EndpointID] returns it) up
// at the pkarr relay at the URL discovery (a node serving with
// [ServeOptions].Discovery publishes itself there): one HTTP GET of
// discovery/<id in z-base-32>, whose answer must be a packet signed with
// id's key. It returns the endpoint ticket of the addresses the record
// names (its IP addresses and at most one relay, checked as Fetch checks a
// ticket's), for Fetch. Only addresses are learnt so: a connection to them
// still proves, in iroh's QUIC/TLS handshake, that the peer holds id's
// key, and every byte fetched is still verified against its storage_id.
// The pkarr relay's operator can withhold a record or hand out an old one,
// not forge one; it learns which id is looked up, and from which IP
// address. The call is bounded by ctx's deadline, else by
// DefaultResolveTimeout. A pkarr relay that cannot be reached or holds no
// record of id fails with CodeNetwork (or CodeTimeout), a record naming no
// address with CodeNotFound, a bad id or URL with CodeInvalid.
func Resolve(ctx context.Context, id, discovery string) (string, error) {
	timeout := DefaultResolveTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
		if timeout <= 0 {
			return "", context.DeadlineExceeded
		}
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	ms := uint64(timeout.Milliseconds())
	if ms == 0 {
		ms = 1
	}
	i := []byte(id)
	d := []byte(discovery)
	var ptr *C.uint8_t
	var ln C.size_t
	eb := errBuf()
	rc := C.sop_iroh_resolve(u8(i), C.size_t(len(i)), u8(d), C.size_t(len(d)), C.uint64_t(ms),
		&ptr, &ln, errPtr(eb), errCap)
	if err := mkErr("resolve", rc, eb); err != nil {
		return "", err
	}
	defer C.sop_iroh_free(ptr, ln)
	return string(goBytes(ptr, ln)), nil
}

// Ticket returns the iroh endpoint ticket ("endpoint…", iroh-tickets'
// EndpointTicket: the endpoint id, its IP addresses and its relay URL if it
// has one) of a node's address
// in any form Fetch takes. Its errors match CodeInvalid.
func Ticket(addr string) (string, error) {
	a := []byte(addr)
	var ptr *C.uint8_t
	var ln C.size_t
	eb := errBuf()
	rc := C.sop_iroh_ticket(u8(a), C.size_t(len(a)), &ptr, &ln, errPtr(eb), errCap)
	if err := mkErr("ticket", rc, eb); err != nil {
		return "", err
	}
	defer C.sop_iroh_free(ptr, ln)
	return string(goBytes(ptr, ln)), nil
}

// Fetch fetches the 16 KiB groups of blob id that intersect [off, off+n),
// those this store does not hold yet, from the node at addr into this store
// with the iroh-blobs get protocol, which verifies them as they arrive, and
// returns the number of bytes read from the connection (data, size header
// and proof). The store keeps every group it verified, so a fetch cut short
// (a timeout, a closed connection, a killed process) resumes where it
// stopped. addr is "<endpoint id>@<ip>:<port>" (as Serve returns it), an
// iroh endpoint ticket or an iroh-blobs blob ticket (as sendme prints; only
// its addresses are used): the store's endpoint binds 127.0.0.1 for a peer
// on loopback, else the unspecified address, and dials only the IP
// addresses given and, if an endpoint ticket names one relay, that relay:
// the store's endpoint then uses it alone, and a later fetch naming another
// relay or none fails with CodeInvalid. A blob ticket's relays are ignored
// (sendme's name n0's public relays by default). No address lookup: an
// endpoint id alone fails with CodeInvalid ([Resolve] it first). The call is bounded by
// ctx's deadline, or the store's fetch timeout (WithFetchTimeout); a ctx
// cancelled without a deadline is seen only when the fetch ends or times
// out, since the library call cannot be interrupted.
func (s *Store) Fetch(ctx context.Context, addr string, id storageid.ID, off, n uint64) (uint64, error) {
	if n == 0 {
		return 0, errors.New("iroh: empty range")
	}
	timeout := s.fetchTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
		if timeout <= 0 {
			return 0, context.DeadlineExceeded
		}
	}
	ms := uint64(timeout.Milliseconds())
	if ms == 0 {
		ms = 1
	}
	h, err := s.acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer s.release()
	a := []byte(addr)
	ranges := [2]C.uint64_t{C.uint64_t(off), C.uint64_t(n)}
	var got C.uint64_t
	eb := errBuf()
	rc := C.sop_iroh_fetch(h, u8(a), C.size_t(len(a)), u8(id[:]), &ranges[0], 1,
		C.uint64_t(ms), &got, errPtr(eb), errCap)
	return uint64(got), mkErr("fetch", rc, eb)
}

// A Remote is a verify.Source for the blobs held by another iroh node: each
// Slice fetches the range from the node into the local store (verified as it
// arrives) and then exports it from there like any other range.
type Remote struct {
	s        *Store
	addr     string
	received atomic.Uint64
}

// Remote returns a source reading from the node at addr (as Serve returns it)
// through this store.
func (s *Store) Remote(addr string) *Remote {
	return &Remote{s: s, addr: addr}
}

// Slice implements verify.Source: it fetches the groups of blob id that
// intersect [off, off+n) from the remote node, then returns their BAO slice
// from the local store, streamed as Store.Slice does.
func (r *Remote) Slice(ctx context.Context, id storageid.ID, off, n uint64) (io.ReadCloser, error) {
	got, err := r.s.Fetch(ctx, r.addr, id, off, n)
	r.received.Add(got)
	if err != nil {
		return nil, err
	}
	return r.s.Slice(ctx, id, off, n)
}

// BytesReceived returns the bytes read from the remote node so far, summed
// over all fetches (data, size headers and proofs).
func (r *Remote) BytesReceived() uint64 { return r.received.Load() }
