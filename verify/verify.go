// Package verify implements the integrity layer of SOP-PME-1 (Section 11.10):
// BLAKE3 verified streaming (BAO) with 16 KiB chunk groups, exactly as
// iroh-blobs uses it, so that every object byte a reader obtains is first
// checked against the object's storage_id (Section 11.7).
//
// It is the only code in the library that turns proof material into object
// bytes. Blob stores and transports implement [Source] and hand out BAO
// slices (the size, the parent hashes on the paths to the requested groups,
// and those groups' bytes); a [Reader] fetches them and releases only bytes
// that hash, through those parents, to the storage_id. There is no
// non-verifying read in this package.
//
// # Write side
//
// A [Hasher] computes, in one pass, an object's storage_id and its pre-order
// outboard (the .obao4 file of iroh-blobs' FsStore); [ExtractSlice] builds
// slices from the object's bytes and that outboard.
//
// # Read side
//
// [NewReader] first verifies the object's last group, which proves its size
// (bao-tree semantics; SOP-PME-1 Sections 11.8 and 11.10: the length is
// never taken on trust), then serves [Reader.ReadAt] from verified,
// group-aligned slices. [Verify] checks a whole object in bounded memory.
//
// A range-verified read establishes the integrity of the ranges it read, not
// of the object: reading some ranges through a Reader never makes an object
// count as verified, and unread regions are not authenticated (Section 11.10,
// last paragraph). Only [Verify] (or [VerifyReader] over all of an object's
// bytes) verifies an object.
//
// # Tree
//
// The leaves are 16 KiB groups ([GroupSize]); the last may be short, and an
// empty object is one empty group. A node covering more than one group splits
// at the largest power of two strictly less than its length in bytes; this is
// BLAKE3's own tree, so the root is the BLAKE3 hash of the object. The
// pre-order outboard is the 64-byte pair (left chaining value ‖ right chaining
// value) of every parent, in pre-order, (groups − 1) × 64 bytes. The results
// are byte-identical to lukechampine.com/blake3/bao with group 4 (whose
// outboard adds an 8-byte size prefix), to n0's abao test vectors
// (testdata/bao-16k-groups.json) and to bao-tree
// (https://github.com/n0-computer/bao-tree), which iroh-blobs uses.
package verify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"

	"github.com/sovm/sop-pme/storageid"
)

var (
	// ErrVerify is returned (wrapped, with a detail for humans) when bytes or
	// proof material do not match the storage_id: altered, missing or
	// surplus bytes in a slice, a wrong root, or an object that does not hash
	// to its storage_id. It is the one failure kind of verification; callers
	// must not distinguish its causes, and may only say where they lie (a
	// *RangeError, which matches it).
	ErrVerify = errors.New("verify: bytes do not match storage_id")

	// ErrSize is returned (wrapped) when a slice claims a size other than the
	// object's proven size, or when the proven size is not the size expected
	// by WithExpectedSize.
	ErrSize = errors.New("verify: object size mismatch")
)

// A RangeError is a failure of verification located in the object: it
// matches ErrVerify (errors.Is), and errors.As finds it. The decoder checks
// an object's groups in order, so for Verify it names the first group
// whose bytes do not match, or, with Proof, the first range whose parent
// hashes (the proof, from the outboard) do not: those bytes may be intact,
// but nothing above them vouches for them.
//
// It says where, not why: the bytes may have been altered, or the object
// may not be the one asked for. Nothing of the range is released.
type RangeError struct {
	Off, Len uint64 // the object's bytes [Off, Off+Len)
	Proof    bool   // the range's proof does not match, not its bytes
}

func (e *RangeError) Error() string {
	if e.Proof {
		return fmt.Sprintf("%v: parent of bytes [%d, %d) does not match", ErrVerify, e.Off, e.Off+e.Len)
	}
	return fmt.Sprintf("%v: bytes [%d, %d) do not match", ErrVerify, e.Off, e.Off+e.Len)
}

