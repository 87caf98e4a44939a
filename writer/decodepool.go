package writer

import (
	"context"
	"fmt"
	"sync"

	"github.com/sovm/sop-pme/internal/seal"
)

// decodeChecks runs SealFile's decode check (decodeRowGroup) on the row
// group files the Sealer hands over, each on a goroutine of its own and at
// most n at once, while the Sealer goes on sealing the next row groups:
// decoding is the costly part of sealing (a core decodes about 120 MB/s of
// TPC-H's lineitem, where sealing and hashing run at 1 GB/s), and the
// row groups decode independently. SealFile waits for every check before it
// publishes anything, so that a row group that does not decode is still
// refused before the object exists; and it reports the failure of the
// first row group that failed, as checking them one by one would (no check
// is cancelled by another's failure: each one ends on its own, within the
// reader's memory limit for a batch). Memory: n row group files (their
// rewritten pages; the other pages are read again from the input), a
// column chunk each (decodeflat.go reads one at a time) and n decoding
// batches.
type decodeChecks struct {
	ctx   context.Context
	slots chan struct{}
	wg    sync.WaitGroup

	mu    sync.Mutex
	err   error // the error of the first row group that failed
	errRG int
}

func newDecodeChecks(ctx context.Context, n int) *decodeChecks {
	return &decodeChecks{ctx: ctx, slots: make(chan struct{}, max(n, 1))}
}

// add starts the check of f once fewer than n run, and returns the error
// of a check that failed already (which stops the Sealer), or ctx's.
func (d *decodeChecks) add(f *seal.RowGroupFile) error {
	if err := d.failed(); err != nil {
		f.Release()
		return err
	}
	select {
	case d.slots <- struct{}{}:
	case <-d.ctx.Done():
		f.Release()
		return d.ctx.Err()
	}
	rg := f.RowGroup()
	d.wg.Go(func() {
		defer func() { <-d.slots }()
		err := decodeRowGroup(d.ctx, f, f.Size())
		if ferr := f.Err(); ferr != nil {
			err = ferr // the input's fault, not the file's
		}
		f.Release()
		if err != nil {
			d.fail(rg, err)
		}
	})
	return d.failed()
}

func (d *decodeChecks) fail(rg int, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err == nil || rg < d.errRG {
		d.err, d.errRG = fmt.Errorf("row group %d: %w", rg, err), rg
	}
}

func (d *decodeChecks) failed() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

// wait waits for every check started, and returns the error of the first
// row group that failed.
func (d *decodeChecks) wait() error {
	d.wg.Wait()
	return d.failed()
}
