package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// runPeakRSS runs cmd to its end and returns its peak resident set: VmHWM
// in /proc/<pid>/status, read every 5 ms while it runs (not ru_maxrss: Go
// starts children with vfork, and Linux then counts the parent's resident
// set in the child's ru_maxrss), and the error of cmd.Wait.
func runPeakRSS(t *testing.T, cmd *exec.Cmd) (int64, error) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var peak atomic.Int64
	done := make(chan struct{})
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
		for {
			if b, err := os.ReadFile(status); err == nil {
				if m := vmHWM.FindSubmatch(b); m != nil {
					kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
					peak.Store(max(peak.Load(), kb<<10))
				}
			}
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	<-polled
	if peak.Load() == 0 {
		t.Fatal("no VmHWM read from /proc")
	}
	return peak.Load(), err
}
