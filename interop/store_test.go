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

// fileStore stores each blob as <dir>/<hex>.parquet so that DuckDB can read it.
type fileStore struct{ dir string }

func (s *fileStore) Create(ctx context.Context) (blobs.Pending, error) {
	return &filePending{s: s}, nil
}

type filePending struct {
	s    *fileStore
	buf  bytes.Buffer
	done bool
}

func (p *filePending) Write(b []byte) (int, error) { return p.buf.Write(b) }
func (p *filePending) Commit(ctx context.Context) (storageid.ID, error) {
	if p.done {
		return storageid.ID{}, errors.New("done")
	}
	p.done = true
	id := storageid.Sum(p.buf.Bytes())
	return id, os.WriteFile(filepath.Join(p.s.dir, id.String()+".parquet"), p.buf.Bytes(), 0o600)
}
func (p *filePending) Abort() error { p.done = true; return nil }
