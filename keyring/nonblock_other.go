//go:build !unix

package keyring

// noBlock: no FIFO in the file system to block on.
const noBlock = 0
