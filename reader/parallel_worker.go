package reader

import (
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/sovm/sop-pme/internal/pqtypes"
	"github.com/sovm/sop-pme/pme"
)

// The workers of a parallel scan (see WithParallelism).

// worker is one decoding goroutine of a parallel scan, with its own view,
// arrow-go file reader and allocator.
type worker struct {
	s    *parScan
	mem  *workerMem
	view *plainView
	fr   *pqarrow.FileReader
	f    *fetcher // for rowGroup and fill; it runs no goroutine
}

func (s *parScan) work() {
	defer s.workers.Done()
	w := &worker{s: s, mem: newWorkerMem(s, s.pool)}
	// The view's budget only sizes the page checks (checkPages), as the
	// sequential scan's does; the decoder allocates through w.mem.
	pf, view, err := s.r.openWith(s.ctx, newBudget(s.r.alloc, s.memCap, s.ncols), w.mem)
	if err == nil {
		defer view.close()
		w.view = view
		err = catch(ErrDecode, func() error {
			var err error
			if w.fr, _, err = s.r.fileReader(pf, pqarrow.ArrowReadProperties{BatchSize: s.batch, Parallel: false}, w.mem); err != nil {
				return fmt.Errorf("%w: %v", pme.ErrFormat, err)
			}
			s.r.readAs(w.fr, &s.cfg)
			return nil
		})
	}
	if err != nil {
		if t := s.take(); t != nil {
			s.finish(t, err)
		}
		return
	}
	w.f = &fetcher{view: view, grid: s.r.grid, cols: s.cols}
	for t := s.take(); t != nil; t = s.take() {
		if !w.run(t) {
			return
		}
	}
}

// run fetches, verifies and opens task t's chunks, then decodes them,
// queueing the batches for the caller. It reports false if the scan
// stopped.
func (w *worker) run(t *rgTask) bool {
	s := w.s
	// The row group before is done: its plaintext is cleared before the
	// next is opened, so that a worker holds one row group's.
	w.view.setCurrent(nil)
	d := w.f.rowGroup(t.rg)
	if !w.f.fill(s.ctx, d) {
		var err error
		for _, c := range d.spans {
			if err = d.chunks[c.Off].err; err != nil {
				break
			}
		}
		d.clear(w.view)
		s.finish(t, err)
		return s.ctx.Err() == nil
	}
	w.view.setCurrent(d)
	for {
		again, err := w.decode(t)
		if err == errStop {
			return false
		}
		if !again {
			gaveUp, stopped := w.await(t)
			if stopped {
				return false
			}
			if !gaveUp {
				s.finish(t, err)
				return true
			}
		}
		// Given up to make room: decode it again as the head.
		s.mu.Lock()
		for !s.stopped && s.head != t.seq {
			s.cond.Wait()
		}
		stopped := s.stopped
		s.mu.Unlock()
		if stopped {
			return false
		}
	}
}

// await waits, for a row group ahead of the head that the worker has
// decoded, until the caller has taken its queued batches or it is the
// head: the worker stays with the memory its batches hold, and gives the
// row group up (gaveUp, to decode it again as the head) if the head needs
// that room.
func (w *worker) await(t *rgTask) (gaveUp, stopped bool) {
	s := w.s
	s.mu.Lock()
	for len(t.queue) > 0 && t.seq != s.head {
		if s.stopped {
			s.mu.Unlock()
			return false, true
		}
		if s.yield {
			s.mu.Unlock()
			return w.giveUp(t), false
		}
		s.cond.Wait()
	}
	s.mu.Unlock()
	return false, false
}

// errStop is decode's error when the scan stopped.
var errStop = errors.New("reader: the scan stopped")

