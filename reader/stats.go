package reader

import (
	"context"
	"io"
	"sync/atomic"

	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
)

// Stats counts what a Reader has done so far, for statistics and progress
// displays. The counts are cumulative over Open, every Scan and Verify.
type Stats struct {
	// BytesFetched counts the bytes the source handed over: BAO slices,
	// that is the object bytes read (rounded out to 16 KiB groups) and the
	// parent hashes that prove them.
	BytesFetched int64
	// BytesVerified counts the object bytes verified against storage_id
	// and released: the ranges read, and the whole object for a Verify.
	BytesVerified int64
	// ModulesOpened counts the modules authenticated and decrypted under
	// the DEK: the footer and the page header and page modules of the
	// column chunks read.
	ModulesOpened int64
}

// Stats returns the Reader's counts so far. It is safe to call while a
// Scan runs.
func (r *Reader) Stats() Stats {
	return Stats{
		BytesFetched:  r.stats.fetched.Load(),
		BytesVerified: r.stats.verified.Load(),
		ModulesOpened: r.stats.modules.Load(),
	}
}

// counters are a Reader's Stats, and how many chunks a scan had to open
// when arrow-go asked for them, not fetched ahead (for tests).
type counters struct {
	fetched, verified, modules atomic.Int64
	syncOpens                  atomic.Int64
	flatRowGroups              atomic.Int64 // decoded by package flatdec
}

// countingSource counts the bytes of the slices its source hands over.
type countingSource struct {
	verify.Source
	c *counters
}

func (s countingSource) Slice(ctx context.Context, id storageid.ID, off, n uint64) (io.ReadCloser, error) {
	rc, err := s.Source.Slice(ctx, id, off, n)
	if err != nil || rc == nil {
		return rc, err
	}
	return countingReadCloser{rc, s.c}, nil
}

// Plan passes a plan on to the source, if it is a verify.Planner.
func (s countingSource) Plan(ctx context.Context, id storageid.ID, ranges []verify.Range) {
	if p, ok := s.Source.(verify.Planner); ok {
		p.Plan(ctx, id, ranges)
	}
}

type countingReadCloser struct {
	io.ReadCloser
	c *counters
}

func (r countingReadCloser) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.c.fetched.Add(int64(n))
	return n, err
}
