package reader

import (
	"context"
	"fmt"
	"slices"

	"github.com/sovm/sop-pme/pme"
)

// rowGroupPlain is the plaintext of the chunks a scan reads in one row
// group, fetched ahead of the decoder; err, if set, is why the row group
// could not be: its chunks are then none.
type rowGroupPlain struct {
	rg     int
	chunks map[int64][]byte // chunk offset → plaintext
	err    error
}

func (d *rowGroupPlain) clear() {
	for _, p := range d.chunks {
		clear(p)
	}
	d.chunks = nil
}

// fetcher reads a scan's row groups one ahead of the decoder, on a
// goroutine of its own: for each row group in the scan's order, it fetches
// the projected chunks through the verified reader, adjacent chunks as one
// range (one slice, one verification), opens their modules under the DEK and
// checks their pages against the footer, then hands them over on out. out is
// unbuffered, so at most two row groups' projected chunks are held: the one
// arrow-go decodes and the one ready after it. No byte reaches out, or the
// decoder, before it is verified against storage_id (Section 11.10).
type fetcher struct {
	view *plainView
	grid [][]pme.Span
	cols []int // the leaf columns read; nil for every column
	rgs  []int
	out  chan *rowGroupPlain
	done chan struct{}
}

func startFetcher(ctx context.Context, view *plainView, grid [][]pme.Span, cols, rgs []int) *fetcher {
	f := &fetcher{view: view, grid: grid, cols: cols, rgs: rgs, out: make(chan *rowGroupPlain), done: make(chan struct{})}
	go f.run(ctx)
	return f
}

func (f *fetcher) run(ctx context.Context) {
	defer close(f.done)
	defer close(f.out)
	for _, rg := range f.rgs {
		d := f.load(ctx, rg)
		select {
		case f.out <- d:
		case <-ctx.Done():
			d.clear()
			return
		}
		if d.err != nil {
			return
		}
	}
}

// stop waits until the fetcher has ended, ctx being done, and clears what it
// had opened and not handed over.
func (f *fetcher) stop() {
	for d := range f.out {
		d.clear()
	}
	<-f.done
}

// load reads the projected chunks of row group rg.
func (f *fetcher) load(ctx context.Context, rg int) (d *rowGroupPlain) {
	d = &rowGroupPlain{rg: rg, chunks: map[int64][]byte{}}
	defer func() {
		// Opening and checking neither decodes with arrow-go nor panics;
		// should it, the scan fails rather than the process.
		if p := recover(); p != nil {
			d.clear()
			d.err = fmt.Errorf("%w: opening row group %d: %v", ErrDecode, rg, p)
		}
	}()
	var chunks []pme.Span
	if f.cols == nil {
		chunks = slices.Clone(f.grid[rg])
	} else {
		for _, c := range f.cols {
			if c < len(f.grid[rg]) {
				chunks = append(chunks, f.grid[rg][c])
			}
		}
	}
	slices.SortFunc(chunks, func(a, b pme.Span) int { return int(min(max(a.Off-b.Off, -1), 1)) })
	chunks = slices.Compact(chunks)
	v := f.view
	for i := 0; i < len(chunks); {
		// A range of adjacent chunks: one verified read.
		j, end := i+1, chunks[i].End()
		for j < len(chunks) && chunks[j].Off == end {
			end = chunks[j].End()
			j++
		}
		span := pme.Span{Off: chunks[i].Off, Len: end - chunks[i].Off}
		ct := v.ciphertext(span.Len)
		if _, err := v.vr.ReadAtContext(ctx, *ct, span.Off); err != nil {
			v.ctPool.Put(ct)
			d.clear()
			d.err = fmt.Errorf("reader: row group %d, column chunks at [%d, %d): %w", rg, span.Off, span.End(), err)
			return d
		}
		v.stats.verified.Add(span.Len)
		for _, c := range chunks[i:j] {
			plain, err := v.openChunk(c, (*ct)[c.Off-span.Off:c.End()-span.Off], make([]byte, 0, c.Len))
			if err != nil {
				v.ctPool.Put(ct)
				d.clear()
				d.err = err
				return d
			}
			d.chunks[c.Off] = plain
		}
		v.ctPool.Put(ct)
		i = j
	}
	return d
}
