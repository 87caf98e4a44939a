package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strings"

	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/blobs/iroh"
	"github.com/sovm/sop-pme/cmd/sop-pme/internal/formats"
	"github.com/sovm/sop-pme/keyring"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/verify"
)

// The exit codes. They are documented in the root command's help
// (exitCodesHelp) and in the README.
const (
	exitOK           = 0
	exitFailure      = 1   // any failure not listed below
	exitUsage        = 2   // a bad command line: flag, argument, missing --yes
	exitNotFound     = 3   // no such object, store, input file, KEK or keyring
	exitVerify       = 4   // bytes that do not match the storage_id
	exitKey          = 5   // no DEK for the object, or a key that does not open
	exitNonConform   = 6   // an object that is not conformant SOP-PME-1
	exitInterrupted  = 130 // SIGINT or SIGTERM
	exitCodesSummary = `Exit codes:
  0    success
  1    failure not listed below (I/O, unreadable input to import, ...)
  2    usage: a bad flag or argument (-h prints the usage and exits 0)
  3    not found: no such object, store, input file, KEK or keyring
  4    verification failed: the bytes do not match the storage_id (or the
       node serving them over iroh found its copy does not)
  5    key: no DEK held for the object, or a KEK, KMS key or DEK that does not open it
  6    not conformant: the object's bytes verify but it breaks SOP-PME-1 (check)
  130  interrupted`
)

// A usageError is a bad command line (exit 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// A cmdError is an error of a command about a subject (a file, a store, a
// storage_id), with the exit code it gives and the one line it prints.
type cmdError struct {
	code int
	msg  string
	err  error
}

func (e *cmdError) Error() string { return e.msg }
func (e *cmdError) Unwrap() error { return e.err }

// errNonConformant is what check returns for an object that fails a
// requirement other than its storage_id.
var errNonConformant = errors.New("not a conformant SOP-PME-1 object")

// classify returns the exit code of err, which a command returned for
// subject (a storage_id, a file or a store; "" if none), and its one line.
//
// The order matters. Verification comes first: bytes that do not match
// their storage_id are damage, whatever else went wrong after. A DEK that
// fails AES-GCM on bytes that did verify (pme.ErrAuth without
// verify.ErrVerify) is the wrong key, not damage: the reader verifies every
// byte before it decrypts it, so an authentication failure there can only
// come from the key.
func classify(err error, subject string) (int, string) {
	var ce *cmdError
	if errors.As(err, &ce) {
		return ce.code, ce.msg
	}
	var ue *usageError
	if errors.As(err, &ue) {
		return exitUsage, ue.msg
	}
	at := func(s string) string {
		if subject == "" {
			return s
		}
		return subject + ": " + s
	}
	switch {
	case errors.Is(err, context.Canceled):
		return exitInterrupted, at("interrupted")
	case errors.Is(err, verify.ErrVerify):
		return exitVerify, at("the bytes do not match the storage_id: the object is damaged, or is not the one asked for")
	case errors.Is(err, iroh.ErrCorrupt):
		return exitVerify, at("bytes from the iroh store or node do not match the storage_id")
	case errors.Is(err, iroh.ErrRemote):
		// iroh-blobs' provider validates all it sends: it stopped because
		// its copy does not match the storage_id (or it could not read it).
		return exitVerify, at("the node serving it stopped sending: its copy does not match the storage_id, or it could not read it; no byte of that range was used")
	case errors.Is(err, verify.ErrSize):
		return exitVerify, at("the object's size does not match its storage_id: it is damaged, or is not the one asked for")
	case errors.Is(err, blobs.ErrNoStore):
		return exitNotFound, clean(err)
	case errors.Is(err, blobs.ErrNotFound):
		return exitNotFound, at("no such object in the store")
	case errors.Is(err, keyring.ErrMaster), errors.Is(err, keyring.ErrWrongKEK):
		return exitKey, clean(err)
	case errors.Is(err, keyring.ErrUnwrap):
		return exitKey, at("the keyring's wrapped DEK for this object does not open: it was altered or moved from another object")
	case errors.Is(err, reader.ErrNoKey):
		return exitKey, at("the keyring holds no DEK for this object")
	case errors.Is(err, pme.ErrAuth):
		return exitKey, at("the DEK does not open the object, whose bytes match the storage_id: wrong key")
	case errors.Is(err, errGrantIdentity), errors.Is(err, errGrantEntry), errors.Is(err, errIdentityFile):
		// Key grants (keys accept): a grant for another identity, an entry
		// that does not open for its storage_id, a bad identity file. (A
		// DEK that differs from the one held, keyring.ErrConflict, is
		// exit 5 from keys accept, which says so.)
		return exitKey, at(clean(err))
	case errors.Is(err, errNonConformant):
		return exitNonConform, at(errNonConformant.Error())
	case errors.Is(err, reader.ErrFormat), errors.Is(err, pme.ErrFormat), errors.Is(err, pme.ErrPlaintextFooter),
		errors.Is(err, pme.ErrUnsupported), errors.Is(err, pme.ErrModule), errors.Is(err, pme.ErrTooLarge):
		// The bytes verified (or the error would be ErrVerify), so the
		// object itself is malformed.
		return exitNonConform, at("not a SOP-PME-1 object this reader can read: " + clean(err))
	case errors.Is(err, keyring.ErrNoRing), errors.Is(err, fs.ErrNotExist):
		return exitNotFound, clean(err)
	case errors.Is(err, formats.ErrFormat):
		return exitFailure, clean(err)
	}
	return exitFailure, clean(err)
}

