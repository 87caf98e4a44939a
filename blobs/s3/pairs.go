package s3

import (
	"io"
	"sync"

	"lukechampine.com/blake3/guts"

	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
)

// pairCacheMax bounds the parent pairs a Store keeps of large outboards
// (pairCache), in all objects: 32768 pairs, 2 MiB of pairs (about 3 MiB
// with the maps' keys and overhead).
const pairCacheMax = 1 << 15

// A pairCache keeps, per Store, parent pairs of outboards larger than
// wholeOutboardMax that slices fetched: the pairs of the nodes a slice's
// range cuts through (not those of the subtrees it covers whole), which
// are on the paths from the root of every range near it. Every slice of
// an object needs the top ones; with them kept, a slice fetches only the
// pairs it has not seen, about one run (its subtree's pairs, contiguous
// in pre-order) and the few pairs of its range's ends.
//
// Caching cannot weaken anything. A pair is kept only if it chains to the
// storage_id (chainedPairs: the root pair hashes, as the root, to the id,
// and every other pair to the chaining value its parent's pair, itself
// kept, holds for it), so a pair the server got wrong is never kept and
// cannot fail later slices; and the kept pairs are not trusted anyway:
// verify.ExtractSlice checks every pair a slice uses, cached or fetched,
// against the storage_id, in every slice. Delete forgets an object's
// pairs. Objects are evicted least recently used first.
type pairCache struct {
	mu   sync.Mutex
	objs map[obKey]*objPairs
	n    int    // pairs kept, in all objects
	tick uint64 // the clock of objPairs.used
}

type objPairs struct {
	m    map[uint64][pairSize]byte // by offset in the outboard
	used uint64
}

// lookup splits runs (in increasing order, of whole pairs) into the runs
// of pairs not kept for k, coalesced through gaps of at most gap bytes,
// and the segments of kept pairs that lie outside those runs.
func (c *pairCache) lookup(k obKey, runs []span, gap uint64) (missing []span, have []segment) {
	c.mu.Lock()
	defer c.mu.Unlock()
	o := c.objs[k]
	if o == nil {
		return coalesce(runs, gap), nil
	}
	c.tick++
	o.used = c.tick
	var miss []span
	var kept []uint64
	for _, r := range runs {
		for off := r.off; off < r.off+r.n; off += pairSize {
			if _, ok := o.m[off]; ok {
				kept = append(kept, off)
				continue
			}
			if k := len(miss); k > 0 && miss[k-1].off+miss[k-1].n == off {
				miss[k-1].n += pairSize
			} else {
				miss = append(miss, span{off, pairSize})
			}
		}
	}
	missing = coalesce(miss, gap)
	i := 0
	for _, off := range kept {
		for i < len(missing) && missing[i].off+missing[i].n <= off {
			i++
		}
		if i < len(missing) && missing[i].off <= off {
			continue // read through by a fetched run
		}
		p := o.m[off]
		if k := len(have); k > 0 && have[k-1].off+uint64(len(have[k-1].b)) == off {
			have[k-1].b = append(have[k-1].b, p[:]...)
		} else {
			have = append(have, segment{off, append([]byte(nil), p[:]...)})
		}
	}
	return missing, have
}

// add keeps pairs for k, evicting the objects least recently used while
// more than pairCacheMax pairs are kept.
func (c *pairCache) add(k obKey, pairs []pairAt) {
	if len(pairs) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.objs == nil {
		c.objs = make(map[obKey]*objPairs)
	}
	o := c.objs[k]
	if o == nil {
		o = &objPairs{m: make(map[uint64][pairSize]byte)}
		c.objs[k] = o
	}
	c.tick++
	o.used = c.tick
	for _, p := range pairs {
		if _, ok := o.m[p.off]; !ok {
			o.m[p.off] = p.pair
			c.n++
		}
	}
	for c.n > pairCacheMax {
		var lru obKey
		var min uint64 = 1<<64 - 1
		for k2, o2 := range c.objs {
			if o2.used < min {
				lru, min = k2, o2.used
			}
		}
		c.n -= len(c.objs[lru].m)
		delete(c.objs, lru)
	}
}

func (c *pairCache) forget(id storageid.ID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, o := range c.objs {
		if k.id == id {
			c.n -= len(o.m)
			delete(c.objs, k)
		}
	}
}

// A pairAt is a parent pair and its offset in the outboard.
type pairAt struct {
	off  uint64
	pair [pairSize]byte
}

// chainedPairs returns the pairs, read from ob, of the nodes of the tree
// of a blob of size bytes whose root is id that the groups [g0, g1) cut
// through (that hold some of those groups and some others), each of which
// chains to id: the root pair hashes, as the root, to id, and every other
// pair to the chaining value its parent's pair, itself returned, holds for
// it. A pair that cannot be read or does not chain is left out, with the
// pairs below it.
func chainedPairs(id storageid.ID, size, g0, g1 uint64, ob io.ReaderAt) []pairAt {
	type frame struct {
		start, length, obOff uint64
		want                 [8]uint32
		flags                uint32
	}
	var out []pairAt
	stack := []frame{{0, size, 0, cvOf(id[:]), guts.FlagRoot}}
	for len(stack) > 0 {
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		first := f.start / verify.GroupSize
		groups := numGroups(f.length)
		if f.length <= verify.GroupSize || first >= g1 || first+groups <= g0 || (g0 <= first && first+groups <= g1) {
			continue
		}
		var p pairAt
		p.off = f.obOff
		if n, _ := ob.ReadAt(p.pair[:], int64(f.obOff)); n != pairSize {
			continue
		}
		l, r := cvOf(p.pair[:32]), cvOf(p.pair[32:])
		if guts.ChainingValue(guts.ParentNode(l, r, &guts.IV, f.flags)) != f.want {
			continue
		}
		out = append(out, p)
		mid := split(f.length)
		stack = append(stack,
			frame{f.start + mid, f.length - mid, f.obOff + pairSize*(mid/verify.GroupSize), r, 0},
			frame{f.start, mid, f.obOff + pairSize, l, 0})
	}
	return out
}
