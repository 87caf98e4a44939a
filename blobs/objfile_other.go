//go:build !unix

package blobs

import "os"

// openFlags: systems other than Unix have no FIFO in the file system that
// open could block on, and the Lstat of openRegular refuses links.
const openFlags = 0

func setBlocking(*os.File) error { return nil }
