package writer_test

import (
	"bytes"
	"context"
	"errors"
	"sync"

	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/storageid"
)

// memStore is a Store that keeps blobs in memory, for tests that need the
// exact bytes of an object.
type memStore struct {
	mu    sync.Mutex
	blobs map[storageid.ID][]byte
}

func newMemStore() *memStore { return &memStore{blobs: make(map[storageid.ID][]byte)} }

func (s *memStore) Create(ctx context.Context) (blobs.Pending, error) {
	return &memPending{s: s}, nil
}

func (s *memStore) get(id storageid.ID) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.blobs[id]
}

func (s *memStore) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.blobs)
}

type memPending struct {
	s    *memStore
	buf  bytes.Buffer
	done bool
}

func (p *memPending) Write(b []byte) (int, error) {
	if p.done {
		return 0, errors.New("memPending: done")
	}
	return p.buf.Write(b)
}

func (p *memPending) Commit(ctx context.Context) (storageid.ID, error) {
	if p.done {
		return storageid.ID{}, errors.New("memPending: done")
	}
	p.done = true
	id := storageid.Sum(p.buf.Bytes())
	p.s.mu.Lock()
	p.s.blobs[id] = bytes.Clone(p.buf.Bytes())
	p.s.mu.Unlock()
	return id, nil
}

func (p *memPending) Abort() error {
	p.done = true
	p.buf.Reset()
	return nil
}
