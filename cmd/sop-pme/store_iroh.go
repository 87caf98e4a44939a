//go:build iroh

package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/blobs/iroh"
	"github.com/sovm/sop-pme/catalog"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
	"github.com/spf13/cobra"
)

// irohBuilt says whether this build has serve, fetch and iroh:// stores.
const irohBuilt = true

// errRemoteReadOnly is what writing to, listing or deleting from an
// iroh:// store gives.
var errRemoteReadOnly = errors.New("another node's objects can be read by storage_id, not listed, written or deleted")

// irohStore is an iroh://TICKET store: another node's objects, read-only.
// Each Slice fetches the groups of the range from the node into a private
// iroh-blobs store (verified as they arrive, by iroh-blobs' get protocol)
// and hands out their BAO slice from there, which the reader verifies again
// (package verify) before it uses a byte. The private store is a temporary
// directory removed when the command ends (onExit): a command reads what it
// needs and keeps nothing. A process killed with SIGKILL leaves it behind,
// in the system's temporary directory (sop-pme-iroh-*).
type irohStore struct {
	local  *iroh.Store
	remote *iroh.Remote
}

var _ store = (*irohStore)(nil)

// openIrohStore opens the objects of the node the ticket (or endpoint id,
// irohAddr) names.
func openIrohStore(ctx context.Context, ticket string) (store, error) {
	ticket, err := irohAddr(ctx, ticket, "iroh://")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "sop-pme-iroh-")
	if err != nil {
		return nil, err
	}
	local, err := iroh.Open(ctx, dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	onExit(func() {
		local.Close()
		os.RemoveAll(dir)
	})
	return &irohStore{local: local, remote: local.Remote(ticket)}, nil
}

func (s *irohStore) Slice(ctx context.Context, id storageid.ID, off, n uint64) (io.ReadCloser, error) {
	return s.remote.Slice(ctx, id, off, n)
}

func (s *irohStore) Create(context.Context) (blobs.Pending, error) {
	return nil, errRemoteReadOnly
}

func (s *irohStore) List(context.Context) iter.Seq2[blobs.Blob, error] {
	return func(yield func(blobs.Blob, error) bool) {
		yield(blobs.Blob{}, &cmdError{exitUsage, "an iroh:// store cannot be listed: name its objects by whole storage_id", errRemoteReadOnly})
	}
}

func (s *irohStore) Delete(context.Context, storageid.ID) error { return errRemoteReadOnly }

// BytesReceived is what the store read from the network so far.
func (s *irohStore) BytesReceived() uint64 { return s.remote.BytesReceived() }

// cacheDir returns flag, or the directory name under the user cache
// directory's sop-pme/sub (kind says what it is for, in the error).
func cacheDir(flag, sub, name string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	c, err := os.UserCacheDir()
	if err != nil {
		return "", usagef("no user cache directory (%v): give the %s directory", err, sub)
	}
	return filepath.Join(c, "sop-pme", sub, name), nil
}

// openCache opens the iroh-blobs store in dir, saying so if another process
// has it.
func openCache(ctx context.Context, dir string, opts ...iroh.Option) (*iroh.Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, about(dir, err)
	}
	st, err := iroh.Open(ctx, dir, opts...)
	if err != nil {
		return nil, &cmdError{exitFailure, fmt.Sprintf("%s: cannot open the iroh store there (is another sop-pme using it?): %s", dir, clean(err)), err}
	}
	return st, nil
}

// irohDiscoveryEnv names the environment variable a reader sets to the URL
// of the pkarr relay through which an endpoint id given alone (iroh://ID,
// fetch --from ID) is resolved.
const irohDiscoveryEnv = "SOP_PME_IROH_DISCOVERY"

