package interop

import (
	"path/filepath"
	"testing"

	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/storageid"
)

// store is the library's directory store, blobs.Dir, which keeps each
// object as <dir>/<hex storage_id>.data. The suite reads objects only from
// there: DuckDB gets the path, the layout checks get the file's bytes.
type store struct {
	*blobs.Dir
	dir string
}

func newStore(t *testing.T) *store {
	t.Helper()
	dir := t.TempDir()
	d, err := blobs.CreateDir(dir)
	if err != nil {
		t.Fatalf("blobs.CreateDir: %v", err)
	}
	return &store{Dir: d, dir: dir}
}

// path returns the file in which the store keeps object id.
func (s *store) path(id storageid.ID) string {
	return filepath.Join(s.dir, id.String()+".data")
}
