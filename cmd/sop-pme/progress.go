package main

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
)

// A meter counts the bytes of a long operation, draws a progress bar on
// stderr when stderr is a terminal (github.com/schollz/progressbar: a
// maintained bar that redraws in place and clears itself), and prints the
// one-line summary at the end.
type meter struct {
	a     *app
	bar   *progressbar.ProgressBar
	n     atomic.Int64
	start time.Time
}

// newMeter starts a meter of total bytes (-1 if unknown).
func (a *app) newMeter(desc string, total int64) *meter {
	m := &meter{a: a, start: time.Now()}
	if a.stderrTTY && !a.quiet {
		m.bar = progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(a.stderr),
			progressbar.OptionSetDescription(desc),
			progressbar.OptionShowBytes(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionSetWidth(30),
		)
	}
	return m
}

// add counts n more bytes.
func (m *meter) add(n int) {
	m.n.Add(int64(n))
	if m.bar != nil {
		m.bar.Add(n)
	}
}

// done removes the bar and prints the summary line: what was done, with the
// rate of bytes over the elapsed time.
func (m *meter) done(format string, a ...any) {
	if m.bar != nil {
		m.bar.Finish()
		m.bar.Clear()
	}
	if m.a.quiet {
		return
	}
	el := time.Since(m.start)
	fmt.Fprintf(m.a.stderr, "sop-pme: %s in %.2f s (%.1f MB/s)\n", fmt.Sprintf(format, a...), el.Seconds(), float64(m.n.Load())/1e6/max(el.Seconds(), 1e-6))
}

// clear removes the bar from the terminal, for output drawn on the same
// terminal; it comes back at the next count.
func (m *meter) clear() {
	if m.bar != nil {
		m.bar.Clear()
	}
}

// abort removes the bar without a summary.
func (m *meter) abort() {
	if m.bar != nil {
		m.bar.Exit()
	}
}

// mb formats a byte count in MB (10^6 bytes), as the summaries do.
func mb(n int64) string {
	if n < 1e6 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}

// countingSource counts the bytes of proof material fetched from a store,
// for the meter.
type countingSource struct {
	src verify.Source
	m   *meter
}

func (c countingSource) Slice(ctx context.Context, id storageid.ID, off, n uint64) (io.ReadCloser, error) {
	rc, err := c.src.Slice(ctx, id, off, n)
	if err != nil {
		return nil, err
	}
	return &countingReader{ReadCloser: rc, m: c.m}, nil
}

type countingReader struct {
	io.ReadCloser
	m *meter
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.m.add(n)
	return n, err
}
