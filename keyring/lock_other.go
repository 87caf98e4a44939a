//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package keyring

import (
	"context"
	"os"
	"time"
)

// lockFile leaves the lock to bbolt (its Options.Timeout) on systems
// without flock(2).
func lockFile(ctx context.Context, f *os.File, exclusive bool, timeout time.Duration) error {
	return ctx.Err()
}
