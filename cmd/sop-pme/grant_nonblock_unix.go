//go:build unix

package main

import "syscall"

// grantNoBlock opens a file without blocking: a FIFO given as an identity or a
// grant must not hang the command (it is then refused as not a regular
// file).
const grantNoBlock = syscall.O_NONBLOCK
