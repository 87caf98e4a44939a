//go:build !linux

package main

import (
	"errors"
	"io/fs"
	"os"
)

// renameNoReplace renames from to to unless to exists: an error matching
// fs.ErrExist if it does. Without renameat2, the check and the rename are
// two steps.
func renameNoReplace(from, to string) error {
	if _, err := os.Lstat(to); err == nil {
		return fs.ErrExist
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return os.Rename(from, to)
}
