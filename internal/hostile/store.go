package hostile

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
)

// A Store holds objects in memory with their BAO outboards: a verify.Source
// that serves verified slices, as a blob store does once the bytes are
// imported. It also resolves the DEKs put with the objects.
type Store struct {
	mu   sync.Mutex
	data map[storageid.ID][]byte
	ob   map[storageid.ID][]byte
	keys map[storageid.ID]pme.DEK
}

// NewStore returns an empty Store.
func NewStore() *Store {
	return &Store{data: map[storageid.ID][]byte{}, ob: map[storageid.ID][]byte{}, keys: map[storageid.ID]pme.DEK{}}
}

// Put imports obj and records its DEK; it returns obj's storage_id.
func (s *Store) Put(obj []byte, dek pme.DEK) storageid.ID {
	var h verify.Hasher
	h.Write(obj)
	id, _ := h.Sum()
	var ob bytes.Buffer
	h.WriteOutboard(&ob)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data[id], s.ob[id], s.keys[id] = obj, ob.Bytes(), dek
	return id
}

// Slice implements verify.Source.
func (s *Store) Slice(ctx context.Context, id storageid.ID, off, n uint64) (io.ReadCloser, error) {
	s.mu.Lock()
	d, ok := s.data[id]
	ob := s.ob[id]
	s.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%w: %s", blobs.ErrNotFound, id)
	}
	r, err := verify.ExtractSlice(bytes.NewReader(d), bytes.NewReader(ob), uint64(len(d)), off, n)
	if err != nil {
		return nil, err
	}
	return io.NopCloser(r), nil
}

// ResolveDEK implements reader.KeyResolver.
func (s *Store) ResolveDEK(ctx context.Context, id storageid.ID) (pme.DEK, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.keys[id]
	if !ok {
		return pme.DEK{}, fmt.Errorf("%w: %s", reader.ErrNoKey, id)
	}
	return k, nil
}
