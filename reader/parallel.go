package reader

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// WithParallelism sets how many row groups a scan decodes at once (default
// runtime.GOMAXPROCS(0), and never more than the scan's row groups). Each
// row group in flight is fetched, verified against storage_id, opened and
// checked whole (Section 11.10) before arrow-go decodes it, with a record
// reader of its own, on a goroutine of the scan's; the records come out in
// the scan's row-group order, as a sequential scan returns them. A row group
// that fails verification, authentication or a check fails the scan at that
// row group: the rows of the row groups before it come out exact, and none
// of its own. The row groups in flight share the scan's one memory limit
// (WithMemoryLimit; see parallel_mem.go): a parallel scan fails no batch
// that a sequential one decodes and uses no more memory than it, beyond the
// plaintext of n row groups' projected chunks, against two row groups'. A
// panic of the decoder is an ErrDecode error, the context stops every
// worker between two allocations, and Release waits for them all.
// WithParallelism(1) is the sequential scan, which decodes in the goroutine
// that calls Next while a goroutine fetches the next row group ahead.
func WithParallelism(n int) ScanOption {
	return func(c *scanConfig) error {
		if n <= 0 {
			return fmt.Errorf("%w: parallelism %d", ErrOption, n)
		}
		c.parallel = n
		return nil
	}
}

// workers returns how many row groups a scan of rgs row groups decodes at
// once.
func (c *scanConfig) workers(rgs int) int {
	n := c.parallel
	if n == 0 {
		n = runtime.GOMAXPROCS(0)
	}
	return max(1, min(n, rgs))
}

// rgTask is one row group of a parallel scan (fields under parScan.mu).
type rgTask struct {
	seq   int   // its place in the scan's order
	rg    int   // its index in the object
	held  int64 // the bytes of its projected chunks
	queue []queuedBatch
	taken int  // batches the caller has taken
	skip  int  // batches a worker decoding it again drops: the caller has them
	done  bool // no batch comes after those queued
	err   error
}

// queuedBatch is a decoded batch and the bytes counted for it.
type queuedBatch struct {
	rec   arrow.RecordBatch
	bytes int64
}

// queueDepth is how many decoded batches of a row group wait for the
// caller: a worker decodes the next while one waits.
const queueDepth = 1

// parScan is the RecordReader of a Scan with WithParallelism above 1. The
// caller takes the batches of the head (the row group it reads); workers
// decode the row groups after it, at most par of them in flight.
type parScan struct {
	r      *Reader
	ctx    context.Context
	cancel context.CancelFunc
	cols   []int
	rgs    []int
	par    int
	batch  int64
	ncols  int
	memCap int64 // WithMemoryLimit, or 0
	b      *budget
	pool   *bufPool // the allocator under the workers'
	values *valueBudget
	schema *arrow.Schema
	cfg    scanConfig // what the file readers read each column as (readAs)
	flat   *flatPlan  // the fast path (flatscan.go), or nil

	mu        sync.Mutex
	cond      *sync.Cond
	tasks     []*rgTask // dispatched, in order
	head      int       // the task the caller reads
	inUse     int64     // see parallel_mem.go
	peakInUse int64
	yield     bool // the head waits for memory the others hold
	stopped   bool // Release, or the context
	noMore    bool // a row group failed: dispatch no more
	gaveUp    int  // row groups given up to make room (for tests)
	workers   sync.WaitGroup

	// The caller's side.
	refs atomic.Int64
	out  arrow.RecordBatch
	err  error
}

var _ array.RecordReader = (*parScan)(nil)

// scanParallel starts a parallel scan; Scan has checked the options, the
// memory of the column decoders, the values of the first row group, and
// built the first row group's record reader, whose schema is schema.
func (r *Reader) scanParallel(ctx context.Context, cancel context.CancelFunc, cfg *scanConfig, cols, rgs []int, b *budget, pool *bufPool, values *valueBudget, schema *arrow.Schema, par int, flat *flatPlan) *parScan {
	s := &parScan{r: r, ctx: ctx, cancel: cancel, cfg: *cfg, cols: cols, rgs: rgs, par: par, batch: cfg.batch, pool: pool,
		ncols: b.columns, memCap: cfg.memLimit, b: b, values: values, schema: schema, flat: flat}
	s.cond = sync.NewCond(&s.mu)
	s.refs.Store(1)
	context.AfterFunc(ctx, s.stop)
	s.workers.Add(par)
	for range par {
		go s.work()
	}
	return s
}

