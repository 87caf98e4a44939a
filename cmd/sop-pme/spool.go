package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sovm/sop-pme/cmd/sop-pme/internal/formats"
)

// An importSource is import's input: a file (the path given, stdin when it
// is a regular file, or a Parquet file from a stdin pipe, spooled), or else
// the stdin pipe as a stream.
type importSource struct {
	file   *os.File  // nil: stream
	stream io.Reader // when file is nil
	// spooled says file is a spool of stdin (see spoolStdin).
	spooled bool
	close   func() error
}

// source opens the input at path ("-" for stdin), called name in errors.
// A Parquet file needs random access: one from a pipe (stdin, or a FIFO
// given by path) is spooled to a private temporary file (spoolStdin), so
// that it is sealed byte for byte as the same file given by path is,
// rather than read into memory and encoded again. The bytes spooled are
// counted on onRead.
func (im *importer) source(ctx context.Context, path, name string, onRead func(int)) (*importSource, error) {
	if path != "-" {
		f, err := os.Open(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &cmdError{exitNotFound, name + ": no such file", err}
		} else if err != nil {
			return nil, about(name, err)
		}
		if fi, err := f.Stat(); err == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
			// A FIFO, a device or a socket: read once, in order, as a
			// stdin pipe is.
			return im.pipeSource(ctx, f, name, f.Close, onRead)
		}
		return &importSource{file: f, close: f.Close}, nil
	}
	none := func() error { return nil }
	if fi, err := os.Stdin.Stat(); err == nil && fi.Mode().IsRegular() {
		// A file redirected to stdin: read as it is, as by path.
		return &importSource{file: os.Stdin, close: none}, nil
	}
	return im.pipeSource(ctx, os.Stdin, name, none, onRead)
}

// pipeSource is source's input r, read once in order (a pipe): a Parquet
// file (by --format, or by its first bytes) spooled, anything else a
// stream. closeIn closes r.
func (im *importer) pipeSource(ctx context.Context, r io.Reader, name string, closeIn func() error, onRead func(int)) (*importSource, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	if im.f == formats.Parquet || im.f == "" {
		head, _ := br.Peek(4)
		if im.f == formats.Parquet || bytes.Equal(head, []byte("PAR1")) {
			f, cleanup, err := spoolStdin(ctx, spoolCounter{br, onRead})
			closeErr := closeIn()
			if err != nil {
				return nil, about(name, err)
			}
			if closeErr != nil {
				cleanup()
				return nil, about(name, closeErr)
			}
			return &importSource{file: f, spooled: true, close: cleanup}, nil
		}
	}
	return &importSource{stream: br, close: closeIn}, nil
}

// spoolStdin copies the Parquet file read from r (stdin) into a private
// temporary file, and returns it, at its start, with the function that
// closes and removes it.
//
// The spool holds plaintext, so it never goes beside the store, which is
// the untrusted side (no plaintext reaches it: SOP-PME-1 11.10, DESIGN's
// invariants), but into the user's temporary directory ($TMPDIR, or /tmp),
// in a directory of its own (0700), as a file only its owner can read
// (0600). Both are removed as soon as the file is created, before any byte
// is written: on Unix an open file outlives its name, so the spool has no
// name while it holds plaintext, and no exit of the process (an error, an
// interrupt, SIGKILL) can leave it behind; the kernel frees it when the
// process closes it or ends. Where an open file cannot be removed
// (Windows), the names go when the function returned is called, which
// import does on every return.
func spoolStdin(ctx context.Context, r io.Reader) (*os.File, func() error, error) {
	dir, err := os.MkdirTemp("", "sop-pme-stdin-")
	if err != nil {
		return nil, nil, fmt.Errorf("spooling the Parquet file to a temporary file: %w", err)
	}
	name := filepath.Join(dir, "stdin.parquet")
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		os.Remove(dir)
		return nil, nil, fmt.Errorf("spooling the Parquet file to a temporary file: %w", err)
	}
	named := os.Remove(name) != nil
	if !named {
		os.Remove(dir)
	}
	cleanup := func() error {
		err := f.Close()
		if named {
			err = errors.Join(err, os.Remove(name), os.Remove(dir))
			named = false
		}
		return err
	}
	if _, err := io.Copy(f, ctxReader{ctx, r}); err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("spooling the Parquet file to a temporary file: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("spooling the Parquet file to a temporary file: %w", err)
	}
	return f, cleanup, nil
}

// ctxReader reads from r until ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// spoolCounter reports the bytes read from r to onRead.
type spoolCounter struct {
	r      io.Reader
	onRead func(int)
}

func (c spoolCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.onRead(n)
	return n, err
}
