package blobs

import (
	"fmt"
	"io/fs"
	"os"
)

// openRegular opens a file of the store for reading: an object's .data or
// .obao4, or the marker file. The store is the untrusted side (SOP-PME-1
// Section 11.10), and whatever sits under those names is refused with
// ErrNotRegular unless it is a regular file of the directory itself:
//
//   - Lstat first, so that a FIFO, a device, a socket, a directory or a
//     symbolic link is refused without being opened. Opening a FIFO for
//     reading blocks until a writer opens it, for ever if none does, and
//     neither a context nor SIGTERM ends a blocked open(2).
//   - Then openObjectFile, which neither blocks nor follows a link, so
//     that a file swapped in after the Lstat is refused too.
//
// A missing file gives an error matching fs.ErrNotExist.
func openRegular(path string) (*os.File, fs.FileInfo, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, notRegular(path, fi.Mode())
	}
	return openObjectFile(path)
}

// openObjectFile opens path for reading with O_NONBLOCK and O_NOFOLLOW
// (where the system has them), checks on the open file that it is a
// regular file, and then makes the descriptor blocking again, as a regular
// file's always is. A FIFO open with O_NONBLOCK returns at once, and a
// symbolic link fails the open.
func openObjectFile(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		// O_NOFOLLOW fails on a link with ELOOP (EMLINK on FreeBSD, EFTYPE
		// on NetBSD): say what the file is instead.
		if fi, lerr := os.Lstat(path); lerr == nil && !fi.Mode().IsRegular() {
			return nil, nil, notRegular(path, fi.Mode())
		}
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, notRegular(path, fi.Mode())
	}
	if err := setBlocking(f); err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// notRegular describes a file that is not a regular file.
func notRegular(path string, m fs.FileMode) error {
	return fmt.Errorf("%w: %s is %s", ErrNotRegular, path, kind(m))
}

func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	}
	return fmt.Sprintf("not a regular file (mode %v)", m)
}
