//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package keyring_test

func writeLocked(path string) bool { return false }
