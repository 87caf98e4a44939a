//go:build unix

package blobs

import (
	"os"
	"syscall"
)

// openFlags are the flags openObjectFile adds: no blocking on a FIFO, no
// following a symbolic link.
const openFlags = syscall.O_NONBLOCK | syscall.O_NOFOLLOW

// setBlocking clears O_NONBLOCK on the regular file f.
func setBlocking(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = syscall.SetNonblock(int(fd), false) }); err != nil {
		return err
	}
	return serr
}
