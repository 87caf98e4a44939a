//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package keyring_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/sovm/sop-pme/keyring"
)

// TestFIFOKeyFiles puts a FIFO where the ring file, the KEK file or a
// version-1 ring to import is: opening it must fail at once (ErrFile,
// ErrKEKFile), not block in open(2) until a writer comes.
func TestFIFOKeyFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		want error
		fn   func() error
	}{
		{"Open", keyring.ErrFile, func() error { _, err := keyring.Open(ctx, fifo, keyring.NewKEK()); return err }},
		{"Open read-only", keyring.ErrFile, func() error {
			_, err := keyring.Open(ctx, fifo, keyring.NewKEK(), keyring.WithReadOnly())
			return err
		}},
		{"LoadKEKFile", keyring.ErrKEKFile, func() error { _, err := keyring.LoadKEKFile(fifo); return err }},
		{"ImportV1", keyring.ErrFile, func() error {
			_, err := createRing(t, filepath.Join(dir, "ring"), keyring.NewKEK()).ImportV1(ctx, fifo, keyring.NewKEK())
			return err
		}},
	} {
		done := make(chan error, 1)
		go func() { done <- c.fn() }()
		select {
		case err := <-done:
			if !errors.Is(err, c.want) {
				t.Errorf("%s of a FIFO: %v", c.name, err)
			}
		case <-time.After(5 * time.Second):
			if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close() // lets the blocked open return
			}
			<-done
			t.Errorf("%s of a FIFO: still blocked after 5 s", c.name)
		}
	}
}