// irohAddr returns the ticket a reader dials for t, what iroh://
// or --from (what) gave: a ticket as it is (never looked up, whatever
// SOP_PME_IROH_DISCOVERY says), or for an endpoint id alone (64 hex
// digits), the ticket iroh.Resolve builds from its record at the pkarr
// relay SOP_PME_IROH_DISCOVERY names; without one, that is a usage error.
// The record gives only addresses: the connection still authenticates the
// endpoint id, and every byte is still verified against its storage_id.
func irohAddr(ctx context.Context, t, what string) (string, error) {
	_, terr := iroh.Ticket(t)
	if terr == nil {
		return t, nil
	}
	if !isEndpointID(t) {
		return "", usagef("%s: not a ticket sop-pme serve printed, nor an endpoint id (%s)", what, clean(terr))
	}
	disc := os.Getenv(irohDiscoveryEnv)
	if disc == "" {
		return "", usagef("%s: an endpoint id alone names no address: set %s to the URL of the pkarr relay the node publishes to (sop-pme serve --discovery), or give the whole ticket", what, irohDiscoveryEnv)
	}
	if err := checkDiscoveryURL(disc); err != nil {
		return "", usagef("%s %q: %s", irohDiscoveryEnv, disc, err)
	}
	full, err := iroh.Resolve(ctx, t, disc)
	if err != nil {
		if isIrohCode(err, iroh.CodeInvalid) {
			return "", usagef("%s: %s", what, clean(err))
		}
		return "", &cmdError{exitFailure, fmt.Sprintf("%s: %s", what, clean(err)), err}
	}
	return full, nil
}

// isEndpointID reports whether t is an endpoint id alone: 64 lowercase hex
// digits, as serve's messages print it.
func isEndpointID(t string) bool {
	if len(t) != 64 {
		return false
	}
	for _, c := range t {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// checkDiscoveryURL checks the form of a pkarr relay URL, as the library
// does (http(s)://HOST[:PORT][/PATH], no query, fragment or credentials),
// so that a mistyped one is a usage error before anything is opened.
func checkDiscoveryURL(v string) error {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return errors.New("want the URL of a pkarr relay, http(s)://HOST[:PORT][/PATH] (iroh-dns-server's is http(s)://HOST[:PORT]/pkarr)")
	}
	return nil
}

// runServe is sop-pme serve.
func (a *app) runServe(cmd *cobra.Command, f *serveFlags) error {
	ctx := cmd.Context()
	if f.rescan < 0 {
		return usagef("--rescan %v: want 0 or more", f.rescan)
	}
	v, err := f.store.path()
	if err != nil {
		return err
	}
	if _, ok := irohTicket(v); ok {
		return usagef("serve serves a directory or an s3:// store, not another node's")
	}
	if f.relay != "" {
		if u, err := url.Parse(f.relay); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usagef("--relay %q: want the URL of an iroh relay, http(s)://HOST[:PORT]", f.relay)
		}
	}
	if f.discovery != "" {
		if err := checkDiscoveryURL(f.discovery); err != nil {
			return usagef("--discovery %q: %s", f.discovery, err)
		}
	}
	src, err := f.store.openReadOnly(ctx)
	if err != nil {
		return err
	}
	key := v
	if !isStoreURL(v) {
		if abs, err := filepath.Abs(v); err == nil {
			key = abs
		}
	}
	sum := sha256.Sum256([]byte(key))
	dir, err := cacheDir(f.irohDir, "serve", hex.EncodeToString(sum[:8]))
	if err != nil {
		return err
	}
	al, err := a.parseAllow(ctx, f, src)
	if err != nil {
		return err
	}
	allow, err := al.resolve(ctx, false)
	if err != nil {
		return err
	}
	node, err := openCache(ctx, dir, iroh.WithDelete())
	if err != nil {
		return err
	}
	defer node.Close()
	n, err := a.syncServed(ctx, src, node, allow)
	if err != nil {
		return err
	}
	addr, err := node.ServeWith(ctx, f.serveOptions(allow))
	if err != nil {
		if isIrohCode(err, iroh.CodeInvalid) {
			return usagef("--bind %s --relay %s --discovery %s: %s", f.bind, f.relay, f.discovery, clean(err))
		}
		return err
	}
	ticket, err := iroh.Ticket(addr)
	if err != nil {
		return err
	}
	fmt.Fprintln(a.stdout, ticket)
	if !a.quiet {
		fmt.Fprintf(a.stderr, "sop-pme: serving %d %s of %s at %s (iroh store %s); whoever holds the ticket can fetch any of them by storage_id; Ctrl-C stops\n", n, plural(n, "object", "objects"), f.store.name(), servedAt(addr, f), dir)
		if f.discovery != "" {
			id, err := iroh.EndpointID(addr)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "sop-pme: published to %s as endpoint %s: a reader with %s=%s may use iroh://%s (or fetch --from %s)\n", f.discovery, id, irohDiscoveryEnv, f.discovery, id, id)
		}
	}
	var tick <-chan time.Time
	if f.rescan > 0 {
		t := time.NewTicker(f.rescan)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick:
			var m int
			m, allow, err = a.rescan(ctx, al, allow, src, node, f)
			if err != nil && ctx.Err() == nil {
				fmt.Fprintf(a.stderr, "sop-pme: warning: rescanning the store: %s\n", clean(err))
			} else if m != n && !a.quiet {
				fmt.Fprintf(a.stderr, "sop-pme: serving %d %s\n", m, plural(m, "object", "objects"))
				n = m
			}
		}
	}
}

