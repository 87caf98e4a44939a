package main

import "golang.org/x/sys/unix"

// renameNoReplace renames from to to unless to exists, atomically
// (renameat2 with RENAME_NOREPLACE): an error matching fs.ErrExist if it
// does.
func renameNoReplace(from, to string) error {
	return unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, unix.RENAME_NOREPLACE)
}
