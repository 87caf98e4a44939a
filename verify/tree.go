package verify

import (
	"encoding/binary"
	"math"
	"math/bits"
	"sync"

	"lukechampine.com/blake3/guts"
)

// The BAO tree of a blob, as bao-tree and iroh-blobs define it with 16 KiB
// chunk groups:
//
//   - the leaves are the blob's groups of GroupSize bytes, the last of which
//     may be short; an empty blob is a single empty group;
//   - a node covering more than one group splits at the largest power of two
//     strictly less than its length in bytes (always a whole number of
//     groups), which makes the tree BLAKE3's own, so its root is the BLAKE3
//     hash of the blob;
//   - the pre-order outboard is the 64-byte pair (left CV ‖ right CV) of every
//     parent, in pre-order: groups−1 pairs.
//
// All offsets and lengths are in bytes unless a name says otherwise.

const (
	// pairSize is the size of one parent's entry in an outboard or a slice.
	pairSize = 64

	// headerSize is the size of the little-endian blob size that starts a
	// slice encoding.
	headerSize = 8

	// chunksPerGroup is the number of 1 KiB BLAKE3 chunks in a group.
	chunksPerGroup = GroupSize / guts.ChunkSize

	// maxSize is the largest blob size this package accepts, from a store or
	// from a slice header: offsets must fit an int64 (io.ReaderAt).
	maxSize = math.MaxInt64

	// tailOffset is the offset at which NewReader asks a Source for the last
	// group: at or after the end of every blob of at most maxSize bytes, and
	// small enough that tailOffset+1 does not overflow.
	tailOffset = math.MaxInt64

	// parallelMin is the smallest subtree, in bytes, whose halves are hashed
	// on separate goroutines.
	parallelMin = 256 << 10

	// bulkMax is the largest subtree, in bytes, that a decoder reads and
	// hashes in one piece; Verify hashes objects in buffers of this size.
	bulkMax = 8 << 20

	// maxDepth bounds the depth of a tree of at most maxSize bytes:
	// 2^63 / 2^14 = 2^49 groups.
	maxDepth = 64
)

// numGroups returns the number of groups of a blob of size bytes: at least one,
// since an empty blob is a single empty group.
func numGroups(size uint64) uint64 {
	if size == 0 {
		return 1
	}
	return (size-1)/GroupSize + 1
}

// OutboardSize returns the size in bytes of the pre-order outboard of a blob
// of size bytes: 64 bytes for each parent node, (groups − 1) × 64, as in
// iroh-blobs' .obao4 files.
func OutboardSize(size uint64) uint64 {
	return (numGroups(size) - 1) * pairSize
}

// split returns the length of the left child of a node of length bytes,
// length > GroupSize: the largest power of two strictly less than length, as
// in bao.Encode.
func split(length uint64) uint64 {
	return 1 << (bits.Len64(length-1) - 1)
}

// selectGroups returns the groups [g0, g1) that a slice of the byte range
// [off, off+n), n > 0, selects in a blob of size bytes, with the semantics of
// Source.Slice: a range wholly at or after the end selects the last group, a
// range that straddles the end is clipped, and off+n saturates.
func selectGroups(size, off, n uint64) (g0, g1 uint64) {
	if off >= size {
		last := numGroups(size)
		return last - 1, last
	}
	end := off + n
	if end < off || end > size {
		end = size
	}
	return off / GroupSize, (end-1)/GroupSize + 1
}

