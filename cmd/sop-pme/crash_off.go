//go:build !sopcrash

package main

// crashPoint marks a point where keys rotate or import --table may be killed. Only a binary
// built with the sopcrash tag, for the crash tests, dies there.
func crashPoint(string) {}
