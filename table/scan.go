package table

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
)

// Scan returns the records of objects, in their order, at schema, the table's
// schema: each object's columns matched to the table's by field ID at every
// depth, as an Adapter does (SOP-PME-1 Section 11.2). WithFields projects it
// to the columns containing some field IDs; each object's scan reads only the
// columns the table's projection needs.
//
// Every object is read through reader.Open and (*reader.Reader).Scan: its
// footer and every column chunk it reads are verified against its storage_id
// before they are decrypted, and nothing is answered from its footer (Section
// 11.10). Objects are opened ahead, up to WithPrefetch, while the current one
// decodes. An object that fails (no key, a range that does not verify, a
// page that does not decode, a schema that does not match) fails the scan:
// the record reader's Err is an *ObjectError naming it, and the records
// returned before are exactly the rows of the objects before it and of its
// row groups before the failing one (the reader releases no row of a row
// group before the whole group has verified). A Scan does not make the
// objects count as verified; Verify does.
//
// ctx bounds the scan. Release ends it early: it cancels the objects opened
// ahead and waits for every goroutine the scan started to finish its work
// (package reader reuses the goroutines of the objects' fetchers: one left
// idle exits after 50 ms).
func Scan(ctx context.Context, src verify.Source, keys reader.KeyResolver, schema *arrow.Schema, objects []storageid.ID, opts ...Option) (array.RecordReader, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if schema == nil {
		return nil, fmt.Errorf("%w: nil schema", ErrSchema)
	}
	out, err := project(schema, cfg.fields)
	if err != nil {
		return nil, err
	}
	caller := ctx
	ctx, cancel := context.WithCancel(ctx)
	s := &scanner{
		caller:  caller,
		ctx:     ctx,
		cancel:  cancel,
		src:     src,
		keys:    keys,
		schema:  out,
		cfg:     cfg,
		objects: slices.Clone(objects),
		slots:   make([]chan opened, len(objects)),
		tokens:  make(chan struct{}, cfg.prefetch+1),
	}
	// Every object's reader allocates through the scan's recycler, so that
	// the next objects reuse what one frees; a reader.WithAllocator among
	// WithReaderOptions comes after, and wins.
	s.alloc = newRecycler(cfg.mem, recycleMax)
	s.ropts = append([]reader.Option{reader.WithAllocator(s.alloc)}, cfg.ropts...)
	s.refs.Store(1)
	for i := range s.slots {
		s.slots[i] = make(chan opened, 1)
	}
	s.wg.Add(1)
	go s.produce()
	return s, nil
}

// project returns the top-level fields of schema that hold any of ids (every
// field if ids is nil).
func project(schema *arrow.Schema, ids []int32) (*arrow.Schema, error) {
	if ids == nil {
		return schema, nil
	}
	var holds func(f arrow.Field, id int32) bool
	holds = func(f arrow.Field, id int32) bool {
		if fid, ok := FieldID(f); ok && fid == id {
			return true
		}
		for _, c := range Children(f.Type) {
			if holds(c, id) {
				return true
			}
		}
		return false
	}
	keep := make([]bool, schema.NumFields())
	for _, id := range ids {
		found := false
		for i, f := range schema.Fields() {
			if holds(f, id) {
				keep[i], found = true, true
				break
			}
		}
		if !found {
			return nil, &ColumnError{Column: fmt.Sprint(id), Err: fmt.Errorf("%w: no field with that ID", ErrColumn)}
		}
	}
	var fields []arrow.Field
	for i, f := range schema.Fields() {
		if keep[i] {
			fields = append(fields, f)
		}
	}
	md := schema.Metadata()
	return arrow.NewSchema(fields, &md), nil
}

// An opened object: its scan and adapter, or why it failed.
type opened struct {
	rr  array.RecordReader
	ad  *Adapter
	err error
}

type scanner struct {
	refs   atomic.Int64
	caller context.Context // the caller's
	ctx    context.Context // the caller's, with the scan's cancel
	cancel context.CancelFunc
	src    verify.Source
	keys   reader.KeyResolver
	schema *arrow.Schema
	cfg    *config
	alloc  *recycler
	ropts  []reader.Option

	objects []storageid.ID
	slots   []chan opened // slots[i] receives object i once opened
	tokens  chan struct{} // one per object opened and not yet done
	next    atomic.Int64  // the next object to open
	wg      sync.WaitGroup

	// The consumer's state, used by the goroutine that calls Next.
	i      int     // the current object
	cur    *opened // its scan, once received
	rec    arrow.RecordBatch
	err    error
	closed bool
}

