//go:build !unix

package main

// grantNoBlock is 0 where there are no FIFOs to block on.
const grantNoBlock = 0
