// Package memstore is an in-memory blob store for tests: a blobs.Store and
// a verify.Source that keeps each object's bytes and its outboard (SOP-PME-1
// Sections 11.7 and 11.10), and lets a test hold damaged bytes under an
// object's storage_id, as untrusted storage could.
package memstore

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
)

// A Store holds blobs in memory. It is safe for concurrent use.
type Store struct {
	mu   sync.Mutex
	data map[storageid.ID][]byte
	ob   map[storageid.ID][]byte

	// Fetched and Slices count the bytes and the slices Slice has served.
	Fetched, Slices atomic.Int64
}

var (
	_ blobs.Store   = (*Store)(nil)
	_ verify.Source = (*Store)(nil)
)

// New returns an empty Store.
func New() *Store {
	return &Store{data: map[storageid.ID][]byte{}, ob: map[storageid.ID][]byte{}}
}

// Put stores b (not copied) under its storage_id and returns it.
func (s *Store) Put(b []byte) storageid.ID {
	id, ob := Outboard(b)
	s.PutAs(id, b, ob)
	return id
}

// Outboard returns the storage_id of b and its pre-order outboard.
func Outboard(b []byte) (storageid.ID, []byte) {
	var h verify.Hasher
	h.Write(b)
	id, _ := h.Sum()
	var ob bytes.Buffer
	h.WriteOutboard(&ob)
	return id, ob.Bytes()
}

// PutAs stores data under id with outboard ob, whatever their hash.
func (s *Store) PutAs(id storageid.ID, data, ob []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data[id] = data
	s.ob[id] = ob
}

// Bytes returns the bytes held for id (not copied), or nil.
func (s *Store) Bytes(id storageid.ID) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.data[id]
}

// OutboardOf returns the outboard held for id (not copied), or nil.
func (s *Store) OutboardOf(id storageid.ID) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ob[id]
}

// Slice implements verify.Source.
func (s *Store) Slice(ctx context.Context, id storageid.ID, off, n uint64) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
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
	s.Slices.Add(1)
	return io.NopCloser(counter{r, &s.Fetched}), nil
}

type counter struct {
	r io.Reader
	n *atomic.Int64
}

func (c counter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// Create implements blobs.Store.
func (s *Store) Create(ctx context.Context) (blobs.Pending, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return &pending{s: s}, nil
}

type pending struct {
	s    *Store
	buf  bytes.Buffer
	done bool
}

func (p *pending) Write(b []byte) (int, error) {
	if p.done {
		return 0, blobs.ErrClosed
	}
	return p.buf.Write(b)
}

func (p *pending) Commit(ctx context.Context) (storageid.ID, error) {
	if p.done {
		return storageid.ID{}, blobs.ErrClosed
	}
	p.done = true
	if err := ctx.Err(); err != nil {
		return storageid.ID{}, err
	}
	return p.s.Put(bytes.Clone(p.buf.Bytes())), nil
}

func (p *pending) Abort() error { p.done = true; return nil }
