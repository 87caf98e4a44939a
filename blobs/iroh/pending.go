//go:build iroh

package iroh

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/storageid"
)

// Create begins a new object, staged in a temporary file in the store's
// staging directory and hashed as it is written. Commit imports the file into
// iroh-blobs (copy mode) and fails with ErrHashMismatch unless iroh-blobs'
// hash equals the storage_id computed here over the same bytes.
func (s *Store) Create(ctx context.Context) (blobs.Pending, error) {
	if _, err := s.acquire(ctx); err != nil {
		return nil, err
	}
	defer s.release()
	f, err := os.CreateTemp(filepath.Join(s.dir, stagingDir), "pending-*")
	if err != nil {
		return nil, fmt.Errorf("iroh: staging: %w", err)
	}
	return &pending{s: s, f: f, h: newHasher(), buf: make([]byte, 0, pendingBuf)}, nil
}

// pendingBuf is the size of the writes a pending object makes to its file and
// hasher: large writes let BLAKE3 hash many chunks in parallel.
const pendingBuf = 1 << 20

type pending struct {
	s   *Store
	mu  sync.Mutex
	f   *os.File // nil once committed or aborted
	h   *hasher
	buf []byte
	err error // sticky
}

func (p *pending) flush() error {
	if len(p.buf) == 0 {
		return nil
	}
	p.h.Write(p.buf)
	if _, err := p.f.Write(p.buf); err != nil {
		return fmt.Errorf("iroh: staging: %w", err)
	}
	p.buf = p.buf[:0]
	return nil
}

func (p *pending) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.f == nil {
		return 0, fmt.Errorf("%w: iroh: write after Commit or Abort", blobs.ErrClosed)
	}
	if p.err != nil {
		return 0, p.err
	}
	n := 0
	for len(b) > 0 {
		k := copy(p.buf[len(p.buf):cap(p.buf)], b)
		p.buf = p.buf[:len(p.buf)+k]
		b = b[k:]
		n += k
		if len(p.buf) == cap(p.buf) {
			if err := p.flush(); err != nil {
				p.err = err
				return n, err
			}
		}
	}
	return n, nil
}

func (p *pending) Commit(ctx context.Context) (storageid.ID, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.f == nil {
		return storageid.ID{}, fmt.Errorf("%w: iroh: Commit after Commit or Abort", blobs.ErrClosed)
	}
	defer p.discard()
	if p.err != nil {
		return storageid.ID{}, p.err
	}
	if err := p.flush(); err != nil {
		return storageid.ID{}, err
	}
	if err := p.f.Close(); err != nil {
		return storageid.ID{}, fmt.Errorf("iroh: staging: %w", err)
	}
	want := p.h.Sum()
	id, err := p.s.importPath(ctx, p.f.Name(), tagFor(want), &want)
	if err != nil {
		return storageid.ID{}, err
	}
	return id, nil
}

// discard closes and removes the staged file.
func (p *pending) discard() {
	if p.f == nil {
		return
	}
	p.f.Close()
	os.Remove(p.f.Name())
	p.f = nil
	p.buf = nil
}

func (p *pending) Abort() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.discard()
	return nil
}
