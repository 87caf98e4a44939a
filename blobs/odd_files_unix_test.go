//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package blobs_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/verify"
)

// noHang is how long an operation on a store with an odd file in it may
// take before the test calls it a hang: generous, since the operation does
// a few system calls.
const noHang = 5 * time.Second

// within runs fn and fails the test if it has not returned within noHang.
// A FIFO whose open(2) blocks is then opened for writing, which lets the
// blocked open return, so that the goroutine ends with the test.
func within(t *testing.T, what string, fifos []string, fn func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-time.After(noHang):
		for _, p := range fifos {
			if f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
		}
		<-done
		t.Fatalf("%s: still blocked after %v", what, noHang)
		return nil
	}
}

// TestFIFOInStore puts a FIFO (and other files that are not regular) where
// an object's .data or .obao4 file is, or where the marker file is: a read
// must fail at once with ErrNotRegular, never block in open(2) until a
// writer comes (which untrusted storage can withhold for ever).
func TestFIFOInStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	data := randBytes(3*verify.GroupSize+100, 7)
	for _, ext := range []string{".data", ".obao4"} {
		for _, held := range []bool{false, true} {
			name := ext
			if held {
				name += "/held"
			}
			t.Run(name, func(t *testing.T) {
				d, path := openDir(t)
				id, err := importBytes(ctx, d, data)
				if err != nil {
					t.Fatal(err)
				}
				if held {
					// The Dir holds the object's files open from this read:
					// the next one must notice that the name now refers to
					// a FIFO, and not read the file it holds either.
					if _, err := readRange(ctx, d, id, 0, 10); err != nil {
						t.Fatal(err)
					}
				}
				file := filepath.Join(path, id.String()+ext)
				if err := os.Remove(file); err != nil {
					t.Fatal(err)
				}
				if err := syscall.Mkfifo(file, 0o600); err != nil {
					t.Fatal(err)
				}
				fifos := []string{file}
				start := time.Now()
				err = within(t, "a slice", fifos, func() error {
					_, err := readRange(ctx, d, id, 0, 10)
					return err
				})
				if !errors.Is(err, blobs.ErrNotRegular) {
					t.Fatalf("a slice with a FIFO at %s: %v", ext, err)
				}
				t.Logf("refused in %v: %v", time.Since(start), err)
				err = within(t, "verify", fifos, func() error { return verify.Verify(ctx, d, id) })
				if !errors.Is(err, blobs.ErrNotRegular) {
					t.Fatalf("verify with a FIFO at %s: %v", ext, err)
				}
				// A fresh Dir (another process) fails the same way.
				d2, err := blobs.OpenDir(path, blobs.ReadOnly())
				if err != nil {
					t.Fatal(err)
				}
				err = within(t, "a slice in another Dir", fifos, func() error {
					_, err := readRange(ctx, d2, id, 0, 10)
					return err
				})
				if !errors.Is(err, blobs.ErrNotRegular) {
					t.Fatalf("a slice in another Dir: %v", err)
				}
				// Importing the object again replaces the FIFO.
				if err := within(t, "import", fifos, func() error {
					_, err := importBytes(ctx, d, data)
					return err
				}); err != nil {
					t.Fatal(err)
				}
				got, err := readRange(ctx, d2, id, 0, len(data))
				if err != nil || !bytes.Equal(got, data) {
					t.Fatalf("after the object was imported again: %v", err)
				}
			})
		}
	}
}

// TestOddObjectFiles: a symlink, a directory or a socket at an object's
// file name are refused as a FIFO is, without following the link.
func TestOddObjectFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	data := randBytes(2*verify.GroupSize, 8)
	for _, kind := range []string{"symlink", "dir", "socket"} {
		for _, ext := range []string{".data", ".obao4"} {
			t.Run(kind+ext, func(t *testing.T) {
				d, path := openDir(t)
				id, err := importBytes(ctx, d, data)
				if err != nil {
					t.Fatal(err)
				}
				file := filepath.Join(path, id.String()+ext)
				moved := filepath.Join(t.TempDir(), "moved")
				if err := os.Rename(file, moved); err != nil {
					t.Fatal(err)
				}
				switch kind {
				case "symlink":
					// To the object's own intact bytes: still refused, a
					// store's files are its own.
					err = os.Symlink(moved, file)
				case "dir":
					err = os.Mkdir(file, 0o700)
				case "socket":
					// Bound under a short name (sun_path holds 108 bytes),
					// then moved into place.
					sock := filepath.Join(t.TempDir(), "s")
					var fd int
					if fd, err = syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0); err == nil {
						defer syscall.Close(fd)
						if err = syscall.Bind(fd, &syscall.SockaddrUnix{Name: sock}); err == nil {
							err = os.Rename(sock, file)
						}
					}
				}
				if err != nil {
					t.Fatal(err)
				}
				err = within(t, "a slice", nil, func() error {
					_, err := readRange(ctx, d, id, 0, 10)
					return err
				})
				if !errors.Is(err, blobs.ErrNotRegular) {
					t.Fatalf("a %s at %s: %v", kind, ext, err)
				}
			})
		}
	}
}