// Unwrap returns ErrVerify.
func (e *RangeError) Unwrap() error { return ErrVerify }

// An Option configures NewReader and Verify.
type Option func(*config) error

type config struct {
	par          int
	expectedSize int64 // -1: none
}

func newConfig(opts []Option) (config, error) {
	c := config{par: runtime.GOMAXPROCS(0), expectedSize: -1}
	for _, o := range opts {
		if err := o(&c); err != nil {
			return config{}, err
		}
	}
	return c, nil
}

// WithConcurrency sets how many goroutines may hash one large verified
// range at once, n ≥ 1. The default is runtime.GOMAXPROCS(0).
func WithConcurrency(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("verify: concurrency %d is less than 1", n)
		}
		c.par = n
		return nil
	}
}

// WithExpectedSize makes NewReader and Verify fail with ErrSize unless the
// proven size of the object is size bytes, for a caller that knows it (such
// as the catalog's record of an object, Section 11.8). The size is still
// proven from the object's last group, never taken from this option.
func WithExpectedSize(size int64) Option {
	return func(c *config) error {
		if size < 0 {
			return fmt.Errorf("verify: negative expected size %d", size)
		}
		c.expectedSize = size
		return nil
	}
}

// checkExpected reports whether the proven size satisfies the configuration.
func (c *config) checkExpected(id storageid.ID, size uint64) error {
	if c.expectedSize >= 0 && size != uint64(c.expectedSize) {
		return fmt.Errorf("%w: object %s has %d bytes, expected %d", ErrSize, id, size, c.expectedSize)
	}
	return nil
}

// Verify checks that the object src holds under id is intact: it streams one
// slice of the whole object from src and returns nil only if every byte,
// and the size, match id. It hashes the object in buffers of at most 8 MiB,
// never holding the object in memory, and returns no bytes.
//
// This is the check that makes an object count as verified (Section 11.10);
// reads of ranges through a Reader are not. Errors match ErrVerify, ErrSize
// or the Source's errors (such as blobs.ErrNotFound), or are ctx's error.
func Verify(ctx context.Context, src Source, id storageid.ID, opts ...Option) error {
	cfg, err := newConfig(opts)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// A range from 0 past any end is clipped to the whole object, so the
	// slice holds every group, the last included: it proves the size.
	rc, err := src.Slice(ctx, id, 0, tailOffset)
	if err == nil && rc == nil {
		err = errNilSlice
	}
	if err != nil {
		return fmt.Errorf("verify: fetching %s: %w", id, err)
	}
	defer rc.Close()
	d := &decoder{par: cfg.par}
	d.reset(rc)
	d.ctx = ctx
	size, err := d.readHeader()
	if err != nil {
		return fmt.Errorf("verify: object %s: %w", id, err)
	}
	if err := cfg.checkExpected(id, size); err != nil {
		return err
	}
	d.selectRange(size, 0, tailOffset)
	d.discard = true
	d.dst = make([]byte, min(bulkMax, numGroups(size)*GroupSize))
	if err := d.decode(&id); err != nil {
		return fmt.Errorf("verify: object %s: %w", id, err)
	}
	return nil
}

// VerifyReader reads r to its end and reports whether those bytes are
// exactly the object id: it returns nil if they hash to id, and an error
// matching ErrVerify if not. It is for bytes at hand (a local file, a
// buffer) in one pass with BLAKE3.
//
// Bytes that passed VerifyReader and are read again later, through another
// interface, are not verified by it (Section 11.10): read them through a
// Reader instead.
func VerifyReader(r io.Reader, id storageid.ID) error {
	got, _, err := storageid.SumReader(r)
	if err != nil {
		return err
	}
	if got != id {
		return fmt.Errorf("%w: bytes hash to %s, not %s", ErrVerify, got, id)
	}
	return nil
}