// servedAt is where serve's first message says the node is: its address
// (addr, as ServeVia returned it), or with a relay, the address bound and
// the relay (addr is then a ticket).
func servedAt(addr string, f *serveFlags) string {
	if f.relay == "" {
		return addr
	}
	bind := f.bind
	if bind == "" {
		bind = "127.0.0.1"
	}
	return bind + " and through the relay " + f.relay
}

// rescan is one --rescan of serve: it resolves --allow again (a table's
// objects from the catalog as it is now; if that fails, it keeps allow,
// the last list, and says so), brings the node's iroh store in step with
// the store (syncServed), then gives the node's allow-list the objects now
// allowed. It returns how many objects are served, and the list used.
func (a *app) rescan(ctx context.Context, al *allowSpec, allow map[storageid.ID]bool, src store, node *iroh.Store, f *serveFlags) (int, map[storageid.ID]bool, error) {
	if al != nil {
		if now, err := al.resolve(ctx, true); err != nil {
			fmt.Fprintf(a.stderr, "sop-pme: warning: reading --allow's tables from the catalog (serving the objects they had): %s\n", clean(err))
		} else {
			allow = now
		}
	}
	n, err := a.syncServed(ctx, src, node, allow)
	if err != nil {
		return n, allow, err
	}
	if allow != nil {
		if _, err := node.ServeWith(ctx, f.serveOptions(allow)); err != nil {
			return n, allow, err
		}
	}
	return n, allow, nil
}

// serveOptions are the node's settings, serving allow (every object if
// nil): the same at start and at each rescan, as a store's endpoint
// requires.
func (f *serveFlags) serveOptions(allow map[storageid.ID]bool) iroh.ServeOptions {
	return iroh.ServeOptions{Bind: f.bind, Relay: f.relay, Discovery: f.discovery, Allow: allowIDs(allow)}
}

// allowIDs returns the storage_ids of allow (nil if allow is nil: serve
// every object).
func allowIDs(allow map[storageid.ID]bool) []storageid.ID {
	if allow == nil {
		return nil
	}
	ids := make([]storageid.ID, 0, len(allow))
	for id := range allow {
		ids = append(ids, id)
	}
	return ids
}

func isIrohCode(err error, c iroh.Code) bool {
	var ie *iroh.Error
	return errors.As(err, &ie) && ie.Code == c
}

// allowSpec is serve --allow: the storage_ids given (whole, or unique
// prefixes of objects of the store, resolved once at start), and the tables
// given, whose objects are read from the catalog at each resolve.
type allowSpec struct {
	a      *app
	f      *serveFlags
	ids    []storageid.ID
	tables []string
	gone   map[string]bool // tables reported missing
}

// parseAllow parses serve --allow (nil without it), resolving the
// storage_id prefixes against src.
func (a *app) parseAllow(ctx context.Context, f *serveFlags, src store) (*allowSpec, error) {
	if f.allow == nil {
		return nil, nil
	}
	al := &allowSpec{a: a, f: f, gone: map[string]bool{}}
	var idArgs []idArg
	for _, v := range f.allow {
		v = strings.TrimSpace(v)
		if ia, err := parseIDArg(v); err == nil {
			idArgs = append(idArgs, ia)
		} else {
			al.tables = append(al.tables, v)
		}
	}
	ids, err := resolveIDs(ctx, src, idArgs)
	if err != nil {
		return nil, err
	}
	al.ids = ids
	return al, nil
}

