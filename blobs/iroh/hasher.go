//go:build iroh

package iroh

import (
	"lukechampine.com/blake3"

	"github.com/sovm/sop-pme/storageid"
)

// hasher computes a storage_id incrementally, as storageid.SumReader does.
type hasher struct{ h *blake3.Hasher }

func newHasher() *hasher { return &hasher{h: blake3.New(storageid.Size, nil)} }

func (h *hasher) Write(b []byte) { h.h.Write(b) }

func (h *hasher) Sum() storageid.ID {
	var id storageid.ID
	h.h.Sum(id[:0])
	return id
}
