//go:build unix

package keyring

import "syscall"

// noBlock is added to every open of the ring file and of a KEK file, which
// must be regular files (checked on the open file): a FIFO put at their
// path would otherwise block the open until a writer came, for ever if none
// did. On a regular file O_NONBLOCK changes nothing.
const noBlock = syscall.O_NONBLOCK
