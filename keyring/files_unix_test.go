//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package keyring_test

import (
	"os"
	"syscall"
)

// writeLocked reports whether someone holds the exclusive lock of the file
// at path.
func writeLocked(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return true
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}
