package verify_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"

	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
)

// memStore is a Source over objects held in memory with their outboards.
type memStore map[storageid.ID][2][]byte

func (m memStore) Slice(ctx context.Context, id storageid.ID, off, n uint64) (io.ReadCloser, error) {
	obj, ok := m[id]
	if !ok {
		return nil, fmt.Errorf("no object %s", id)
	}
	r, err := verify.ExtractSlice(bytes.NewReader(obj[0]), bytes.NewReader(obj[1]), uint64(len(obj[0])), off, n)
	return io.NopCloser(r), err
}

func Example() {
	// Write side: one pass computes the storage_id and the outboard.
	object := bytes.Repeat([]byte("ciphertext "), 10000)
	var h verify.Hasher
	h.Write(object)
	id, size := h.Sum()
	var outboard bytes.Buffer
	if err := h.WriteOutboard(&outboard); err != nil {
		log.Fatal(err)
	}
	store := memStore{id: {object, outboard.Bytes()}}

	// Read side: the size is proven first, then every range is verified.
	r, err := verify.NewReader(context.Background(), store, id)
	if err != nil {
		log.Fatal(err)
	}
	p := make([]byte, 10)
	if _, err := r.ReadAt(p, 49995); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d %d %q\n", size, r.Size(), p)

	// Only a full verification makes the object count as verified.
	fmt.Println(verify.Verify(context.Background(), store, id))
	// Output:
	// 110000 110000 "ciphertext"
	// <nil>
}
