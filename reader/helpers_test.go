package reader_test

import (
	"context"
	"fmt"

	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/internal/memstore"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
)

// memStore is internal/memstore's in-memory store (a blobs.Store and a
// verify.Source that counts the bytes and slices it serves), under the
// names these tests use.
type memStore struct{ *memstore.Store }

func newMemStore() *memStore { return &memStore{memstore.New()} }

func (s *memStore) put(b []byte) storageid.ID { return s.Put(b) }

// putAs stores data under id with the given outboard, whatever their hash:
// untrusted storage holding damaged bytes.
func (s *memStore) putAs(id storageid.ID, data, ob []byte) { s.PutAs(id, data, ob) }

func (s *memStore) outboard(id storageid.ID) []byte { return s.OutboardOf(id) }

// bytes returns the stored bytes of id, for tests that tamper with them.
func (s *memStore) bytes(id storageid.ID) []byte { return s.Bytes(id) }

func errNotFound() error { return blobs.ErrNotFound }

// keys is a map KeyResolver.
type keys map[storageid.ID]pme.DEK

func (k keys) ResolveDEK(ctx context.Context, id storageid.ID) (pme.DEK, error) {
	d, ok := k[id]
	if !ok {
		return pme.DEK{}, fmt.Errorf("%w: %s", reader.ErrNoKey, id)
	}
	return d, nil
}
