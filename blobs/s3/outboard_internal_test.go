package s3

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
)

// TestOutboardMatches: the outboard verify.Hasher writes matches its
// storage_id at every size; one flipped bit anywhere, another object's
// id, or another size of another shape does not.
func TestOutboardMatches(t *testing.T) {
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:], 5)
	rng := rand.NewChaCha8(seed)
	for _, size := range []int{0, 1, verify.GroupSize, verify.GroupSize + 1, 2 * verify.GroupSize, 3*verify.GroupSize + 7, 100 * verify.GroupSize, 1<<20 + 3} {
		data := make([]byte, size)
		rng.Read(data)
		var h verify.Hasher
		h.Write(data)
		id, _ := h.Sum()
		var ob bytes.Buffer
		if err := h.WriteOutboard(&ob); err != nil {
			t.Fatal(err)
		}
		if size <= verify.GroupSize {
			if outboardMatches(id, uint64(size), ob.Bytes()) {
				t.Fatalf("size %d: an empty outboard matched", size)
			}
			continue
		}
		if !outboardMatches(id, uint64(size), ob.Bytes()) {
			t.Fatalf("size %d: the Hasher's outboard does not match", size)
		}
		for i := 0; i < ob.Len(); i += max(1, ob.Len()/50) {
			bad := bytes.Clone(ob.Bytes())
			bad[i] ^= 1 << (i % 8)
			if outboardMatches(id, uint64(size), bad) {
				t.Fatalf("size %d: an outboard with byte %d flipped matched", size, i)
			}
		}
		if outboardMatches(storageid.Sum([]byte("other")), uint64(size), ob.Bytes()) {
			t.Fatalf("size %d: matched another id", size)
		}
		if outboardMatches(id, uint64(size)+verify.GroupSize, ob.Bytes()) {
			t.Fatalf("size %d: matched another shape", size)
		}
	}
}

// TestPairCache: chainedPairs keeps the pairs of the nodes a range cuts
// through, only those that chain to the storage_id (a flipped bit leaves
// the pair and those below it out); lookup then serves them and asks for
// the rest; forget and the bound drop them.
func TestPairCache(t *testing.T) {
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:], 6)
	rng := rand.NewChaCha8(seed)
	size := uint64(1000*verify.GroupSize + 77)
	data := make([]byte, size)
	rng.Read(data)
	var h verify.Hasher
	h.Write(data)
	id, _ := h.Sum()
	var buf bytes.Buffer
	if err := h.WriteOutboard(&buf); err != nil {
		t.Fatal(err)
	}
	ob := buf.Bytes()
	g0, g1 := uint64(301), uint64(377)
	full := &sparse{segs: []segment{{0, ob}}}
	got := chainedPairs(id, size, g0, g1, full)
	if len(got) == 0 {
		t.Fatal("no pairs chain")
	}
	for _, p := range got {
		if !bytes.Equal(p.pair[:], ob[p.off:p.off+pairSize]) {
			t.Fatalf("pair at %d: not the outboard's", p.off)
		}
	}
	// Each node cut through is on a path from the root: the range's ends.
	needed := neededPairs(size, g0, g1)
	for _, p := range got {
		found := false
		for _, r := range needed {
			found = found || (r.off <= p.off && p.off < r.off+r.n)
		}
		if !found {
			t.Fatalf("pair at %d: not needed by the range", p.off)
		}
	}
	// A flipped bit in the second pair kept leaves it and its subtree's out.
	bad := bytes.Clone(ob)
	bad[got[1].off+3] ^= 1
	if n := len(chainedPairs(id, size, g0, g1, &sparse{segs: []segment{{0, bad}}})); n >= len(got) || n < 1 {
		t.Fatalf("with a bad pair: %d pairs kept of %d", n, len(got))
	}
	if n := len(chainedPairs(storageid.Sum([]byte("other")), size, g0, g1, full)); n != 0 {
		t.Fatalf("another id: %d pairs kept", n)
	}

	var c pairCache
	k := obKey{id, size}
	c.add(k, got)
	missing, have := c.lookup(k, needed, 0)
	s := &sparse{segs: have}
	for _, r := range missing {
		s.segs = append(s.segs, segment{r.off, ob[r.off : r.off+r.n]})
	}
	sortSegs(s.segs)
	for _, r := range needed {
		p := make([]byte, r.n)
		if _, err := s.ReadAt(p, int64(r.off)); err != nil || !bytes.Equal(p, ob[r.off:r.off+r.n]) {
			t.Fatalf("run [%d,+%d): %v or wrong bytes", r.off, r.n, err)
		}
	}
	var askedFor uint64
	for _, r := range missing {
		askedFor += r.n
	}
	var all uint64
	for _, r := range needed {
		all += r.n
	}
	if askedFor != all-uint64(len(got))*pairSize {
		t.Fatalf("asked for %d bytes of %d, %d kept", askedFor, all, len(got)*pairSize)
	}
	c.forget(id)
	if missing, have := c.lookup(k, needed, 0); len(have) != 0 || len(missing) != len(coalesce(needed, 0)) {
		t.Fatal("forget kept pairs")
	}
	// The bound: the least recently used object goes.
	many := make([]pairAt, pairCacheMax/2+1)
	for i := range many {
		many[i].off = uint64(i) * pairSize
	}
	k2 := obKey{storageid.Sum([]byte("2")), size}
	c.add(k, many)
	c.add(k2, many)
	if c.n != len(many) || c.objs[k] != nil || c.objs[k2] == nil {
		t.Fatalf("after the bound: %d pairs, first object kept %v", c.n, c.objs[k] != nil)
	}
}

func sortSegs(s []segment) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j].off < s[j-1].off; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}
