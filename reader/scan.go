package reader

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/sovm/sop-pme/internal/flatdec"
	"github.com/sovm/sop-pme/internal/pqtypes"
	"github.com/sovm/sop-pme/pme"
)

// Scan returns a reader of the object's rows as Arrow records, projected and
// restricted by opts. It decodes WithParallelism row groups at once (by
// default GOMAXPROCS), returning their records in order; with one, it reads
// one row group at a time, and the next one's chunks ahead. Memory is bounded
// by the projected column chunks of the row groups in flight, and what
// decoding their batches allocates, together, by WithMemoryLimit. Each chunk is verified against storage_id
// before it is decrypted, and its pages are checked against the footer
// before they are decoded; a chunk that fails makes the record reader fail,
// with an error matching verify.ErrVerify, pme.ErrAuth or ErrFormat, before
// any of its rows are returned. An error of the decoder matches ErrDecode:
// no panic of the decoder escapes the record reader. ctx bounds the scan.
func (r *Reader) Scan(ctx context.Context, opts ...ScanOption) (array.RecordReader, error) {
	cfg := scanConfig{batch: DefaultBatchSize, maxValues: DefaultMaxValues(r.Size())}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	var cols []int
	if len(cfg.fieldIDs) > 0 {
		var err error
		if cols, err = r.leaves(cfg.fieldIDs); err != nil {
			return nil, err
		}
	}
	rgs := cfg.rowGroups
	for _, i := range rgs {
		if i < 0 || i >= r.nrg {
			return nil, fmt.Errorf("%w: %d of %d", ErrRowGroup, i, r.nrg)
		}
	}
	if rgs == nil {
		rgs = make([]int, r.nrg)
		for i := range rgs {
			rgs[i] = i
		}
	}
	// The column decoders must fit the memory limit before any is built.
	ncols := len(cols)
	if cols == nil {
		ncols = r.numLeaves
	}
	b := newBudget(r.alloc, cfg.memLimit, ncols)
	var first int64
	if len(rgs) > 0 {
		for j, c := range r.grid[rgs[0]] {
			if cols == nil || slices.Contains(cols, j) {
				first += c.Len
			}
		}
	}
	// The decoder's buffers come back for the next batches (bufPool).
	pool := newBufPool(r.alloc, b.total(first))
	b.mem = pool
	if !b.fits(first) {
		return nil, fmt.Errorf("%w: decoders for %d leaf columns need %d bytes, more than the limit of %d (the default makes room for up to %d); project fewer fields or raise WithMemoryLimit", ErrMemoryLimit, ncols, b.cols, b.total(first), DefaultMaxColumns)
	}
	values := &valueBudget{r: r, cols: cols, limit: cfg.maxValues}
	if len(rgs) > 0 {
		if err := values.take(rgs[0]); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	pf, view, err := r.open(ctx, b)
	if err != nil {
		cancel()
		return nil, err
	}
	// The scan decodes one row group at a time, each with a record reader
	// of its own, so that the fetcher knows which chunks come next. Parallel
	// stays false: arrow-go then decodes in the goroutine that calls Next,
	// where scanReader catches its panics. (It builds the readers of a
	// struct's children in goroutines, which read nothing.) The first row
	// group's reader is built here, for the schema and to fail early.
	var fr *pqarrow.FileReader
	var rr pqarrow.RecordReader
	want := r.schema // the scan's types
	err = catch(ErrDecode, func() error {
		var err error
		if fr, _, err = r.fileReader(pf, pqarrow.ArrowReadProperties{BatchSize: cfg.batch, Parallel: false}, b); err != nil {
			return fmt.Errorf("%w: %v", pme.ErrFormat, err)
		}
		want = r.readAs(fr, &cfg)
		if rr, err = fr.GetRecordReader(ctx, cols, rgs[:min(1, len(rgs))]); err != nil {
			return fmt.Errorf("%w: %w", ErrDecode, err)
		}
		return nil
	})
	if err == nil && b.overBuilt(first) {
		rr.Release()
		err = fmt.Errorf("%w: the column decoders need more than %d bytes", ErrMemoryLimit, b.total(first))
	}
	if err != nil {
		cancel()
		view.close()
		return nil, err
	}
	planScan(ctx, r.vr, r.grid, cols, rgs)
	sc := pqtypes.ScanSchema(want, rr.Schema())
	flat := r.planFlat(&cfg, cols, sc)
	if par := cfg.workers(len(rgs)); par > 1 {
		view.close()
		defer rr.Release()
		return r.scanParallel(ctx, cancel, &cfg, cols, rgs, b, pool, values, sc, par, flat), nil
	}
	f := startFetcher(ctx, view, r.grid, cols, rgs)
	sr := &scanReader{rr: rr, schema: sc, r: r, flat: flat, fr: fr, ctx: ctx, cols: cols, fetch: f, view: view, budget: b, values: values, charged: true,
		done: func() { cancel(); f.stop(); view.close(); pool.drain() }}
	if flat != nil {
		// Each row group, the first too, is decoded by flatdec if it
		// can be, else by a record reader built for it.
		rr.Release()
		sr.rr = nil
	}
	sr.refs.Store(1)
	return sr, nil
}

// readAs sets what arrow-go's file reader fr reads each column as, by the
// scan's options (DATE columns always as the int32 decoded, typed date32;
// WithNarrowDecimals, WithDictionaries), and returns the scan's schema. The
// sequential scan and every worker of a parallel one call it on each file
// reader they build, so that their batches have one type.
func (r *Reader) readAs(fr *pqarrow.FileReader, cfg *scanConfig) *arrow.Schema {
	want := r.schema
	pqtypes.ReadDates(r.meta.Schema, fr.Manifest)
	if cfg.narrow {
		want = arrow.NewSchema(r.narrowFields(), &r.kv)
		pqtypes.ReadNarrow(fr.Manifest, want.Fields())
	}
	if cfg.dict {
		want = arrow.NewSchema(r.dictFields(want.Fields(), cfg.dictAny), &r.kv)
		readDict(fr.Manifest, want.Fields())
	}
	return want
}

// leaves maps field IDs to the indices of the leaf columns under them.
func (r *Reader) leaves(ids []int32) ([]int, error) {
	var cols []int
	for _, id := range ids {
		found := false
		for _, f := range r.fields {
			if f.HasID && f.ID == id {
				for i := range f.NumLeaf {
					cols = append(cols, f.FirstLeaf+i)
				}
				found = true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("%w: %d", ErrField, id)
		}
	}
	slices.Sort(cols)
	return slices.Compact(cols), nil
}

// The default memory limit of a scan (see WithMemoryLimit).
const (
	// scanMemoryBase is the fixed part of the default limit, in bytes.
	scanMemoryBase = 40 << 20
	// scanMemoryPerByte is how many bytes the default limit allows per
	// byte of the column chunks the scan decodes.
	scanMemoryPerByte = 16
	// columnCost is what the decoder of one leaf column costs, in bytes,
	// whatever it decodes, as measured for arrow-go v18.8.0 (55 to 72 KiB:
	// a 16 KiB buffer to peek at page headers, a 16 KiB page buffer, level
	// and dictionary decoders of 4 KiB each, builders).
	columnCost = 64 << 10
)

// budget is the allocator of a scan's decoder, and its memory limit. The
// limit covers the scan's column decoders (columnCost each, charged when the
// scan starts) and what decoding one batch allocates and does not free.
//
// The budget passes every allocation to the caller's allocator and counts
// the bytes allocated and not freed since the current batch began; a batch
// that would go beyond what the limit leaves panics with errBudget before it
// allocates, and the scan boundary (scanReader.Next) turns that into an
// error matching ErrMemoryLimit. The decoder runs in the goroutine that
// calls Next (arrow-go reads columns in parallel only when asked to, which
// Scan never does), so the panic unwinds to that Next. Outside Next (while
// arrow-go builds its column readers, in goroutines of its own) the budget
// only counts.
//
// The default limit (DefaultMemoryLimit) is scanMemoryBase, plus
// columnCost per leaf column (up to DefaultMaxColumns of them), plus
// scanMemoryPerByte per byte of the column chunks the columns decode: those
// each holds when the batch begins, and those it reads during the batch. A
// decoded batch is bounded by what the scan reads, whatever the object
// claims.
type budget struct {
	mem     memory.Allocator
	fixed   int64 // the limit set by WithMemoryLimit, or 0 for the default
	cols    int64 // columnCost × the scan's leaf columns
	columns int   // the scan's leaf columns

	used  atomic.Int64 // bytes allocated and not freed in this batch
	limit atomic.Int64 // what this batch may use
	armed atomic.Bool

	mu   sync.Mutex
	held map[int]int64 // column → bytes of the chunk it decodes
}

// errBudget is the panic value of a batch that goes beyond its limit.
type errBudget struct{ want, limit int64 }

func newBudget(mem memory.Allocator, fixed int64, columns int) *budget {
	b := &budget{mem: mem, fixed: fixed, cols: columnCost * int64(columns), columns: columns, held: map[int]int64{}}
	b.limit.Store(b.total(0) - b.cols)
	return b
}

// total returns the scan's limit when its columns hold chunks of held bytes.
func (b *budget) total(held int64) int64 {
	if b.fixed > 0 {
		return b.fixed
	}
	return DefaultMemoryLimit(b.columns, held)
}

// fits reports whether the scan's column decoders fit its limit when they
// hold chunks of held bytes.
func (b *budget) fits(held int64) bool { return b.cols <= b.total(held) }

// begin starts a batch: nothing is counted yet, and the batch may use what
// the limit leaves after the column decoders.
func (b *budget) begin() {
	b.mu.Lock()
	var held int64
	for _, n := range b.held {
		held += n
	}
	b.mu.Unlock()
	b.limit.Store(b.total(held) - b.cols)
	b.used.Store(0)
	b.armed.Store(true)
}

// end ends a batch.
func (b *budget) end() { b.armed.Store(false) }

// chunk records that column col now decodes a chunk of n bytes.
func (b *budget) chunk(col int, n int64) {
	b.mu.Lock()
	b.held[col] = n
	b.mu.Unlock()
	if b.fixed == 0 {
		b.limit.Add(scanMemoryPerByte * n)
	}
}

// overBuilt reports whether building the column decoders, which
// columnCost accounts for, allocated more than the whole limit for chunks
// of held bytes.
func (b *budget) overBuilt(held int64) bool { return b.used.Load() > b.total(held) }

func (b *budget) charge(n int) {
	if used := b.used.Add(int64(n)); n > 0 && used > b.limit.Load() && b.armed.Load() {
		b.used.Add(-int64(n))
		panic(errBudget{want: used, limit: b.limit.Load()})
	}
}

func (b *budget) Allocate(n int) []byte {
	b.charge(n)
	return b.mem.Allocate(n)
}

// AllocateUncleared is Allocate of a buffer flatdec overwrites whole
// (flatdec.UnclearedAllocator): the pool's, not cleared, of
// poolClass(n) bytes, which it charges.
func (b *budget) AllocateUncleared(n int) []byte {
	b.charge(poolClass(n))
	if u, ok := b.mem.(flatdec.UnclearedAllocator); ok {
		return u.AllocateUncleared(n)
	}
	return b.mem.Allocate(n)
}

// Reallocate counts the new buffer whole while the old one is copied into
// it: both are live then.
func (b *budget) Reallocate(n int, old []byte) []byte {
	b.charge(n)
	out := b.mem.Reallocate(n, old)
	b.used.Add(-int64(len(old)))
	return out
}

func (b *budget) Free(buf []byte) {
	b.used.Add(-int64(len(buf)))
	b.mem.Free(buf)
}

// scanReader is the RecordReader of a Scan, and the boundary between
// arrow-go's decoder and the caller. Its errors are typed: a chunk that
// fails verification or authentication, or whose pages break a rule (see
// checkPages), gives the view's error; a batch beyond the memory limit
// gives ErrMemoryLimit; any other error or panic of the decoder gives
// ErrDecode. After an error the reader stays failed: Next returns false
// and Err the error. When its last reference is released, the scan's
// prefetches stop and their plaintext is cleared.
type scanReader struct {
	rr      rowGroupReader // the current row group's, or nil
	loaded  bool           // rr's row group is in the view
	charged bool           // the values of the next row group were charged (by Scan)
	schema  *arrow.Schema
	r       *Reader
	flat    *flatPlan // the scan's fast path, or nil
	fr      *pqarrow.FileReader
	ctx     context.Context
	cols    []int
	fetch   *fetcher
	view    *plainView
	budget  *budget
	values  *valueBudget
	refs    atomic.Int64
	done    func()
	err     error
	// The current batch in the scan's types (see retype).
	out arrow.RecordBatch
}

var _ array.RecordReader = (*scanReader)(nil)

func (s *scanReader) Schema() *arrow.Schema { return s.schema }

// Next decodes the next batch: of the current row group, or else of the
// next one the fetcher hands over, with a record reader of its own.
func (s *scanReader) Next() (ok bool) {
	if s.err != nil {
		return false
	}
	if s.out != nil {
		s.out.Release()
		s.out = nil
	}
	defer func() {
		s.budget.end()
		if p := recover(); p != nil {
			s.err, ok = s.recovered(p), false
		}
	}()
	for {
		// The caller's deadline ends the scan between any two batches,
		// however many rows a row group claims.
		if err := s.ctx.Err(); err != nil {
			s.err = err
			return false
		}
		if s.rr != nil && s.loaded {
			s.budget.begin()
			if s.rr.Next() {
				if s.err = s.retype(); s.err != nil {
					return false
				}
				return true
			}
			s.budget.end()
			if err := s.rr.Err(); err != nil {
				s.err = s.typed(err)
				return false
			}
			s.rr.Release()
			s.rr, s.loaded = nil, false
		}
		d, more := <-s.fetch.out
		if !more {
			if err := s.ctx.Err(); err != nil {
				s.err = err
			}
			return false
		}
		if s.charged {
			s.charged = false // the first row group's, by Scan
		} else {
			if err := s.values.take(d.rg); err != nil {
				s.view.setCurrent(d) // so that its chunks are cleared
				s.err = err
				return false
			}
		}
		s.view.setCurrent(d)
		if s.rr == nil {
			// Built outside a batch: the column decoders are charged to the
			// budget when the scan starts (columnCost each).
			err := catch(ErrDecode, func() error {
				var err error
				s.rr, err = s.r.rowGroupReader(s.ctx, s.flat, s.fr, s.view, s.cols, d.rg, s.budget)
				return err
			})
			if err != nil {
				s.err = err
				return false
			}
		}
		s.loaded = true
	}
}

// typed returns the error of the scan: the view's if it failed (its error
// is typed, and arrow-go may have wrapped it without %w), else err as an
// ErrDecode.
func (s *scanReader) typed(err error) error { return typedErr(s.view, err) }

// typedErr is scanReader.typed of a decoder reading view.
func typedErr(view *plainView, err error) error {
	if verr := view.failure(); verr != nil {
		return verr
	}
	return fmt.Errorf("%w: %w", ErrDecode, err)
}

// recovered turns a panic of the decoder into the scan's error.
func (s *scanReader) recovered(p any) error { return recoveredErr(s.view, p) }

// recoveredErr is scanReader.recovered of a decoder reading view.
func recoveredErr(view *plainView, p any) error {
	if b, ok := p.(errBudget); ok {
		return fmt.Errorf("%w: a batch needs more than %d bytes (%d asked); lower WithBatchSize or raise WithMemoryLimit", ErrMemoryLimit, b.limit, b.want)
	}
	if verr := view.failure(); verr != nil {
		return verr
	}
	if err, ok := p.(error); ok {
		return fmt.Errorf("%w: decoder panicked: %w", ErrDecode, err)
	}
	return fmt.Errorf("%w: decoder panicked: %v", ErrDecode, p)
}

// RecordBatch returns the current batch, or nil after an error.
func (s *scanReader) RecordBatch() arrow.RecordBatch {
	if s.err != nil || s.rr == nil {
		return nil
	}
	return s.out
}

// Record returns the current batch.
//
// Deprecated: use RecordBatch.
func (s *scanReader) Record() arrow.RecordBatch { return s.RecordBatch() }

// Err returns the error that stopped the scan, if any.
func (s *scanReader) Err() error { return s.err }

func (s *scanReader) Retain() { s.refs.Add(1) }

func (s *scanReader) Release() {
	if s.refs.Add(-1) != 0 {
		return
	}
	defer s.done()
	if s.out != nil {
		s.out.Release()
		s.out = nil
	}
	defer func() {
		// arrow-go's readers may be left inconsistent by a panic they
		// raised; releasing them must not raise another.
		_ = recover()
	}()
	if s.rr != nil {
		s.rr.Release()
	}
}

// catch runs f, turning a panic into an error wrapping sentinel.
func catch(sentinel error, f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			if e, ok := p.(error); ok {
				err = fmt.Errorf("%w: decoder panicked: %w", sentinel, e)
			} else {
				err = fmt.Errorf("%w: decoder panicked: %v", sentinel, p)
			}
		}
	}()
	return f()
}
