package reader_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
)

// memStore holds blobs in memory with their outboards; it is a blobs.Store
// and a verify.Source, and counts the bytes its slices carry.
type memStore struct {
	mu      sync.Mutex
	data    map[storageid.ID][]byte
	ob      map[storageid.ID][]byte
	fetched atomic.Int64
	slices  atomic.Int64
}

func newMemStore() *memStore {
	return &memStore{data: map[storageid.ID][]byte{}, ob: map[storageid.ID][]byte{}}
}

func (s *memStore) Create(ctx context.Context) (blobs.Pending, error) {
	return &memPending{s: s}, nil
}

func (s *memStore) put(b []byte) storageid.ID {
	var h verify.Hasher
	h.Write(b)
	id, _ := h.Sum()
	var ob bytes.Buffer
	h.WriteOutboard(&ob)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data[id] = b
	s.ob[id] = ob.Bytes()
	return id
}

// putAs stores data under id with the given outboard, whatever their hash:
// untrusted storage holding damaged bytes.
func (s *memStore) putAs(id storageid.ID, data, ob []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data[id] = data
	s.ob[id] = ob
}

func (s *memStore) outboard(id storageid.ID) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ob[id]
}

func errNotFound() error { return blobs.ErrNotFound }

// bytes returns the stored bytes of id, for tests that tamper with them.
func (s *memStore) bytes(id storageid.ID) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.data[id]
}

func (s *memStore) Slice(ctx context.Context, id storageid.ID, off, n uint64) (io.ReadCloser, error) {
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
	s.slices.Add(1)
	return io.NopCloser(countReader{r, &s.fetched}), nil
}

type countReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

type memPending struct {
	s    *memStore
	buf  bytes.Buffer
	done bool
}

func (p *memPending) Write(b []byte) (int, error) { return p.buf.Write(b) }
func (p *memPending) Commit(ctx context.Context) (storageid.ID, error) {
	if p.done {
		return storageid.ID{}, errors.New("done")
	}
	p.done = true
	return p.s.put(bytes.Clone(p.buf.Bytes())), nil
}
func (p *memPending) Abort() error { p.done = true; return nil }

// keys is a map KeyResolver.
type keys map[storageid.ID]pme.DEK

func (k keys) ResolveDEK(ctx context.Context, id storageid.ID) (pme.DEK, error) {
	d, ok := k[id]
	if !ok {
		return pme.DEK{}, fmt.Errorf("%w: %s", reader.ErrNoKey, id)
	}
	return d, nil
}
