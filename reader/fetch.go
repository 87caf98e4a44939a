package reader

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/verify"
)

// chunkPlain is one column chunk the fetcher opens: done is closed once
// plain (its plaintext) or err is set.
type chunkPlain struct {
	done  chan struct{}
	plain []byte
	err   error
	taken bool // handed to the decoder (plainView.take)
	read  bool // read in parts by the decoder (plainView.held)
}

// rowGroupPlain is the chunks a scan reads in one row group, which the
// fetcher opens in order, one by one.
type rowGroupPlain struct {
	rg     int
	spans  []pme.Span // the projected chunks, by offset
	chunks map[int64]*chunkPlain
}

// clear waits for every chunk of d and clears the plaintext the decoder
// did not take.
func (d *rowGroupPlain) clear(v *plainView) {
	for _, c := range d.chunks {
		<-c.done
		v.mu.Lock()
		taken := c.taken
		c.taken = true
		v.mu.Unlock()
		if !taken {
			v.putPlain(c.plain)
		}
	}
}

// fetcher reads a scan's projected chunks ahead of the decoder, on a
// goroutine of its own, in the scan's row-group order and, within a row
// group, in offset order, which is the order arrow-go decodes them in. It
// fetches adjacent chunks as one range (one slice, one verification),
// opens each chunk's modules under the DEK and checks its pages against the
// footer, and publishes it. A row group is handed over (out, one deep) as
// soon as the fetcher starts it, so the decoder waits only for the chunk it
// needs, not for its row group; and the fetcher starts a row group only once
// the decoder has taken the one before, so at most two row groups' projected
// chunks are held: the one arrow-go decodes and the next. No byte reaches the
// decoder before it is verified against storage_id (Section 11.10).
type fetcher struct {
	view *plainView
	grid [][]pme.Span
	cols []int // the leaf columns read; nil for every column
	rgs  []int
	out  chan *rowGroupPlain
	done chan struct{}
}

func startFetcher(ctx context.Context, view *plainView, grid [][]pme.Span, cols, rgs []int) *fetcher {
	f := &fetcher{view: view, grid: grid, cols: cols, rgs: rgs, out: make(chan *rowGroupPlain, 1), done: make(chan struct{})}
	fetchers.Go(func() { f.run(ctx) })
	return f
}

// fetchers runs the scans' fetchers on goroutines that outlive them: a
// table of many small objects scans one after another, and a goroutine of
// its own for each would start, and grow its stack through the verifier, for
// each object (about 7 us of CPU per object, at GOMAXPROCS=1). A fetcher
// still closes its done channel when it returns (stop waits for that); the
// goroutine that ran it then waits up to workerIdle for the next one, and
// exits.
var fetchers = workers{work: make(chan func())}

// workerIdle is how long an idle goroutine of a workers waits for work.
const workerIdle = 50 * time.Millisecond

// workers runs functions on goroutines it reuses.
type workers struct{ work chan func() }

// Go runs fn on an idle goroutine, or on a new one if none is idle.
func (w *workers) Go(fn func()) {
	select {
	case w.work <- fn:
	default:
		go w.run(fn)
	}
}

func (w *workers) run(fn func()) {
	t := time.NewTimer(workerIdle)
	defer t.Stop()
	for {
		fn()
		fn = nil // nothing of the last scan stays reachable
		t.Reset(workerIdle)
		select {
		case fn = <-w.work:
		case <-t.C:
			return
		}
	}
}

func (f *fetcher) run(ctx context.Context) {
	defer close(f.done)
	defer close(f.out)
	for _, rg := range f.rgs {
		d := f.rowGroup(rg)
		select {
		case f.out <- d:
		case <-ctx.Done():
			return
		}
		if !f.fill(ctx, d) {
			return
		}
	}
}

// stop waits until the fetcher has ended, its context being done, and
// clears what it opened and the decoder did not take.
func (f *fetcher) stop() {
	for d := range f.out {
		d.clear(f.view)
	}
	<-f.done
}

