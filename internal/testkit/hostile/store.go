package hostile

import (
	"context"
	"fmt"
	"sync"

	"github.com/sovm/sop-pme/internal/testkit/memstore"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
)

// A Store is an in-memory blob store (memstore) that also resolves the DEK
// put with each object: a verify.Source and a reader.KeyResolver, for
// reading hostile objects once they are imported.
type Store struct {
	*memstore.Store
	mu   sync.Mutex
	keys map[storageid.ID]pme.DEK
}

// NewStore returns an empty Store.
func NewStore() *Store {
	return &Store{Store: memstore.New(), keys: map[storageid.ID]pme.DEK{}}
}

// Put imports obj and records its DEK; it returns obj's storage_id.
func (s *Store) Put(obj []byte, dek pme.DEK) storageid.ID {
	id := s.Store.Put(obj)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys[id] = dek
	return id
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
