package verify

import (
	"context"
	"io"

	"github.com/sovm/sop-pme/storageid"
)

// GroupSize is the size in bytes of a BAO chunk group as iroh-blobs uses it:
// 16 BLAKE3 chunks of 1 KiB (iroh-blobs IROH_BLOCK_SIZE, chunk group log 4).
// Proofs never authenticate less than one group.
const GroupSize = 16 << 10

// A Source supplies proof material for blobs it holds. It never supplies bare
// object bytes: what it returns is untrusted until this package has checked it
// against the blob's storage_id (SOP-PME-1 Section 11.10).
//
// The blob stores (the pure-Go directory store in package blobs, and the
// iroh-blobs store behind the iroh build tag) implement Source, and so can any
// transport: the verifier depends on nothing else.
type Source interface {
	// Slice returns the BAO slice of blob id for the chunk groups that
	// intersect the byte range [off, off+n), n > 0: the blob's size as an
	// unsigned 64-bit little-endian integer, then, in pre-order, the 64-byte
	// parent pairs on the paths from the root to those groups and the bytes of
	// each of those groups. This is the single-range form of bao-tree's
	// encoding with 16 KiB groups, as iroh-blobs' export_bao and its get
	// protocol produce it.
	//
	// A range that lies wholly at or beyond the blob's end selects the last
	// group, as in bao-tree; a verifier learns and proves the size of a blob
	// this way. A range that straddles the end is clipped to it. off+n may
	// exceed the blob's size by any amount; this package asks for
	// [2^63−1, +1) to prove the size (NewReader) and [0, +2^63−1) for a whole
	// blob (Verify). ExtractSlice builds this encoding from a blob's bytes
	// and its pre-order outboard.
	//
	// Slice returns an error matching blobs.ErrNotFound if the blob is not
	// held. The caller closes the returned reader. The returned reader may
	// fail (for example once ctx is done); a reader that ends early or
	// carries extra bytes fails verification.
	Slice(ctx context.Context, id storageid.ID, off, n uint64) (io.ReadCloser, error)
}

// A Range is a byte range [Off, Off+N) of a blob.
type Range struct{ Off, N uint64 }

// A Planner is a Source that can be told ahead which ranges of a blob a
// reader is about to ask for, in the order it will ask for them, so that
// it can fetch their proof material in fewer, larger or earlier requests
// (a store over a network: the parent pairs of every range in one or two
// requests, the next ranges' bytes while the reader verifies the current
// ones). Plan is only a hint: it returns at once, it changes which
// requests a Source makes and when, never what Slice returns, and a
// Source that ignores it is correct. Nothing fetched ahead is trusted
// either: it reaches the reader only through Slice, and is verified
// against the storage_id like every slice (Section 11.10). The work Plan
// starts ends when ctx is done; a Planner bounds what it holds ahead.
type Planner interface {
	Source
	Plan(ctx context.Context, id storageid.ID, ranges []Range)
}
