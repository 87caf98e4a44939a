package blobs

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to start writing the file's dirty pages in
// [off, off+n) to the device, without waiting for them (sync_file_range
// with SYNC_FILE_RANGE_WRITE). It is advice: it makes nothing durable (the
// commit's fsync does), and an error only means the advice was not taken.
func startWriteback(f *os.File, off, n int64) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		serr = unix.SyncFileRange(int(fd), off, n, unix.SYNC_FILE_RANGE_WRITE)
	})
	if err != nil {
		return err
	}
	return serr
}
