//go:build linux

package blobs_test

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"

	"github.com/sovm/sop-pme/blobs"
)

// TestENOSPC imports into a 64 KiB tmpfs: a full disk during the writes, or
// during Commit's outboard, leaves nothing behind. It needs the right to
// mount (root with CAP_SYS_ADMIN); TestWriteFailure and
// TestCommitStepFailures cover the same paths with hooks.
func TestENOSPC(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=64k"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("cannot mount a tmpfs: %v", err)
		}
		t.Skipf("not under CI: cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	ctx := context.Background()
	d, err := blobs.CreateDir(dir)
	if err != nil {
		t.Fatal(err)
	}

	// Full during the writes.
	if _, err := importBytes(ctx, d, randBytes(200<<10, 1)); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("import of 200 KiB into 64 KiB: %v, want ENOSPC", err)
	}
	wantFiles(t, dir)

	// The data fills the disk exactly; the outboard does not fit.
	if _, err := importBytes(ctx, d, randBytes(64<<10, 2)); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("import of 64 KiB into 64 KiB: %v, want ENOSPC", err)
	}
	wantFiles(t, dir)

	// The store still works once there is room.
	id, err := importBytes(ctx, d, randBytes(20<<10, 3))
	if err != nil {
		t.Fatal(err)
	}
	wantFiles(t, dir, id)
}