// produce starts the scan's openers: prefetch+1 long-lived goroutines (no
// more than there are objects), rather than one per object, so that each
// object does not pay for a goroutine's start and the growth of its stack
// through an Open. Each opener takes a token, then the next object in
// order, and opens it; the consumer returns the token once done with the
// object, so at most prefetch+1 objects are open at once, and the object
// the consumer waits for is always being opened.
func (s *scanner) produce() {
	defer s.wg.Done()
	n := min(cap(s.tokens), len(s.objects))
	s.wg.Add(n)
	for range n {
		go s.opener()
	}
}

// opener opens objects until there are none left or the scan ends.
func (s *scanner) opener() {
	defer s.wg.Done()
	for {
		select {
		case s.tokens <- struct{}{}:
		case <-s.ctx.Done():
			return
		}
		i := int(s.next.Add(1)) - 1
		if i >= len(s.objects) {
			<-s.tokens
			return
		}
		s.slots[i] <- s.open(i)
	}
}

func (s *scanner) open(i int) opened {
	r, err := reader.Open(s.ctx, s.src, s.objects[i], s.keys, s.ropts...)
	if err != nil {
		return opened{err: err}
	}
	ad, err := NewAdapter(s.schema, r.Schema(), WithAllocator(s.alloc))
	if err != nil {
		return opened{err: err}
	}
	if len(ad.Fields()) == 0 { // an object without columns: no rows
		return opened{ad: ad}
	}
	sopts := make([]reader.ScanOption, 0, len(s.cfg.sopts)+2)
	// The footer's row count sizes the batches of a small object, so that
	// its decoders reserve room for its rows, not DefaultBatchSize's: a
	// hint, which decides no value (Section 11.10; the scan checks the
	// pages against it). WithScanOptions's WithBatchSize overrides it.
	if n, err := r.FooterRowCount(); err == nil && n > 0 && n < reader.DefaultBatchSize {
		sopts = append(sopts, reader.WithBatchSize(n))
	}
	sopts = append(append(sopts, s.cfg.sopts...), reader.WithFields(ad.Fields()...))
	rr, err := r.Scan(s.ctx, sopts...)
	if err != nil {
		return opened{err: err}
	}
	return opened{rr: rr, ad: ad}
}

func (s *scanner) Schema() *arrow.Schema { return s.schema }

func (s *scanner) Next() bool {
	if s.rec != nil {
		s.rec.Release()
		s.rec = nil
	}
	if s.err != nil || s.closed {
		return false
	}
	for {
		if s.cur == nil {
			if s.i == len(s.objects) {
				s.shutdown()
				return false
			}
			select {
			case o := <-s.slots[s.i]:
				s.cur = &o
			case <-s.ctx.Done():
				s.fail(s.ctx.Err())
				return false
			}
			if s.cur.err != nil {
				s.fail(s.cur.err)
				return false
			}
		}
		if s.cur.rr != nil && s.cur.rr.Next() {
			rec, err := s.cur.ad.Adapt(s.cur.rr.RecordBatch())
			if err != nil {
				s.fail(err)
				return false
			}
			if rec.NumRows() == 0 {
				rec.Release()
				continue
			}
			s.rec = rec
			return true
		}
		var err error
		if s.cur.rr != nil {
			err = s.cur.rr.Err()
			s.cur.rr.Release()
		}
		s.cur = nil
		if err != nil {
			s.fail(err)
			return false
		}
		<-s.tokens // the object is done: another may be opened
		s.i++
	}
}

// fail ends the scan with err, about the current object unless it is the
// caller's context ending.
func (s *scanner) fail(err error) {
	if s.caller.Err() != nil {
		s.err = context.Cause(s.caller)
	} else {
		s.err = &ObjectError{Index: s.i, ID: s.objects[s.i], Err: err}
	}
	s.shutdown()
}

func (s *scanner) RecordBatch() arrow.RecordBatch { return s.rec }

// Deprecated: use RecordBatch.
func (s *scanner) Record() arrow.RecordBatch { return s.rec }

// Err returns the error that ended the scan: an *ObjectError, or the
// context's error; nil at the end of the last object.
func (s *scanner) Err() error { return s.err }

func (s *scanner) Retain() { s.refs.Add(1) }

// Release drops a reference; the last one ends the scan, cancelling the
// objects opened ahead and waiting for the scan's goroutines.
func (s *scanner) Release() {
	if s.refs.Add(-1) != 0 {
		return
	}
	if s.rec != nil {
		s.rec.Release()
		s.rec = nil
	}
	s.shutdown()
}

// shutdown cancels what is in flight, waits for the goroutines and releases
// the scans opened and never read.
func (s *scanner) shutdown() {
	if s.closed {
		return
	}
	s.closed = true
	s.cancel()
	s.wg.Wait()
	if s.cur != nil && s.cur.rr != nil {
		s.cur.rr.Release()
	}
	s.cur = nil
	for _, c := range s.slots {
		select {
		case o := <-c:
			if o.rr != nil {
				o.rr.Release()
			}
		default:
		}
	}
	s.alloc.drain()
}
