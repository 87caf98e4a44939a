//go:build !unix

package main

// nonBlock is 0 where there are no FIFOs to block on.
const nonBlock = 0
