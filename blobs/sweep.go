package blobs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/sovm/sop-pme/storageid"
)

// Sweep removes what processes that finished or died left in the store,
// and nothing that belongs to a live process (see [Dir]):
//
//   - the temporary files of an import (or of the marker file) whose lock
//     file is free or gone: its owner committed, aborted or died;
//   - an outboard whose data file is missing, under the object's lock: a
//     Commit killed between its two renames, or a Delete killed between its
//     two removals, left it. A live Commit or Delete holds the object's
//     lock, and Sweep then leaves the outboard alone;
//   - lock files that nobody holds.
//
// Sweep never waits for a lock: what is busy is left for a later sweep. A
// read-write OpenDir runs it; a long-lived process may run it from time to
// time. In a read-only Dir it fails with an error matching ErrReadOnly.
func (d *Dir) Sweep(ctx context.Context) error {
	if d.readOnly {
		return fmt.Errorf("blobs: sweep: %w", ErrReadOnly)
	}
	entries, err := os.ReadDir(d.path)
	if err != nil {
		return fmt.Errorf("blobs: sweep: %w", err)
	}
	names := make(map[string]bool, len(entries))
	temps := make(map[string][]string) // by token
	for _, e := range entries {
		name := e.Name()
		names[name] = true
		if rest, ok := strings.CutPrefix(name, tempPrefix); ok {
			token, _, _ := strings.Cut(rest, ".")
			temps[token] = append(temps[token], name)
		}
	}
	var errs []error
	for token, files := range temps {
		if err := ctx.Err(); err != nil {
			return err
		}
		errs = append(errs, d.sweepImport(token, files))
	}
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		name := e.Name()
		if strings.HasPrefix(name, objectLockPrefix) {
			if l, ok, err := tryLockFile(filepath.Join(d.path, name), false); ok {
				errs = append(errs, l.release())
			} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		} else if id, ok := parseObjectName(name, outboardExt); ok && !names[id.String()+dataExt] {
			errs = append(errs, d.sweepOutboard(id))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("blobs: sweep: %w", err)
	}
	return nil
}

// sweepImport removes the temporary files of token, named files, if their
// owner is gone: its lock file is free, or missing (the owner creates it
// before them and removes it after them).
func (d *Dir) sweepImport(token string, files []string) error {
	lockName := tempPrefix + token + lockExt
	l, ok, err := tryLockFile(filepath.Join(d.path, lockName), false)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	case !ok:
		return nil // a live owner
	}
	var errs []error
	for _, name := range files {
		if name == lockName {
			continue
		}
		if err := os.Remove(filepath.Join(d.path, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if l != nil {
		if len(errs) > 0 {
			// Keep the lock file so that a later sweep finds the rest.
			l.fl.Unlock()
		} else {
			errs = append(errs, l.release())
		}
	}
	return errors.Join(errs...)
}

// sweepOutboard removes the outboard of id if, under the object's lock, its
// data file is still missing.
func (d *Dir) sweepOutboard(id storageid.ID) error {
	l, ok, err := tryLockFile(d.objectLockPath(id), true)
	if err != nil || !ok {
		return err // busy: a live Commit or Delete
	}
	defer l.release()
	if _, err := os.Lstat(d.dataPath(id)); !errors.Is(err, fs.ErrNotExist) {
		return nil // committed meanwhile
	}
	if err := os.Remove(d.outboardPath(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
