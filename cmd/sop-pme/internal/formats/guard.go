package formats

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Inputs come from anyone, and arrow-go's readers trust much of what they
// read: flatbuffers are not verified, and some lengths are allocated as
// declared. This file is the package's boundary with them. Whatever a
// reader does with a bad input, the caller gets one line of error that
// matches ErrFormat, never a panic; no allocation is larger than a bound
// tied to the input's size; and Arrow IPC record batches, whose buffers
// are taken as they are, are validated before they are handed out.

// A formatError is an error about a bad input: it matches ErrFormat and the
// error it has, and its message is one line.
type formatError struct {
	msg string
	err error
}

func (e *formatError) Error() string   { return e.msg }
func (e *formatError) Unwrap() []error { return []error{ErrFormat, e.err} }

func oneLine(s string) string {
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ")
}

// badInput returns err, which reading name failed with, as an error that
// matches ErrFormat, unless it is not about the input's bytes: the
// context's end, or a failure to read the file.
func badInput(name string, err error) error {
	var pe *fs.PathError
	switch {
	case err == nil, errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.As(err, &pe):
		return err
	case errors.Is(err, ErrFormat):
		if strings.Contains(err.Error(), "\n") {
			return &formatError{oneLine(err.Error()), err}
		}
		return err
	}
	return &formatError{fmt.Sprintf("%v: %s: %s", ErrFormat, name, oneLine(err.Error())), err}
}

// recovered turns p, a panic recovered from reading name as format f, into
// an error matching ErrFormat with p's message.
func recovered(name string, f Format, p any) error {
	err, ok := p.(error)
	if !ok {
		err = fmt.Errorf("%v", p)
	}
	return &formatError{fmt.Sprintf("%v: %s is malformed %s input (%s)", ErrFormat, name, f, oneLine(err.Error())), err}
}

// guarded reads a format's records, recovering a panic of its reader into
// an error (after which it reads no more), making errors match ErrFormat,
// and, with validate, checking each record batch's arrays in full.
type guarded struct {
	array.RecordReader
	name     string
	format   Format
	validate bool
	n        int
	err      error
}

func (g *guarded) Next() (ok bool) {
	if g.err != nil {
		return false
	}
	defer func() {
		if p := recover(); p != nil {
			g.err, ok = recovered(g.name, g.format, p), false
		}
	}()
	if !g.RecordReader.Next() {
		g.err = badInput(g.name, g.RecordReader.Err())
		return false
	}
	g.n++
	if g.validate {
		rec := g.RecordReader.RecordBatch()
		for i, col := range rec.Columns() {
			if err := array.ValidateFull(col); err != nil {
				g.err = &formatError{fmt.Sprintf("%v: %s: record batch %d, column %q: %s",
					ErrFormat, g.name, g.n, rec.ColumnName(i), oneLine(err.Error())), err}
				return false
			}
		}
	}
	return true
}

func (g *guarded) RecordBatch() arrow.RecordBatch {
	if g.err != nil {
		return nil
	}
	return g.RecordReader.RecordBatch()
}

func (g *guarded) Record() arrow.RecordBatch { return g.RecordBatch() }
func (g *guarded) Err() error                { return g.err }

// Release releases the reader. A reader that panicked may panic again, or
// leave memory to the garbage collector: either way, it is done with.
func (g *guarded) Release() {
	defer func() { recover() }()
	g.RecordReader.Release()
}

// defaultAllocFloor and allocRatio bound each allocation of a Parquet or
// Arrow IPC reader: to the floor (InputOptions.allocFloor, defaultAllocFloor
// unless a test sets it), or allocRatio times the input's size if that is
// larger. Lengths in these formats are declared by the input; data
// decompresses, and dictionaries repeat, so a batch can be larger than its
// input, but not by a factor a real table needs.
const (
	defaultAllocFloor = 1 << 30
	allocRatio        = 64
)

// errAllocation is what a refused allocation panics with (recovered into
// the reader's error, which matches it and ErrFormat).
var errAllocation = errors.New("a declared length is out of proportion to the input")

// boundedAlloc refuses allocations larger than limit, by panicking with an
// error that wraps errAllocation.
type boundedAlloc struct {
	memory.Allocator
	limit, size int64
}

// newBoundedAlloc returns mem bounded for an input of size bytes (-1 if
// not known), with the given floor (0: defaultAllocFloor).
func newBoundedAlloc(mem memory.Allocator, size, floor int64) memory.Allocator {
	limit := int64(defaultAllocFloor)
	if floor > 0 {
		limit = floor
	}
	if size > 0 && size <= (1<<62)/allocRatio {
		limit = max(limit, size*allocRatio)
	}
	return &boundedAlloc{Allocator: mem, limit: limit, size: size}
}

func (b *boundedAlloc) check(n int) {
	if n < 0 || int64(n) > b.limit {
		of := ""
		if b.size >= 0 {
			of = fmt.Sprintf(" of %d bytes", b.size)
		}
		panic(fmt.Errorf("%w: it asks for %d bytes at once, more than the %d allowed for an input%s", errAllocation, n, b.limit, of))
	}
}

func (b *boundedAlloc) Allocate(n int) []byte {
	b.check(n)
	return b.Allocator.Allocate(n)
}

func (b *boundedAlloc) Reallocate(n int, old []byte) []byte {
	b.check(n)
	return b.Allocator.Reallocate(n, old)
}
