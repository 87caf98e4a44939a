//go:build !linux

package blobs

import (
	"errors"
	"os"
)

// startWriteback does nothing where sync_file_range does not exist: the
// commit's fsync then writes the whole file.
func startWriteback(f *os.File, off, n int64) error {
	return errors.ErrUnsupported
}