// decode decodes task t's row group, whose chunks the view holds, with a
// record reader of its own, and queues its batches. again reports that
// the worker gave the row group up to make room for the head's.
func (w *worker) decode(t *rgTask) (again bool, err error) {
	s := w.s
	s.mu.Lock()
	for {
		if s.stopped {
			s.mu.Unlock()
			return false, errStop
		}
		limit := s.limit()
		if t.seq != s.head && (s.yield || s.inUse+s.b.cols > limit) {
			s.mu.Unlock()
			return true, nil
		}
		if s.inUse+s.b.cols <= limit {
			if t.seq == s.head {
				s.yield = false
			}
			break
		}
		s.yield = true
		s.cond.Broadcast()
		s.cond.Wait()
	}
	w.mem.task, w.mem.dec = t, s.b.cols
	s.inUse += s.b.cols
	skip := t.skip
	s.mu.Unlock()

	var rr rowGroupReader
	defer func() {
		defer func() { _ = recover() }() // see scanReader.Release
		if rr != nil {
			rr.Release()
		}
	}()
	// Whatever ends the row group, the worker's memory is uncounted.
	defer func() {
		s.mu.Lock()
		w.mem.drop()
		s.mu.Unlock()
	}()
	err = catch(ErrDecode, func() error {
		var err error
		rr, err = s.r.rowGroupReader(s.ctx, s.flat, w.fr, w.view, s.cols, t.rg, w.mem)
		return err
	})
	if err != nil {
		return false, err
	}
	for n := 0; ; n++ {
		ok, p := w.next(rr)
		switch p.(type) {
		case nil:
		case errYield:
			return w.giveUp(t), nil
		case errStopped:
			return false, errStop
		default:
			return false, recoveredErr(w.view, p)
		}
		if !ok {
			if err := rr.Err(); err != nil {
				return false, typedErr(w.view, err)
			}
			return false, nil
		}
		var rec arrow.RecordBatch
		if err := catch(ErrDecode, func() error {
			var err error
			if rec, err = pqtypes.Record(s.schema, rr.RecordBatch()); err != nil {
				return fmt.Errorf("%w: %w", ErrDecode, err)
			}
			return nil
		}); err != nil {
			return false, err
		}
		if n < skip {
			s.mu.Lock()
			s.inUse -= w.mem.settle()
			s.mu.Unlock()
			rec.Release()
			continue
		}
		switch w.push(t, rec) {
		case errYield{}:
			rec.Release()
			return w.giveUp(t), nil
		case errStopped{}:
			rec.Release()
			return false, errStop
		}
	}
}

// next decodes the next batch of rr, armed: a panic is returned.
func (w *worker) next(rr rowGroupReader) (ok bool, p any) {
	s := w.s
	s.mu.Lock()
	// What building the record reader, or the batch before, allocated
	// and kept is the column decoders' (columnCost each, counted while
	// the worker holds them), as for the sequential scan's budget.
	s.inUse -= w.mem.settle()
	w.mem.armed = true
	s.mu.Unlock()
	defer func() {
		p = recover()
		s.mu.Lock()
		w.mem.armed = false
		s.mu.Unlock()
	}()
	return rr.Next(), nil
}

// push queues rec for the caller, waiting while t's queue is full; it
// returns errYield or errStopped if it did not.
func (w *worker) push(t *rgTask, rec arrow.RecordBatch) any {
	s := w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(t.queue) >= queueDepth {
		if s.stopped {
			return errStopped{}
		}
		if s.yield && t.seq != s.head {
			return errYield{}
		}
		s.cond.Wait()
	}
	t.queue = append(t.queue, queuedBatch{rec: rec, bytes: w.mem.settle()})
	s.cond.Broadcast()
	return nil
}

// giveUp drops what the worker decoded of t and the caller has not taken;
// a second decoding skips what it took. It returns true.
func (w *worker) giveUp(t *rgTask) bool {
	s := w.s
	s.mu.Lock()
	q := t.queue
	t.queue = nil
	for _, b := range q {
		s.inUse -= b.bytes
	}
	t.skip = t.taken
	s.gaveUp++
	s.cond.Broadcast()
	s.mu.Unlock()
	for _, b := range q {
		b.rec.Release()
	}
	return true
}
