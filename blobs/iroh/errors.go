package iroh

import (
	"context"
	"errors"
	"fmt"

	"github.com/sovm/sop-pme/blobs"
)

// Errors reported by the store. An *Error from this package matches one of
// them, or blobs.ErrNotFound, with errors.Is.
var (
	// ErrCorrupt means that blob data failed verification against its hash:
	// the local store's files were damaged, or a remote node sent bad data.
	ErrCorrupt = errors.New("iroh: blob data failed verification")

	// ErrHashMismatch means that iroh-blobs computed another hash for an
	// imported object than this package did over the same bytes.
	ErrHashMismatch = errors.New("iroh: iroh-blobs hash differs from storage_id")

	// ErrTransfer means that fetching from a remote node failed: the
	// connection could not be made, broke, or the remote stopped sending
	// (as a node does when its own copy fails verification).
	ErrTransfer = errors.New("iroh: transfer failed")

	// ErrRemote means that the remote node failed to read the blob it
	// serves, and said so by ending the transfer with its internal-error
	// code: iroh-blobs' provider validates all it sends, so its copy failed
	// verification against the hash, or its store could not be read. No
	// byte of the failed part was received.
	ErrRemote = errors.New("iroh: the remote node failed to read the blob it serves")

	// ErrTimeout means that a call ran past its time limit (its context's
	// deadline, or the store's fetch timeout). Such errors also match
	// context.DeadlineExceeded.
	ErrTimeout = errors.New("iroh: timed out")

	// ErrClosed means that the store was closed.
	ErrClosed = errors.New("iroh: store closed")

	// ErrInternal means that the library failed unexpectedly (or panicked).
	ErrInternal = errors.New("iroh: internal error")
)

// Code is a result code of the Rust library (sop_iroh.h).
type Code int32

// The codes, as sop_iroh.h declares them.
const (
	CodeInternal     Code = 1
	CodeInvalid      Code = 2
	CodeNotFound     Code = 3
	CodeCorrupt      Code = 4
	CodeHashMismatch Code = 5
	CodeIO           Code = 6
	CodeNetwork      Code = 7
	CodeTimeout      Code = 8
	CodePanic        Code = 9
	CodeRemote       Code = 10
)

// An Error is a failure reported by the Rust library.
type Error struct {
	Op   string // the operation, e.g. "export_bao"
	Code Code
	Msg  string // the library's message
}

func (e *Error) Error() string {
	return fmt.Sprintf("iroh: %s: %s (code %d)", e.Op, e.Msg, e.Code)
}

// Is reports whether the error's code corresponds to target.
func (e *Error) Is(target error) bool {
	switch target {
	case blobs.ErrNotFound:
		return e.Code == CodeNotFound
	case ErrCorrupt:
		return e.Code == CodeCorrupt
	case ErrHashMismatch:
		return e.Code == CodeHashMismatch
	case ErrTransfer:
		return e.Code == CodeNetwork
	case ErrRemote:
		return e.Code == CodeRemote
	case ErrTimeout, context.DeadlineExceeded:
		return e.Code == CodeTimeout
	case ErrInternal:
		return e.Code == CodeInternal || e.Code == CodePanic
	}
	return false
}