// TestOpenObjectFileNoBlock opens a FIFO through the function that opens an
// object's file once its Lstat said it is a regular file: a FIFO swapped in
// between must not block the open either.
func TestOpenObjectFileNoBlock(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	regular := filepath.Join(dir, "regular")
	os.WriteFile(regular, []byte("x"), 0o600)
	if err := os.Symlink(regular, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, link} {
		err := within(t, "open "+filepath.Base(p), []string{fifo}, func() error {
			f, _, err := blobs.OpenObjectFile(p)
			if err == nil {
				f.Close()
			}
			return err
		})
		if !errors.Is(err, blobs.ErrNotRegular) {
			t.Fatalf("open of a %s: %v", filepath.Base(p), err)
		}
	}
	f, fi, err := blobs.OpenObjectFile(regular)
	if err != nil || fi.Size() != 1 {
		t.Fatalf("open of a regular file: %v", err)
	}
	f.Close()
}

// TestFIFOMarker puts a FIFO where the marker file SOP-BLOB-STORE is:
// opening the store must fail, not block.
func TestFIFOMarker(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "store")
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(path, "SOP-BLOB-STORE")
	if err := syscall.Mkfifo(marker, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, ro := range []bool{false, true} {
		err := within(t, "OpenDir", []string{marker}, func() error {
			var opts []blobs.DirOption
			if ro {
				opts = append(opts, blobs.ReadOnly())
			}
			d, err := blobs.OpenDir(path, opts...)
			if err == nil {
				d.Close()
			}
			return err
		})
		if !errors.Is(err, blobs.ErrNoStore) {
			t.Fatalf("OpenDir with a FIFO for a marker: %v", err)
		}
	}
	err := within(t, "CreateDir", []string{marker}, func() error {
		d, err := blobs.CreateDir(path)
		if err == nil {
			d.Close()
		}
		return err
	})
	if !errors.Is(err, blobs.ErrNoStore) {
		t.Fatalf("CreateDir with a FIFO for a marker: %v", err)
	}
}

// TestFIFOLockFiles puts FIFOs where the store's lock files go: an
// object's lock (taken by Commit and Delete) and a temporary import's lock
// (tried by Sweep). Locking opens them read-write, which does not wait for
// a peer, so commit, delete and sweep go on.
func TestFIFOLockFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, path := openDir(t)
	data := randBytes(2*verify.GroupSize, 9)
	id, err := importBytes(ctx, d, data)
	if err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(path, ".lock-"+id.String())
	tmpLock := filepath.Join(path, ".tmp-0123456789abcdef0123456789abcdef.lock")
	for _, p := range []string{lock, tmpLock} {
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	fifos := []string{lock, tmpLock}
	if err := within(t, "Sweep", fifos, func() error { return d.Sweep(ctx) }); err != nil {
		t.Fatalf("Sweep with FIFO lock files: %v", err)
	}
	if err := syscall.Mkfifo(lock, 0o600); err != nil && !errors.Is(err, os.ErrExist) {
		t.Fatal(err)
	}
	if err := within(t, "Delete", fifos, func() error { return d.Delete(ctx, id) }); err != nil {
		t.Fatalf("Delete with a FIFO lock file: %v", err)
	}
	if err := syscall.Mkfifo(lock, 0o600); err != nil && !errors.Is(err, os.ErrExist) {
		t.Fatal(err)
	}
	if err := within(t, "import", fifos, func() error { _, err := importBytes(ctx, d, data); return err }); err != nil {
		t.Fatalf("import with a FIFO lock file: %v", err)
	}
	if got, err := readRange(ctx, d, id, 0, len(data)); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read after: %v", err)
	}
}
