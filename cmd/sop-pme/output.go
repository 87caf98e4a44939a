package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// An outputFile is where a command writes a path it was given (export -o
// PATH). It never replaces PATH unless PATH is a regular file:
//
//   - a regular file, or no file yet: the output goes to a temporary file
//     beside PATH (0600, exclusive create, so never through a symlink),
//     renamed over PATH only when it is complete, so that a failed command
//     leaves PATH as it was;
//   - a FIFO or a character device (a named pipe, a device node such as a
//     null device or a terminal): written in place, as curl and duckdb do;
//     replacing one with a regular file would leave its reader with nothing
//     and, for a system node, break every later user of it;
//   - a symlink: written in place through the link, into its target
//     (/dev/stdout is a symlink; so is a file a user keeps elsewhere), and
//     the link is kept;
//   - anything else (a directory, a socket, a block device): refused.
//
// Written in place, a failed command leaves what it had written. A FIFO is
// opened without blocking, and waited on until a reader opens it or the
// context ends: an interrupt ends a wait for a reader that never comes.
type outputFile struct {
	*os.File
	path  string
	tmp   bool        // File is a temporary file to rename over path
	prior fs.FileInfo // the regular file at path when it was opened, if any
}

// errOutputKind is the error for an output path of a kind nothing is
// written to.
var errOutputKind = errors.New("not a regular file, FIFO, character device or symlink to one")

// createOutput opens path for a command's output; see outputFile.
func createOutput(ctx context.Context, path string) (*outputFile, error) {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return createTemp(path, nil)
	case err != nil:
		return nil, err
	case fi.Mode().IsRegular():
		return createTemp(path, fi)
	case fi.Mode()&fs.ModeSymlink != 0:
		// Through the link: its target decides how it is opened. A
		// dangling link's target is created, as curl creates it.
		if t, err := os.Stat(path); err == nil {
			fi = t
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	m := fi.Mode()
	switch {
	case m&fs.ModeNamedPipe != 0:
		f, err := openFIFO(ctx, path)
		if err != nil {
			return nil, err
		}
		return &outputFile{File: f, path: path}, nil
	case m&fs.ModeCharDevice != 0 || m&fs.ModeSymlink != 0 || m.IsRegular():
		// In place (a device, or the target of a symlink).
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return nil, err
		}
		return &outputFile{File: f, path: path}, nil
	}
	return nil, fmt.Errorf("%w (it is %s)", errOutputKind, kindOf(m))
}

// fifoPoll is how often openFIFO tries again while a FIFO has no reader.
const fifoPoll = 20 * time.Millisecond

// openFIFO opens the FIFO at path for writing once a reader has it open,
// or fails with ctx's error: a plain open(2) would block until a reader
// comes, where no signal or context can end it.
func openFIFO(ctx context.Context, path string) (*os.File, error) {
	t := time.NewTicker(fifoPoll)
	defer t.Stop()
	for {
		// O_NONBLOCK: ENXIO while no reader has the FIFO open. The file
		// stays non-blocking, and Go writes to it through its poller.
		f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if !errors.Is(err, syscall.ENXIO) {
			return f, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

func createTemp(path string, prior fs.FileInfo) (*outputFile, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, err
	}
	if prior != nil {
		// The file that replaces a regular file keeps its permissions.
		if err := f.Chmod(prior.Mode().Perm()); err != nil {
			f.Close()
			os.Remove(f.Name())
			return nil, err
		}
	}
	return &outputFile{File: f, path: path, tmp: true, prior: prior}, nil
}

// inPlace reports whether the output goes straight into path, so that a
// failure leaves what was written.
func (o *outputFile) inPlace() bool { return !o.tmp }

// commit makes the output final: a temporary file is synced and renamed
// over path, only if path is still what it was when the output was opened
// (the same regular file, or nothing: renameat2's RENAME_NOREPLACE). If a
// FIFO, a device or a symlink took its place since, the output is copied
// into it instead of replacing it.
func (o *outputFile) commit(ctx context.Context) error {
	if !o.tmp {
		return o.File.Close()
	}
	defer os.Remove(o.File.Name()) // a no-op once renamed
	if err := o.File.Sync(); err != nil {
		o.File.Close()
		return err
	}
	if err := o.File.Close(); err != nil {
		return err
	}
	tmp := o.File.Name()
	if o.prior == nil {
		err := renameNoReplace(tmp, o.path)
		if err == nil || !errors.Is(err, fs.ErrExist) {
			return err
		}
	} else if fi, err := os.Lstat(o.path); err == nil && os.SameFile(fi, o.prior) {
		return os.Rename(tmp, o.path)
	}
	// path changed under us: whatever is there now decides.
	return o.copyInto(ctx, tmp)
}

// copyInto writes the finished temporary file into whatever path now is,
// by the rules of createOutput.
func (o *outputFile) copyInto(ctx context.Context, tmp string) error {
	fi, err := os.Lstat(o.path)
	if err == nil && fi.Mode().IsRegular() || errors.Is(err, fs.ErrNotExist) {
		return os.Rename(tmp, o.path)
	}
	if err != nil {
		return err
	}
	dst, err := createOutput(ctx, o.path)
	if err != nil {
		return err
	}
	src, err := os.Open(tmp)
	if err != nil {
		dst.abort()
		return err
	}
	defer src.Close()
	if _, err := dst.ReadFrom(src); err != nil {
		dst.abort()
		return err
	}
	return dst.commit(ctx)
}

// abort closes the output; a temporary file is removed, and path is left as
// it was.
func (o *outputFile) abort() {
	o.File.Close()
	if o.tmp {
		os.Remove(o.File.Name())
	}
}

// kindOf names a file mode's type for messages.
func kindOf(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0 && m&fs.ModeCharDevice == 0:
		return "a block device"
	}
	return "of type " + m.Type().String()
}