// prefix matches the package prefixes of the library's errors ("reader: ",
// "verify: ", ...): the command prints its own, once (see dropPrefixes).
var prefix = regexp.MustCompile(`\b(reader|verify|blobs|keyring|pme|writer|storageid|padme|keyref|formats|parquet|arrow/ipc|arrow/csv|sopsql|catalog): `)

// dropPrefixes removes the package prefixes from s, but for a match that
// ends a file name: "orders.parquet: " keeps its extension.
func dropPrefixes(s string) string {
	var b strings.Builder
	last := 0
	for _, m := range prefix.FindAllStringIndex(s, -1) {
		if m[0] > 0 && strings.IndexByte("./-_", s[m[0]-1]) >= 0 {
			continue
		}
		b.WriteString(s[last:m[0]])
		last = m[1]
	}
	b.WriteString(s[last:])
	return b.String()
}

// clean returns err's text on one line, without the library's package
// prefixes and with any repeated segment ("x: x: y") said once.
func clean(err error) string { return cleanText(err.Error()) }

// cleanText is clean for a message already made text.
func cleanText(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	s = dropPrefixes(s)
	parts := strings.Split(s, ": ")
	out := parts[:0]
	seen := map[string]bool{}
	for _, p := range parts {
		if seen[p] {
			continue
		}
		seen[p] = true
		out = append(out, p)
	}
	return strings.Join(out, ": ")
}

// A subjectError is err about a subject (a storage_id, a file or a store),
// which exitCode hands to classify to begin the error's line; about makes
// one.
type subjectError struct {
	subject string
	err     error
}

func (e *subjectError) Error() string { return e.subject + ": " + e.err.Error() }
func (e *subjectError) Unwrap() error { return e.err }

// about returns err about subject (nil if err is nil).
func about(subject string, err error) error {
	if err == nil {
		return nil
	}
	var se *subjectError
	if errors.As(err, &se) {
		return err
	}
	return &subjectError{subject, err}
}

// exitCode returns the exit code and the one line to print for err.
func exitCode(err error) (int, string) {
	var se *subjectError
	subject := ""
	if errors.As(err, &se) {
		subject = se.subject
		code, msg := classify(se.err, subject)
		var ce *cmdError
		var ue *usageError
		if code == exitFailure && !errors.As(se.err, &ce) && !errors.As(se.err, &ue) {
			// A generic error: its text, once, after the subject.
			msg = clean(se)
		}
		return code, msg
	}
	return classify(err, "")
}
