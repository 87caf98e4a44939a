//go:build sopcrash

package main

import (
	"os"
	"syscall"
)

// crashPoint kills the process with SIGKILL at the point named by
// $SOP_PME_CRASH_AT: the crash tests of keys rotate and import --table build the command with
// the sopcrash tag and die at each point in turn. No cleanup runs.
func crashPoint(name string) {
	if os.Getenv("SOP_PME_CRASH_AT") == name {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
}
