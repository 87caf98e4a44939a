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