// stop ends the workers' row groups.
func (s *parScan) stop() {
	s.mu.Lock()
	s.stopped = true
	s.cond.Broadcast()
	s.mu.Unlock()
}

// held returns the bytes of row group rg's projected chunks.
func (s *parScan) held(rg int) int64 {
	var n int64
	for j, c := range s.r.grid[rg] {
		if s.cols == nil || slices.Contains(s.cols, j) {
			n += c.Len
		}
	}
	return n
}

// limit returns the scan's memory limit (under s.mu): the sequential
// scan's for the head's row group.
func (s *parScan) limit() int64 {
	switch {
	case s.head < len(s.tasks):
		return s.b.total(s.tasks[s.head].held)
	case s.head < len(s.rgs):
		return s.b.total(s.held(s.rgs[s.head]))
	}
	return s.b.total(0)
}

// take dispatches the next row group to a worker, in order, once it is
// within par of the head, charging its values; nil when there is none.
func (s *parScan) take() *rgTask {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if s.stopped || s.noMore || len(s.tasks) == len(s.rgs) {
			return nil
		}
		if len(s.tasks) < s.head+s.par {
			break
		}
		s.cond.Wait()
	}
	seq := len(s.tasks)
	t := &rgTask{seq: seq, rg: s.rgs[seq], held: s.held(s.rgs[seq])}
	s.tasks = append(s.tasks, t)
	s.cond.Broadcast()
	if seq > 0 { // Scan charged the first
		if err := s.values.take(t.rg); err != nil {
			t.done, t.err, s.noMore = true, err, true
			return nil
		}
	}
	return t
}

// finish ends task t with err.
func (s *parScan) finish(t *rgTask, err error) {
	s.mu.Lock()
	t.done, t.err = true, err
	if err != nil {
		s.noMore = true
	}
	s.cond.Broadcast()
	s.mu.Unlock()
}

func (s *parScan) Schema() *arrow.Schema { return s.schema }

// Next returns the next batch in the scan's order: the head's, or, once
// the head is done, the next row group's.
func (s *parScan) Next() bool {
	if s.err != nil {
		return false
	}
	if s.out != nil {
		s.out.Release()
		s.out = nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		// The caller's deadline ends the scan between any two batches.
		if err := s.ctx.Err(); err != nil {
			s.err = err
			return false
		}
		if s.head == len(s.rgs) {
			return false
		}
		if s.head < len(s.tasks) {
			t := s.tasks[s.head]
			if len(t.queue) > 0 {
				q := t.queue[0]
				t.queue = slices.Delete(t.queue, 0, 1)
				t.taken++
				s.inUse -= q.bytes
				s.cond.Broadcast()
				s.out = q.rec
				return true
			}
			if t.done {
				if t.err != nil {
					s.err = t.err
					return false
				}
				s.tasks[s.head] = &rgTask{seq: t.seq, held: t.held, done: true}
				s.head++
				s.cond.Broadcast()
				continue
			}
		} else if s.noMore {
			return false
		}
		s.cond.Wait()
	}
}

// RecordBatch returns the current batch, or nil after an error.
func (s *parScan) RecordBatch() arrow.RecordBatch {
	if s.err != nil {
		return nil
	}
	return s.out
}

// Record returns the current batch.
//
// Deprecated: use RecordBatch.
func (s *parScan) Record() arrow.RecordBatch { return s.RecordBatch() }

// Err returns the error that stopped the scan, if any.
func (s *parScan) Err() error { return s.err }

func (s *parScan) Retain() { s.refs.Add(1) }

// Release, with the last reference, stops the workers and waits for them;
// each clears the plaintext it holds.
func (s *parScan) Release() {
	if s.refs.Add(-1) != 0 {
		return
	}
	s.cancel()
	s.stop()
	s.workers.Wait()
	s.mu.Lock()
	var recs []arrow.RecordBatch
	for _, t := range s.tasks[s.head:] {
		for _, q := range t.queue {
			recs = append(recs, q.rec)
		}
		t.queue = nil
	}
	s.mu.Unlock()
	for _, r := range recs {
		r.Release()
	}
	if s.out != nil {
		s.out.Release()
		s.out = nil
	}
	s.pool.drain()
}
