package verify

import (
	"bufio"
	"io"
	"runtime"
	"slices"
	"sync"

	"lukechampine.com/blake3/guts"

	"github.com/sovm/sop-pme/storageid"
)

// A Hasher computes, in one pass over an object's bytes, its storage_id (the
// BLAKE3 root hash, SOP-PME-1 Section 11.7) and its pre-order BAO outboard
// with 16 KiB groups, the proof material a store keeps beside the bytes to
// serve verified slices (Section 11.10).
//
// Each full group is hashed as it arrives, in place when the caller's writes
// hold whole groups, and only its 32-byte chaining value is kept (1/512 of the
// data); the parent nodes are computed by Sum and WriteOutboard.
//
// The zero value is ready to use. A Hasher is not safe for concurrent use; it
// may itself use several goroutines to hash large writes.
type Hasher struct {
	cvs    [][8]uint32 // chaining values of the full groups written so far
	first  guts.Node   // node of group 0 once it is full: the root of a one-group blob
	buflen int
	buf    [GroupSize]byte // the partial group after the last full one
}

// Write adds p to the object. It never returns an error.
func (h *Hasher) Write(p []byte) (int, error) {
	n := len(p)
	if h.buflen > 0 {
		k := copy(h.buf[h.buflen:], p)
		h.buflen += k
		p = p[k:]
		if h.buflen < GroupSize {
			return n, nil
		}
		h.addGroups(h.buf[:])
		h.buflen = 0
	}
	if full := len(p) / GroupSize * GroupSize; full > 0 {
		h.addGroups(p[:full])
		p = p[full:]
	}
	h.buflen = copy(h.buf[:], p)
	return n, nil
}

// addGroups hashes the whole groups in b, in parallel when there are many.
func (h *Hasher) addGroups(b []byte) {
	i0 := len(h.cvs)
	k := len(b) / GroupSize
	h.cvs = slices.Grow(h.cvs, k)[:i0+k]
	cvs := h.cvs[i0:]
	if i0 == 0 {
		h.first = hashGroup(b[:GroupSize], 0)
		cvs[0] = guts.ChainingValue(h.first)
	}
	hashRange := func(lo, hi int) {
		for j := lo; j < hi; j++ {
			if i0+j == 0 {
				continue
			}
			g := b[j*GroupSize : (j+1)*GroupSize]
			cvs[j] = guts.ChainingValue(hashGroup(g, uint64(i0+j)*chunksPerGroup))
		}
	}
	par := runtime.GOMAXPROCS(0)
	if par < 2 || len(b) < parallelMin {
		hashRange(0, k)
		return
	}
	var wg sync.WaitGroup
	for w := range par {
		lo, hi := k*w/par, k*(w+1)/par
		if w == par-1 {
			hashRange(lo, hi)
		} else {
			wg.Go(func() { hashRange(lo, hi) })
		}
	}
	wg.Wait()
}

// Size returns the number of bytes written so far.
func (h *Hasher) Size() uint64 {
	return uint64(len(h.cvs))*GroupSize + uint64(h.buflen)
}

// numLeaves returns the number of groups of the object written so far.
func (h *Hasher) numLeaves() int {
	n := len(h.cvs)
	if h.buflen > 0 || n == 0 {
		n++
	}
	return n
}

// leafCVs returns an accessor for the chaining values of all groups,
// including the trailing partial one.
func (h *Hasher) leafCVs() func(i int) [8]uint32 {
	var last [8]uint32
	if len(h.cvs) < h.numLeaves() {
		last = guts.ChainingValue(hashGroup(h.buf[:h.buflen], uint64(len(h.cvs))*chunksPerGroup))
	}
	return func(i int) [8]uint32 {
		if i < len(h.cvs) {
			return h.cvs[i]
		}
		return last
	}
}

// Sum returns the storage_id of the bytes written so far and their number.
// It does not change the Hasher's state: more bytes may be written after it.
func (h *Hasher) Sum() (root storageid.ID, size uint64) {
	var cv [8]uint32
	switch n := h.numLeaves(); {
	case n == 1 && len(h.cvs) == 1:
		node := h.first
		node.Flags |= guts.FlagRoot
		cv = guts.ChainingValue(node)
	case n == 1:
		node := hashGroup(h.buf[:h.buflen], 0)
		node.Flags |= guts.FlagRoot
		cv = guts.ChainingValue(node)
	default:
		leaf := h.leafCVs()
		var rec func(lo, hi int, flags uint32) [8]uint32
		rec = func(lo, hi int, flags uint32) [8]uint32 {
			if hi-lo == 1 {
				return leaf(lo)
			}
			mid := lo + int(split(uint64(hi-lo)))
			l, r := rec(lo, mid, 0), rec(mid, hi, 0)
			return parentCV(&l, &r, flags)
		}
		cv = rec(0, n, guts.FlagRoot)
	}
	putCV(root[:], &cv)
	return root, h.Size()
}

// WriteOutboard writes the pre-order outboard of the bytes written so far to
// w: the 64-byte pair (left CV ‖ right CV) of every parent node in pre-order,
// OutboardSize(h.Size()) bytes, with no size prefix. This is byte for byte the
// .obao4 file of iroh-blobs' FsStore, and lukechampine.com/blake3/bao's
// outboard encoding with group 4 without its first 8 bytes.
//
// It computes the parent nodes, keeping them in memory meanwhile (as many
// again as the group chaining values), and does not change the Hasher's
// state.
func (h *Hasher) WriteOutboard(w io.Writer) error {
	n := h.numLeaves()
	if n == 1 {
		return nil
	}
	leaf := h.leafCVs()

	// levels[k-1] holds level k of the tree bottom-up: node i of level k is
	// the parent of nodes 2i and 2i+1 of level k-1, or node 2i itself where
	// 2i+1 does not exist. This is the left-heavy tree of split.
	var levels [][][8]uint32
	lens := []int{n}
	for l := n; l > 1; {
		l = (l + 1) / 2
		lens = append(lens, l)
	}
	store := make([][8]uint32, 0, n+len(lens))
	for k := 1; k < len(lens); k++ {
		level := store[len(store) : len(store)+lens[k]]
		store = store[:len(store)+lens[k]]
		for i := range level {
			l := levelCV(levels, leaf, k-1, 2*i)
			if 2*i+1 < lens[k-1] {
				r := levelCV(levels, leaf, k-1, 2*i+1)
				level[i] = parentCV(&l, &r, 0)
			} else {
				level[i] = l
			}
		}
		levels = append(levels, level)
	}

	bw := bufio.NewWriterSize(w, 32<<10)
	var pair [pairSize]byte
	var visit func(k, i int)
	visit = func(k, i int) {
		for k > 0 && 2*i+1 >= lens[k-1] {
			k, i = k-1, 2*i
		}
		if k == 0 {
			return
		}
		l, r := levelCV(levels, leaf, k-1, 2*i), levelCV(levels, leaf, k-1, 2*i+1)
		putCV(pair[:32], &l)
		putCV(pair[32:], &r)
		bw.Write(pair[:]) // errors are sticky in bw and reported by Flush
		visit(k-1, 2*i)
		visit(k-1, 2*i+1)
	}
	visit(len(lens)-1, 0)
	return bw.Flush()
}

// levelCV returns the chaining value of node i at level k (0 being the
// groups).
func levelCV(levels [][][8]uint32, leaf func(int) [8]uint32, k, i int) [8]uint32 {
	if k == 0 {
		return leaf(i)
	}
	return levels[k-1][i]
}