// resolve returns the objects allowed (nil if al is nil: every object):
// the storage_ids given, and the objects of the tables given as the
// catalog lists them now. The keyring is opened for the reading and
// closed after, so that a writer (sop-pme import) is not kept from it.
// With dropped, a table no longer in the catalog (sop-pme rm TABLE) allows
// nothing, and is reported once on stderr; without, it is an error.
func (al *allowSpec) resolve(ctx context.Context, dropped bool) (map[storageid.ID]bool, error) {
	if al == nil {
		return nil, nil
	}
	allow := map[storageid.ID]bool{}
	for _, id := range al.ids {
		allow[id] = true
	}
	if len(al.tables) > 0 {
		k, err := al.f.ks.openRing(ctx, al.f.store.value, ringRead, al.a.stderr)
		if err != nil {
			return nil, err
		}
		defer k.Close()
		c := catalogOf(k)
		for _, name := range al.tables {
			t, err := c.Table(ctx, name)
			if dropped && errors.Is(err, catalog.ErrNoTable) {
				if !al.gone[name] {
					fmt.Fprintf(al.a.stderr, "sop-pme: warning: --allow %s: no such table any more: none of its objects is served\n", name)
					al.gone[name] = true
				}
				continue
			}
			if err != nil {
				return nil, tableErr(name, err)
			}
			delete(al.gone, name)
			for _, id := range tableObjectIDs(t) {
				allow[id] = true
			}
		}
	}
	return allow, nil
}

// syncServed brings the node's iroh store in step with src: it deletes
// from the node the objects it serves that src no longer holds, or that are
// no longer in allow (if allow is not nil), which stops serving them and
// removes their bytes from the node's disk (iroh.Store.Delete); then it
// copies into the node each object of src (only those of allow, if it is
// not nil) it does not hold yet, read verified from src (verify.Reader:
// each range checked against the storage_id before it is written) and
// committed by the iroh store only if the hash iroh-blobs computes is the
// storage_id. It returns how many objects the node serves. An object that
// does not verify is skipped with a warning, and not served. Nothing is
// deleted unless src was listed to the end.
func (a *app) syncServed(ctx context.Context, src store, node *iroh.Store, allow map[storageid.ID]bool) (int, error) {
	var want []storageid.ID
	keep := map[storageid.ID]bool{}
	for b, err := range src.List(ctx) {
		if err != nil {
			return 0, err
		}
		if allow != nil && !allow[b.ID] {
			continue
		}
		want = append(want, b.ID)
		keep[b.ID] = true
	}
	served, err := node.Objects(ctx)
	if err != nil {
		return 0, err
	}
	var gone []storageid.ID
	for _, id := range served {
		if !keep[id] {
			gone = append(gone, id)
		}
	}
	if len(gone) > 0 {
		if err := node.Delete(ctx, gone...); err != nil {
			return 0, fmt.Errorf("deleting %d %s no longer in the store or allowed from the node: %w", len(gone), plural(len(gone), "object", "objects"), err)
		}
	}
	n := 0
	for _, id := range want {
		if _, err := node.Size(ctx, id); err == nil {
			n++
			continue
		}
		if err := copyVerified(ctx, src, id, node); err != nil {
			if ctx.Err() != nil {
				return n, ctx.Err()
			}
			fmt.Fprintf(a.stderr, "sop-pme: warning: %s: not served: %s\n", id, clean(err))
			continue
		}
		n++
	}
	return n, nil
}

// copyBuf is the size of the verified reads copyVerified makes: a range of
// more than 1 MiB is streamed by the iroh store, and verified in one pass.
// Copying 256 MiB from an iroh store into a directory store took 0.44-0.50 s
// with 16 MiB against 0.86-1.62 s with 4 MiB (fetch from a cache that held
// it all, on the shared 2-core test machine, in one noisy sitting).
const copyBuf = 16 << 20

// copyVerified copies object id from src into dst: every range read through
// verify.Reader, so only verified bytes are written, and committed by dst
// (atomically: a store never shows part of an object) only if what dst
// computed is id.
func copyVerified(ctx context.Context, src verify.Source, id storageid.ID, dst blobs.Store) error {
	vr, err := verify.NewReader(ctx, src, id)
	if err != nil {
		return err
	}
	p, err := dst.Create(ctx)
	if err != nil {
		return err
	}
	defer p.Abort()
	buf := make([]byte, copyBuf)
	for off := int64(0); off < vr.Size(); {
		k := min(int64(len(buf)), vr.Size()-off)
		if _, err := vr.ReadAtContext(ctx, buf[:k], off); err != nil {
			return err
		}
		if _, err := p.Write(buf[:k]); err != nil {
			return err
		}
		off += k
	}
	got, err := p.Commit(ctx)
	if err != nil {
		return err
	}
	if got != id {
		return fmt.Errorf("the copy's storage_id is %s: %w", got, verify.ErrVerify)
	}
	return nil
}

// fetchChunk is the range of one fetch call: its progress is kept as it
// arrives, and an interruption is seen between calls.
const fetchChunk = 64 << 20

