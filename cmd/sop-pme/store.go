package main

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/blobs/s3"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
	"github.com/spf13/cobra"
)

// store is what the commands use of a blob store: a directory (blobs.Dir),
// a prefix of an S3 bucket (s3.Store), or, read-only, another node's objects
// over iroh (iroh://TICKET, store_iroh.go; only in a build with the iroh
// tag). What only a directory has (its
// marker file, its creation, Sweep) stays with blobs.Dir.
type store interface {
	blobs.Store
	verify.Source
	List(ctx context.Context) iter.Seq2[blobs.Blob, error]
	Delete(ctx context.Context, id storageid.ID) error
}

var (
	_ store = (*blobs.Dir)(nil)
	_ store = (*s3.Store)(nil)
)

// storeFlag is the --store flag, with $SOP_PME_STORE as its default: a
// directory, or an s3:// URL.
type storeFlag struct{ value string }

func addStoreFlag(cmd *cobra.Command, s *storeFlag) {
	cmd.Flags().StringVarP(&s.value, "store", "s", "", "`directory` of the blob store, s3://bucket/prefix?endpoint=…&region=…, or iroh://TICKET to read another node's (default $SOP_PME_STORE)")
}

// path returns the store the flag names, a directory or a URL, checking a
// URL's form (a usage error) before anything is opened.
func (s *storeFlag) path() (string, error) {
	if s.value == "" {
		s.value = os.Getenv("SOP_PME_STORE")
	}
	if s.value == "" {
		return "", usagef("no store: give --store DIR (or an s3:// URL) or set SOP_PME_STORE")
	}
	if isStoreURL(s.value) {
		if _, err := checkStoreURL(s.value); err != nil {
			return "", err
		}
	}
	return s.value, nil
}

// name is the store as messages name it: the directory, or the URL without
// its query (an s3:// URL carries no credentials, but a query is not worth
// the risk of echoing a mistyped one).
func (s *storeFlag) name() string {
	if !isStoreURL(s.value) {
		return s.value
	}
	name, err := checkStoreURL(s.value)
	if err != nil {
		return "the store URL"
	}
	return name
}

// isURL reports whether the flag names a store by URL.
func (s *storeFlag) isURL() bool { return isStoreURL(s.value) }