// rowGroup returns row group rg's projected chunks, none opened yet.
func (f *fetcher) rowGroup(rg int) *rowGroupPlain {
	d := &rowGroupPlain{rg: rg, chunks: map[int64]*chunkPlain{}}
	if f.cols == nil {
		d.spans = slices.Clone(f.grid[rg])
	} else {
		for _, c := range f.cols {
			if c < len(f.grid[rg]) {
				d.spans = append(d.spans, f.grid[rg][c])
			}
		}
	}
	slices.SortFunc(d.spans, func(a, b pme.Span) int { return int(min(max(a.Off-b.Off, -1), 1)) })
	d.spans = slices.Compact(d.spans)
	for _, c := range d.spans {
		d.chunks[c.Off] = &chunkPlain{done: make(chan struct{})}
	}
	return d
}

// ranges returns the verified reads fill makes for d, in order: one for
// each run of adjacent chunks.
func (d *rowGroupPlain) ranges() []pme.Span {
	var out []pme.Span
	for _, c := range d.spans {
		if k := len(out); k > 0 && out[k-1].End() == c.Off {
			out[k-1].Len += c.Len
			continue
		}
		out = append(out, c)
	}
	return out
}

// planScan tells the object's Source, if it is a verify.Planner, every
// range the scan of row groups rgs will read, in the order it reads them:
// a store over a network then fetches their parent pairs together and
// keeps requests in flight ahead of the scan (verify.Planner). It changes
// only which requests the store makes, never what is verified.
func planScan(ctx context.Context, vr *verify.Reader, grid [][]pme.Span, cols, rgs []int) {
	f := &fetcher{grid: grid, cols: cols}
	var plan []verify.Range
	for _, rg := range rgs {
		for _, sp := range f.rowGroup(rg).ranges() {
			plan = append(plan, verify.Range{Off: uint64(sp.Off), N: uint64(sp.Len)})
		}
	}
	vr.Plan(ctx, plan)
}

// fill opens the chunks of d in order and reports whether all opened. On
// a failure, the failing chunk and every one after it carry the error.
func (f *fetcher) fill(ctx context.Context, d *rowGroupPlain) (ok bool) {
	next := 0 // d.spans[next:] are not published yet
	fail := func(err error) {
		for _, c := range d.spans[next:] {
			ch := d.chunks[c.Off]
			ch.err = err
			close(ch.done)
		}
		next = len(d.spans)
	}
	defer func() {
		// Opening and checking neither decodes with arrow-go nor panics;
		// should it, the scan fails rather than the process.
		if p := recover(); p != nil {
			fail(fmt.Errorf("%w: opening row group %d: %v", ErrDecode, d.rg, p))
			ok = false
		}
	}()
	v := f.view
	for next < len(d.spans) {
		// A range of adjacent chunks: one verified read.
		i, j, end := next, next+1, d.spans[next].End()
		for j < len(d.spans) && d.spans[j].Off == end {
			end = d.spans[j].End()
			j++
		}
		span := pme.Span{Off: d.spans[i].Off, Len: end - d.spans[i].Off}
		ct := v.ciphertext(span.Len)
		if _, err := v.vr.ReadAtContext(ctx, *ct, span.Off); err != nil {
			v.ctPool.Put(ct)
			fail(fmt.Errorf("reader: row group %d, column chunks at [%d, %d): %w", d.rg, span.Off, span.End(), err))
			return false
		}
		v.stats.verified.Add(span.Len)
		for _, c := range d.spans[i:j] {
			plain, err := v.openChunk(c, (*ct)[c.Off-span.Off:c.End()-span.Off], v.plaintext(c.Len))
			if err != nil {
				v.putPlain(plain)
				v.ctPool.Put(ct)
				fail(err)
				return false
			}
			ch := d.chunks[c.Off]
			ch.plain = plain
			close(ch.done)
			next++
		}
		v.ctPool.Put(ct)
	}
	return true
}
