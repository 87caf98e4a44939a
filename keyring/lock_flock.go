//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package keyring

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"syscall"
	"time"
)

// lockFile takes flock(2) on f, exclusive or shared, the lock bbolt takes on
// the same file. bbolt then locks the same open file description again,
// which succeeds at once. Waiting here rather than in bbolt (which polls
// every 50 ms) lets the wait follow ctx and back off from 0.5 ms, and lets
// the file be checked under the lock before bbolt maps it.
func lockFile(ctx context.Context, f *os.File, exclusive bool, timeout time.Duration) error {
	how := syscall.LOCK_SH | syscall.LOCK_NB
	if exclusive {
		how = syscall.LOCK_EX | syscall.LOCK_NB
	}
	deadline := time.Now().Add(timeout)
	wait := 500 * time.Microsecond
	fd := int(f.Fd())
	for {
		err := syscall.Flock(fd, how)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			return err
		}
		if !time.Now().Before(deadline) {
			return ErrBusy
		}
		t := time.NewTimer(wait/2 + rand.N(wait))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, 20*time.Millisecond)
	}
}