// isStoreURL reports whether a store is given as a URL (scheme://…) rather
// than as a directory.
func isStoreURL(v string) bool {
	i := strings.Index(v, "://")
	return i > 0 && !strings.ContainsAny(v[:i], `/\`)
}

// storeURLParams are the query parameters an s3:// store URL may carry
// (see s3.Open): gocloud.dev's s3blob ones, and whole_outboard=N
// (s3.WithWholeOutboard: outboards of up to N bytes fetched whole, in one
// request).
var storeURLParams = []string{"endpoint", "region", "use_path_style", "s3ForcePathStyle", "profile", "disable_https", "awssdk", "whole_outboard"}

// checkStoreURL checks the form of an s3:// store URL and returns its name
// for messages: s3://bucket/prefix, no query. Credentials in the URL are
// refused; its errors never quote it whole.
func checkStoreURL(raw string) (string, error) {
	if t, ok := irohTicket(raw); ok {
		if t == "" || strings.ContainsAny(t, "/?# ") {
			return "", usagef("--store: want iroh://TICKET, the ticket sop-pme serve printed")
		}
		return irohName(t), nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url's errors quote the URL.
		return "", usagef("--store: the store URL does not parse (want s3://bucket/prefix?endpoint=URL&region=REGION)")
	}
	if u.Scheme != "s3" {
		return "", usagef("--store: a store URL of scheme %q: a store is a directory, an s3:// URL or an iroh:// ticket", u.Scheme)
	}
	query, hasUser := u.RawQuery, u.User != nil
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	name := u.String()
	if hasUser {
		return "", usagef("--store %s: credentials in a store URL are refused: give them as AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or in the AWS configuration", name)
	}
	if u.Host == "" {
		return "", usagef("--store: the store URL names no bucket (want s3://bucket/prefix)")
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return "", usagef("--store %s: its query does not parse", name)
	}
	for k, vs := range q {
		if !slices.Contains(storeURLParams, k) {
			return "", usagef("--store %s: unknown parameter %q (one of %s)", name, k, strings.Join(storeURLParams, ", "))
		}
		if len(vs) > 1 {
			return "", usagef("--store %s: parameter %s given %d times", name, k, len(vs))
		}
		if k == "whole_outboard" {
			if n, err := strconv.ParseInt(vs[0], 10, 64); err != nil || n < 0 || n > s3.MaxWholeOutboard {
				return "", usagef("--store %s: whole_outboard=%q: want a number of bytes from 0 to %d", name, vs[0], s3.MaxWholeOutboard)
			}
		}
	}
	return name, nil
}

// storeMode says how a command opens its store.
type storeMode int

const (
	storeRead   storeMode = iota // read only: create and remove nothing
	storeWrite                   // an existing store, to change
	storeCreate                  // a directory is created if missing
)

// open opens the store the flag names. A directory is opened as mode says;
// a bucket is never created, nor is anything written to it by opening it.
func (s *storeFlag) open(ctx context.Context, mode storeMode) (store, error) {
	v, err := s.path()
	if err != nil {
		return nil, err
	}
	if t, ok := irohTicket(v); ok {
		if mode != storeRead {
			return nil, usagef("--store %s: another node's objects are read-only here (copy them with sop-pme fetch)", s.name())
		}
		st, err := openIrohStore(ctx, t)
		if err != nil {
			return nil, s.err(err)
		}
		return st, nil
	}
	if isStoreURL(v) {
		st, err := s3.Open(ctx, v)
		if err != nil {
			return nil, s.err(err)
		}
		return st, nil
	}
	var d *blobs.Dir
	switch mode {
	case storeRead:
		d, err = blobs.OpenDir(v, blobs.ReadOnly())
	case storeWrite:
		d, err = blobs.OpenDir(v)
	default:
		d, err = blobs.CreateDir(v)
	}
	if err != nil {
		return nil, s.err(err)
	}
	return d, nil
}

// openReadOnly opens an existing store read-only: it creates nothing, and
// removes nothing.
func (s *storeFlag) openReadOnly(ctx context.Context) (store, error) {
	return s.open(ctx, storeRead)
}

// create opens the store an import writes into, creating a directory store
// if there is none. undo removes a directory store that create made, if it
// holds nothing: an import calls it when it fails.
func (s *storeFlag) create(ctx context.Context) (st store, undo func(), err error) {
	v, err := s.path()
	if err != nil {
		return nil, nil, err
	}
	undo = func() {}
	if !isStoreURL(v) {
		if _, err := os.Stat(v); errors.Is(err, os.ErrNotExist) {
			undo = func() { removeEmptyStore(v) }
		}
	}
	st, err = s.open(ctx, storeCreate)
	if err != nil {
		return nil, nil, err
	}
	return st, undo, nil
}

// dirOnly refuses an s3:// store for a command (what) that works on a
// directory only.
func (s *storeFlag) dirOnly(what string) error {
	if s.isURL() {
		return usagef("%s works on a directory store, not on %s", what, s.name())
	}
	return nil
}

// err says what is wrong with the store in one line.
func (s *storeFlag) err(err error) error {
	if err == nil {
		return nil
	}
	name := s.name()
	if errors.Is(err, blobs.ErrNoStore) {
		if s.isURL() {
			return &cmdError{exitNotFound, fmt.Sprintf("%s: no such bucket (sop-pme creates no bucket: create it first)", name), err}
		}
		return &cmdError{exitNotFound, fmt.Sprintf("%s: no store there (sop-pme import creates one)", name), err}
	}
	return about(name, err)
}

// irohTicket returns the ticket of an iroh://TICKET store.
func irohTicket(v string) (string, bool) {
	return strings.CutPrefix(v, "iroh://")
}

// irohName is an iroh:// store as messages name it: its ticket, shortened.
func irohName(ticket string) string {
	if len(ticket) > 24 {
		ticket = ticket[:24] + "…"
	}
	return "iroh://" + ticket
}

// atExit holds what must be undone when the command ends, whatever its
// outcome: the private iroh store of an iroh:// store. app.run runs it.
var atExit struct {
	sync.Mutex
	fns []func()
}

// onExit has fn run when the command ends (last registered, first run).
func onExit(fn func()) {
	atExit.Lock()
	defer atExit.Unlock()
	atExit.fns = append(atExit.fns, fn)
}

// runAtExit runs, once, what onExit registered.
func runAtExit() {
	atExit.Lock()
	fns := atExit.fns
	atExit.fns = nil
	atExit.Unlock()
	for i := len(fns) - 1; i >= 0; i-- {
		fns[i]()
	}
}

// redactSecrets replaces, in a message, the AWS credentials of the
// environment, should an error ever quote them.
func redactSecrets(msg string) string {
	for _, k := range []string{"AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ACCESS_KEY_ID"} {
		if v := os.Getenv(k); len(v) >= 8 {
			msg = strings.ReplaceAll(msg, v, "<"+k+">")
		}
	}
	return msg
}
