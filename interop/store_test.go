package interop

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/storageid"
)

// fileStore is a minimal blobs.Store that keeps each blob as <dir>/<hex>.data,
// the layout of the directory store, so that DuckDB can read it by path.
// The suite reads objects only from here: DuckDB gets the path, the layout
// checks get the file's bytes.
type fileStore struct{ dir string }

var _ blobs.Store = (*fileStore)(nil)

// path returns where the store keeps blob id.
func (s *fileStore) path(id storageid.ID) string {
	return filepath.Join(s.dir, id.String()+".data")
}

func (s *fileStore) Create(ctx context.Context) (blobs.Pending, error) {
	return &filePending{s: s}, nil
}

type filePending struct {
	s    *fileStore
	buf  bytes.Buffer
	done bool
}

func (p *filePending) Write(b []byte) (int, error) {
	if p.done {
		return 0, errors.New("fileStore: write after commit or abort")
	}
	return p.buf.Write(b)
}

func (p *filePending) Commit(ctx context.Context) (storageid.ID, error) {
	if p.done {
		return storageid.ID{}, errors.New("fileStore: commit after commit or abort")
	}
	p.done = true
	id := storageid.Sum(p.buf.Bytes())
	return id, os.WriteFile(p.s.path(id), p.buf.Bytes(), 0o600)
}

func (p *filePending) Abort() error {
	p.done = true
	p.buf.Reset()
	return nil
}
