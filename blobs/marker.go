package blobs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/sovm/sop-pme/storageid"
)

// readMarker reports whether path is a directory holding a valid marker
// file. A directory without one is not an error; a missing path, a path
// that is not a directory, and a marker of an unknown layout are, matching
// ErrNoStore.
func readMarker(path string) (bool, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("%w: %w", ErrNoStore, err)
	} else if err != nil {
		return false, fmt.Errorf("blobs: opening a store: %w", err)
	}
	if !fi.IsDir() {
		return false, fmt.Errorf("%w: %s is not a directory", ErrNoStore, path)
	}
	f, _, err := openRegular(filepath.Join(path, markerName))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	} else if errors.Is(err, ErrNotRegular) {
		return false, fmt.Errorf("%w: %w", ErrNoStore, err)
	} else if err != nil {
		return false, fmt.Errorf("blobs: opening a store: %w", err)
	}
	defer f.Close()
	b := make([]byte, len(markerLine))
	if _, err := io.ReadFull(f, b); err != nil || string(b) != markerLine {
		return false, fmt.Errorf("%w: %s: %s does not hold %q: an unknown layout", ErrNoStore, path, markerName, strings.TrimSpace(markerLine))
	}
	return true, nil
}

// scanStore reports whether the directory holds an object file, and
// whether it holds any file other than object files and this package's
// temporary and lock files. With firstObject it stops at the first object
// file.
func scanStore(path string, firstObject bool) (objects, others bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return false, false, fmt.Errorf("blobs: opening a store: %w", err)
	}
	defer f.Close()
	for {
		entries, err := f.ReadDir(256)
		for _, e := range entries {
			name := e.Name()
			switch {
			case isObjectName(name, dataExt) || isObjectName(name, outboardExt):
				objects = true
				if firstObject {
					return true, others, nil
				}
			case strings.HasPrefix(name, tempPrefix), strings.HasPrefix(name, objectLockPrefix):
			case name == markerName:
				// Another process's CreateDir marked the directory since
				// this one looked: it is a store.
			default:
				others = true
			}
		}
		if err == io.EOF {
			return objects, others, nil
		}
		if err != nil {
			return false, false, fmt.Errorf("blobs: reading a store: %w", err)
		}
	}
}

// parseObjectName returns the storage_id that names the object file name,
// <storage_id in 64 lowercase hex digits><ext>.
func parseObjectName(name, ext string) (storageid.ID, bool) {
	stem, ok := strings.CutSuffix(name, ext)
	if !ok || len(stem) != 2*storageid.Size {
		return storageid.ID{}, false
	}
	id, err := storageid.Parse(stem)
	if err != nil || id.String() != stem {
		return storageid.ID{}, false
	}
	return id, true
}

func isObjectName(name, ext string) bool {
	_, ok := parseObjectName(name, ext)
	return ok
}

// writeMarker writes the marker file atomically: a temporary file, synced,
// renamed, and the directory synced.
func (d *Dir) writeMarker() (err error) {
	token, owner, err := d.newOwner()
	if err != nil {
		return fmt.Errorf("blobs: marking the store: %w", err)
	}
	tmp := d.tempPath(token, markerExt)
	defer func() {
		if err != nil {
			os.Remove(tmp)
			err = fmt.Errorf("blobs: marking the store: %w", err)
		}
		owner.release()
	}()
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(markerLine)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(d.path, markerName)); err != nil {
		return err
	}
	return syncDir(d.path)
}