// fetchTimeout bounds one fetch call of fetchChunk bytes.
const fetchTimeout = 10 * time.Minute

// runFetch is sop-pme fetch.
func (a *app) runFetch(cmd *cobra.Command, f *fetchFlags, args []string) error {
	ctx := cmd.Context()
	if f.from == "" {
		return usagef("fetch needs --from TICKET (what sop-pme serve printed)")
	}
	from := f.from
	if t, ok := irohTicket(from); ok {
		from = t
	}
	idArgs, err := parseIDArgs(args)
	if err != nil {
		return err
	}
	for _, ia := range idArgs {
		if ia.prefix != "" {
			return usagef("%s: fetch needs a whole storage_id (another node's objects cannot be listed)", ia.text)
		}
	}
	if v, err := f.store.path(); err != nil {
		return err
	} else if _, ok := irohTicket(v); ok {
		return usagef("fetch copies into a directory or s3:// store, not into another node's")
	}
	from, err = irohAddr(ctx, from, "--from")
	if err != nil {
		return err
	}
	st, undo, err := f.store.create(ctx)
	if err != nil {
		return err
	}
	dir, err := cacheDir(f.cache, "fetch", "iroh")
	if err != nil {
		undo()
		return err
	}
	cache, err := openCache(ctx, dir, iroh.WithFetchTimeout(fetchTimeout))
	if err != nil {
		undo()
		return err
	}
	defer cache.Close()
	fetched := 0
	for _, ia := range idArgs {
		id := ia.id
		if _, err := verify.NewReader(ctx, st, id); err == nil {
			if !a.quiet {
				fmt.Fprintf(a.stderr, "sop-pme: %s: already in %s\n", id, f.store.name())
			}
			continue
		}
		if err := a.fetchOne(ctx, cache, from, id, st); err != nil {
			if fetched == 0 {
				undo()
			}
			return about(id.String(), err)
		}
		fetched++
		fmt.Fprintln(a.stdout, id)
	}
	return nil
}

// fetchOne fetches object id from the node into the cache, all of it, and
// copies it into st as it arrives: each part fetched (fetchChunk bytes,
// verified by iroh-blobs on arrival) is read back verified from the cache
// (verify.Reader) and written to a Pending of st while the next part is
// fetched. The Pending is committed only after the last byte was written,
// and only if st computes id: st never shows part of the object. If the
// fetch stops, the Pending is discarded, and the cache keeps what arrived
// for the next fetch.
func (a *app) fetchOne(ctx context.Context, cache *iroh.Store, from string, id storageid.ID, st store) error {
	// The last group first: it proves the size.
	got, err := cache.Fetch(ctx, from, id, 1<<62, 1)
	if err != nil {
		return err
	}
	vr, err := verify.NewReader(ctx, cache, id)
	if err != nil {
		return err
	}
	size := uint64(vr.Size())
	p, err := st.Create(ctx)
	if err != nil {
		return err
	}
	defer p.Abort()
	m := a.newMeter("fetch "+id.String()[:12], int64(size))

	type part struct {
		off, n   uint64
		received uint64
		err      error
	}
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	parts := make(chan part, 1)
	go func() {
		defer close(parts)
		for off := uint64(0); off < size; off += fetchChunk {
			pt := part{off: off, n: min(fetchChunk, size-off)}
			if pt.err = fctx.Err(); pt.err == nil {
				pt.received, pt.err = cache.Fetch(fctx, from, id, pt.off, pt.n)
			}
			select {
			case parts <- pt:
			case <-fctx.Done():
				return
			}
			if pt.err != nil {
				return
			}
		}
	}()
	received := got
	buf := make([]byte, copyBuf)
	for pt := range parts {
		received += pt.received
		if pt.err != nil {
			return pt.err
		}
		for off := pt.off; off < pt.off+pt.n; {
			k := min(uint64(len(buf)), pt.off+pt.n-off)
			if _, err := vr.ReadAtContext(ctx, buf[:k], int64(off)); err != nil {
				return err
			}
			if _, err := p.Write(buf[:k]); err != nil {
				return err
			}
			m.add(int(k))
			off += k
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	c, err := p.Commit(ctx)
	if err != nil {
		return err
	}
	if c != id {
		return fmt.Errorf("the copy's storage_id is %s: %w", c, verify.ErrVerify)
	}
	m.done("fetched %s (%d bytes; %d bytes received from the node) into the store", id, size, received)
	return nil
}