// cvFromBytes decodes a chaining value from its 32-byte little-endian form.
func cvFromBytes(b []byte) (cv [8]uint32) {
	_ = b[31]
	for i := range cv {
		cv[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return cv
}

// putCV encodes a chaining value into 32 bytes, little-endian.
func putCV(b []byte, cv *[8]uint32) {
	_ = b[31]
	for i, w := range cv {
		binary.LittleEndian.PutUint32(b[4*i:], w)
	}
}

// parentCV returns the chaining value of the parent of left and right, with
// flags (0, or guts.FlagRoot for the root).
func parentCV(left, right *[8]uint32, flags uint32) [8]uint32 {
	return guts.ChainingValue(guts.ParentNode(*left, *right, &guts.IV, flags))
}

// hashGroup returns the (not yet compressed) BLAKE3 node of one group, b
// holding at most GroupSize bytes and counter the index of its first chunk.
// A full group is hashed in place with SIMD; a short one is copied.
func hashGroup(b []byte, counter uint64) guts.Node {
	switch {
	case len(b) == GroupSize:
		return guts.CompressBuffer((*[GroupSize]byte)(b), GroupSize, &guts.IV, counter, 0)
	case len(b) <= guts.ChunkSize:
		return guts.CompressChunk(b, &guts.IV, counter, 0)
	case len(b) > GroupSize:
		panic("verify: internal error: group longer than GroupSize")
	}
	return hashShortGroup(b, counter)
}

// groupBufs holds the buffers hashShortGroup copies a short group to.
var groupBufs = sync.Pool{New: func() any { return new([GroupSize]byte) }}

// hashShortGroup hashes a group of more than one chunk and less than
// GroupSize bytes, copied to a pooled buffer: a GroupSize array on the stack
// would make every hashGroup frame 16 KiB, and grow the stack of each
// goroutine that verifies a range.
func hashShortGroup(b []byte, counter uint64) guts.Node {
	buf := groupBufs.Get().(*[GroupSize]byte)
	defer groupBufs.Put(buf)
	n := copy(buf[:], b)
	clear(buf[n:])
	return guts.CompressBuffer(buf, len(b), &guts.IV, counter, 0)
}

// hashSubtree returns the (not yet compressed) node of the subtree whose
// bytes are b and whose first byte is at a group boundary, counter being the
// index of its first chunk. The caller applies guts.FlagRoot if the subtree
// is the whole tree. Subtrees of at least parallelMin bytes are split across
// up to par goroutines at their top levels.
//
// If pairs is not nil, it holds the subtree's parent pairs in pre-order, as
// a slice encoding carries them, and hashSubtree reports in ok whether each
// of them equals the pair it computes.
func hashSubtree(b []byte, counter uint64, pairs []byte, par int) (n guts.Node, ok bool) {
	if len(b) <= GroupSize {
		return hashGroup(b, counter), true
	}
	mid := split(uint64(len(b)))
	var lpairs, rpairs []byte
	if pairs != nil {
		lpairs = pairs[pairSize : pairSize*(mid/GroupSize)]
		rpairs = pairs[pairSize*(mid/GroupSize):]
	}
	var ln, rn guts.Node
	var lok, rok bool
	if par > 1 && len(b) >= parallelMin {
		ln, lok, rn, rok = hashHalves(b, mid, counter, lpairs, rpairs, par)
	} else {
		ln, lok = hashSubtree(b[:mid], counter, lpairs, 1)
		rn, rok = hashSubtree(b[mid:], counter+mid/guts.ChunkSize, rpairs, 1)
	}
	left, right := guts.ChainingValue(ln), guts.ChainingValue(rn)
	ok = lok && rok
	if pairs != nil {
		ok = ok && cvFromBytes(pairs[:32]) == left && cvFromBytes(pairs[32:pairSize]) == right
	}
	return guts.ParentNode(left, right, &guts.IV, 0), ok
}

// hashHalves hashes the two children of a node, split at mid, on two
// goroutines.
func hashHalves(b []byte, mid, counter uint64, lpairs, rpairs []byte, par int) (ln guts.Node, lok bool, rn guts.Node, rok bool) {
	var wg sync.WaitGroup
	wg.Go(func() { ln, lok = hashSubtree(b[:mid], counter, lpairs, par/2) })
	rn, rok = hashSubtree(b[mid:], counter+mid/guts.ChunkSize, rpairs, par-par/2)
	wg.Wait()
	return
}
