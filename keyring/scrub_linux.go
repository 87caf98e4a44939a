package keyring

import (
	"errors"
	"os"
	"syscall"
)

const seekData = 3 // SEEK_DATA

// dataFrom returns the first offset in [off, end) that the file system
// stores as data rather than as a hole (lseek SEEK_DATA), end if there is
// none, and off where the file system cannot tell.
func dataFrom(f *os.File, off, end int64) int64 {
	d, err := f.Seek(off, seekData)
	switch {
	case errors.Is(err, syscall.ENXIO):
		return end // only a hole from off to the end of the file
	case err != nil || d < off:
		return off
	}
	return min(d, end)
}

// syncData makes the zeros durable: fdatasync, as bbolt syncs its own
// writes, since the scrub never changes the file's size.
func syncData(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
