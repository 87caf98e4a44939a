package sopsql

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/duckdb/duckdb-go/v2"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/writer"
)

// A Table is a table as sop_scan('NAME') reads it: a sequence of immutable
// SOP-PME-1 objects, in append order, whose schemas evolved by Parquet
// field ID (SOP-PME-1 Section 11.2: field IDs are stable, so a column is
// its ID, not its name or position).
type Table struct {
	// Schema is the table's current schema: sop_scan's columns, names and
	// types. Every top-level field carries its Parquet field ID in its
	// metadata under writer.FieldIDKey ("PARQUET:field_id").
	Schema *arrow.Schema
	// Objects are the table's objects, in append order.
	Objects []TableObject
}

// A TableObject is one object of a table.
type TableObject struct {
	ID storageid.ID
	// Rows is the catalog's row count of the object: the planner's
	// cardinality estimate only, never an answer (Section 11.10: every
	// value released is computed over materialised column data).
	Rows int64
}

// Tables resolves the table names sop_scan is given (WithTables). An
// implementation must be safe for concurrent use: queries bind sop_scan
// from several connections at once.
type Tables interface {
	// Names returns the names of the tables (WithTableViews makes a view
	// of each).
	Names(ctx context.Context) ([]string, error)
	// Table returns the table name, or an error matching ErrNoTable if
	// there is none.
	Table(ctx context.Context, name string) (*Table, error)
}

// tableLookahead is how many objects beyond the one being read a table
// scan opens (and whose footers it verifies) ahead of the threads.
const tableLookahead = 1

// bindTable binds sop_scan('NAME'): the table's current schema is the
// scan's columns; no object is opened before the scan reaches it.
func (fn *functions) bindTable(ctx context.Context, name string, p scanParams, sink *errSink) (duckdb.ParallelChunkTableSource, error) {
	t, err := fn.tables.Table(ctx, name)
	if err != nil {
		if errors.Is(err, ErrNoTable) {
			return nil, fmt.Errorf("sopsql: %q is neither a storage_id nor a table: %w", name, err)
		}
		return nil, fmt.Errorf("sopsql: table %q: %w", name, err)
	}
	if t == nil || t.Schema == nil {
		return nil, fmt.Errorf("%w: table %q has no schema", ErrType, name)
	}
	if p.rowGroups != nil {
		return nil, fmt.Errorf("%w: row_groups is for one object; %q is a table", ErrArgument, name)
	}
	cols, err := columns(t.Schema)
	if err != nil {
		return nil, fmt.Errorf("sopsql: table %q: %w", name, err)
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("%w: table %q has no columns", ErrType, name)
	}
	seen := make(map[int32]string, len(cols))
	for _, c := range cols {
		if !c.hasID {
			return nil, fmt.Errorf("%w: table %q: column %q has no field ID (%s)", ErrType, name, c.name, writer.FieldIDKey)
		}
		if other, dup := seen[c.id]; dup {
			return nil, fmt.Errorf("%w: table %q: columns %q and %q have the same field ID %d", ErrType, name, other, c.name, c.id)
		}
		seen[c.id] = c.name
	}
	s := &tableScan{
		ctx: ctx, fn: fn, name: name, cols: cols, batch: p.batch, sink: sink,
		alloc: newBufferPool(poolLimit, fn.poison),
		objs:  make([]*tableObject, len(t.Objects)),
	}
	for i, o := range t.Objects {
		s.objs[i] = &tableObject{TableObject: o, done: make(chan struct{})}
		s.rows += max(0, o.Rows)
	}
	return s, nil
}

// tableScan is one sop_scan of a table in one query. Its threads share a
// cursor over (object, row group) pairs: each takes the next row group of
// the current object, and the object after it once that one is exhausted.
type tableScan struct {
	ctx   context.Context
	fn    *functions
	name  string
	cols  []column // the table's columns
	batch int64
	sink  *errSink
	alloc memory.Allocator // the readers' buffers (pool.go)
	rows  int64            // the catalog's row count

	wantOnce sync.Once
	want     []int // the columns DuckDB asked for

	mu   sync.Mutex
	objs []*tableObject
	cur  int // the object being read
	rg   int // its next row group
}

// tableObject is an object of a table scan, opened once, when the scan
// reaches it (or the object before it).
type tableObject struct {
	TableObject
	start sync.Once
	done  chan struct{} // closed when r, plan and err are set
	r     *reader.Reader
	plan  objectPlan
	err   error
}

// objectPlan is how one object's records become the table's columns.
type objectPlan struct {
	opts    []reader.ScanOption
	cols    []objectColumn // by column of the records
	missing []int          // table columns DuckDB asked for that the object lacks
}

// objectColumn is a column of an object's records.
type objectColumn struct {
	out   int            // table column, or -1: read only to count rows
	dt    arrow.DataType // as the reader returns it
	widen widenFunc      // nil: written as it is
	write vecWriter      // of the (widened) type, or nil
	fill  fillFunc
}

func (s *tableScan) ColumnInfos() []duckdb.ColumnInfo {
	infos := make([]duckdb.ColumnInfo, len(s.cols))
	for i, c := range s.cols {
		infos[i] = duckdb.ColumnInfo{Name: c.name, T: c.info}
	}
	return infos
}

// Cardinality gives the planner the sum of the catalog's row counts of the
// table's objects: an estimate (Exact: true sets the estimate only in
// DuckDB 1.5.6; see scanSource.Cardinality), never an answer.
func (s *tableScan) Cardinality() *duckdb.CardinalityInfo {
	if len(s.objs) == 0 {
		return nil
	}
	return &duckdb.CardinalityInfo{Cardinality: uint(s.rows), Exact: true}
}

// Init allows a thread per core, up to four per object: the row groups
// are not known before the objects are opened, and DuckDB caps the
// threads by its own setting.
func (s *tableScan) Init() duckdb.ParallelTableSourceInfo {
	return duckdb.ParallelTableSourceInfo{MaxThreads: max(1, min(runtime.GOMAXPROCS(0), 4*len(s.objs)))}
}

// tableLocal is a thread's state.
type tableLocal struct {
	scan  *rowGroupScan
	obj   *tableObject
	rec   arrow.RecordBatch
	arrs  []arrow.Array // rec's columns, widened where the plan says
	wide  []arrow.Array // those arrs this thread made, to release
	off   int
	ws    writeState
	nulls map[int]arrow.Array // all-NULL arrays by table column
}

func (s *tableScan) NewLocalState() any {
	ls := &tableLocal{scan: &rowGroupScan{}, nulls: map[int]arrow.Array{}}
	runtime.AddCleanup(ls, (*rowGroupScan).release, ls.scan)
	return ls
}

// wanted returns the columns DuckDB asked for in ch (duckdb-go does not
// write the others, and GetVector fails for them).
func wanted(ch *duckdb.DataChunk, n int) []int {
	var want []int
	for i := range n {
		if _, err := ch.GetVector(i); err == nil {
			want = append(want, i)
		}
	}
	return want
}

// open opens object i, once, in a goroutine of its own: the first thread
// to need it, or the one that starts the object before it, starts it.
func (s *tableScan) open(i int) {
	if i >= len(s.objs) {
		return
	}
	o := s.objs[i]
	o.start.Do(func() {
		go func() {
			defer close(o.done)
			defer func() {
				if p := recover(); p != nil {
					o.err = fmt.Errorf("sopsql: internal error opening object %s: %v", o.ID, p)
				}
			}()
			r, err := reader.Open(s.ctx, s.fn.src, o.ID, s.fn.keys, append([]reader.Option{reader.WithAllocator(s.alloc)}, s.fn.readerOpts...)...)
			if err != nil {
				o.err = fmt.Errorf("sopsql: table %q, object %s: %w", s.name, o.ID, err)
				return
			}
			if o.plan, err = s.planObject(r); err != nil {
				o.err = fmt.Errorf("sopsql: table %q, object %s: %w", s.name, o.ID, err)
				return
			}
			o.r = r
		}()
	})
}

// take returns the next row group to read and its object, or a nil object
// when none is left. Each object is opened once, whichever thread reaches
// it first; its error is every thread's.
func (s *tableScan) take() (*tableObject, int, error) {
	for {
		s.mu.Lock()
		i := s.cur
		if i >= len(s.objs) {
			s.mu.Unlock()
			return nil, 0, nil
		}
		for k := i; k <= i+tableLookahead; k++ {
			s.open(k)
		}
		o := s.objs[i]
		s.mu.Unlock()
		select {
		case <-o.done:
		case <-s.ctx.Done():
			return nil, 0, s.ctx.Err()
		}
		if o.err != nil {
			return nil, 0, o.err
		}
		s.mu.Lock()
		if s.cur == i {
			if s.rg < o.r.NumRowGroups() {
				rg := s.rg
				s.rg++
				s.mu.Unlock()
				return o, rg, nil
			}
			// The threads still reading the object hold it; the scan
			// need not (a table of many objects keeps only the footers
			// of those being read and of the one ahead).
			s.objs[i] = nil
			s.cur, s.rg = i+1, 0
		}
		s.mu.Unlock()
	}
}

// planObject maps the columns DuckDB asked for to the fields of r by field
// ID: those r holds are read (reader.WithFields, so that the query fetches
// only their chunks), widened where the table promoted their type; those
// it lacks (added after r was written) are NULL.
func (s *tableScan) planObject(r *reader.Reader) (objectPlan, error) {
	fields := r.DictionarySchema(r.NarrowDecimalSchema().Fields()).Fields()
	want := make(map[int32]int, len(s.want))
	for _, out := range s.want {
		want[s.cols[out].id] = out
	}
	var p objectPlan
	var ids []int32
	found := map[int]bool{}
	first := -1 // the narrowest field with an ID, to count rows with
	for i, f := range fields {
		id, ok := fieldID(f)
		if !ok {
			continue
		}
		if first < 0 || countCost(f.Type) < countCost(fields[first].Type) {
			first = i
		}
		out, ok := want[id]
		if !ok {
			continue
		}
		c := s.cols[out]
		widen, target, ok := adapt(f.Type, c.dt)
		if !ok {
			widen, target, ok = adaptNested(f, c.name, c.dt)
		}
		if !ok {
			return p, fmt.Errorf("%w: column %q (field ID %d) is %s in the object, %s in the table, and does not widen", ErrType, c.name, id, f.Type, c.dt)
		}
		oc := objectColumn{out: out, dt: f.Type, widen: widen}
		if !s.fn.valuePath {
			oc.write = bulkWriter(target)
		}
		if oc.write == nil {
			cv, err := newConv(target)
			if err != nil {
				return p, fmt.Errorf("column %q: %w", c.name, err)
			}
			oc.fill = cv.fill
		}
		ids = append(ids, id)
		found[out] = true
		p.cols = append(p.cols, oc)
	}
	for _, out := range s.want {
		if !found[out] {
			p.missing = append(p.missing, out)
		}
	}
	p.opts = scanTypes()
	switch {
	case len(ids) > 0:
		p.opts = append(p.opts, reader.WithFields(ids...))
	case first >= 0:
		// None of the columns asked for (or none at all, for a
		// count(*)): one column, the narrowest, is read to count the
		// rows (Section 11.10: never the footer's count).
		id, _ := fieldID(fields[first])
		p.opts = append(p.opts, reader.WithFields(id))
		p.cols = []objectColumn{{out: -1, dt: fields[first].Type}}
	default:
		// No field has an ID: read every column, to count the rows.
		p.cols = make([]objectColumn, len(fields))
		for i, f := range fields {
			p.cols[i] = objectColumn{out: -1, dt: f.Type}
		}
	}
	return p, nil
}

// countCost ranks the types of the columns an object's rows could be
// counted with: a fixed-width primitive by its width (the footer's chunk
// sizes are not the reader's to give), anything else after them.
func countCost(dt arrow.DataType) int {
	if fw, ok := dt.(arrow.FixedWidthDataType); ok && !arrow.IsNested(dt.ID()) {
		return fw.BitWidth()
	}
	return 1 << 20
}

// fieldID returns the Parquet field ID of f, if it has one.
func fieldID(f arrow.Field) (int32, bool) {
	v, ok := f.Metadata.GetValue(writer.FieldIDKey)
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseInt(v, 10, 32)
	return int32(id), err == nil && id >= 0
}

// FillChunk fills ch with the next rows of the thread's row group, taking
// the next (object, row group) from the shared cursor when it is done, and
// sets ch's size to 0 when none is left.
func (s *tableScan) FillChunk(state any, ch duckdb.DataChunk) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("sopsql: internal error in %s: %v", ScanFunction, p)
		}
		s.sink.add(err)
	}()
	ls, ok := state.(*tableLocal)
	if !ok {
		return fmt.Errorf("sopsql: internal error: local state %T", state)
	}
	s.wantOnce.Do(func() { s.want = wanted(&ch, len(s.cols)) })
	for ls.rec == nil || ls.off >= int(ls.rec.NumRows()) {
		ls.drop()
		if rr := ls.scan.rr; rr != nil {
			if rr.Next() {
				if err := ls.load(rr.RecordBatch()); err != nil {
					ls.close()
					return fmt.Errorf("sopsql: table %q, object %s: %w", s.name, ls.obj.ID, err)
				}
				continue
			}
			err := rr.Err()
			ls.close()
			if err != nil {
				return fmt.Errorf("sopsql: table %q, object %s: %w", s.name, ls.obj.ID, err)
			}
		}
		o, rg, err := s.take()
		if err != nil {
			return err
		}
		if o == nil {
			return ch.SetSize(0)
		}
		opts := append(slices.Clip(o.plan.opts), reader.WithRowGroups(rg))
		if s.batch > 0 {
			opts = append(opts, reader.WithBatchSize(s.batch))
		}
		ls.obj = o
		if ls.scan.rr, err = o.r.Scan(s.ctx, opts...); err != nil {
			return fmt.Errorf("sopsql: table %q, object %s: %w", s.name, o.ID, err)
		}
	}
	n := min(int(ls.rec.NumRows())-ls.off, duckdb.GetDataChunkCapacity())
	raw, err := rawChunk(&ch)
	if err != nil {
		ls.close()
		return err
	}
	for k, oc := range ls.obj.plan.cols {
		if oc.out < 0 {
			continue
		}
		if err := put(&ls.ws, ch, raw, oc.out, oc.write, oc.fill, ls.arrs[k], ls.off, n); err != nil {
			ls.close()
			return fmt.Errorf("sopsql: table %q, object %s, column %q: %w", s.name, ls.obj.ID, s.cols[oc.out].name, err)
		}
	}
	for _, out := range ls.obj.plan.missing {
		c := &s.cols[out]
		nulls, err := ls.nullArray(out, c, n)
		if err != nil {
			ls.close()
			return fmt.Errorf("sopsql: table %q, column %q: %w", s.name, c.name, err)
		}
		write := c.write
		if s.fn.valuePath {
			write = nil
		}
		if err := put(&ls.ws, ch, raw, out, write, c.fill, nulls, 0, n); err != nil {
			ls.close()
			return fmt.Errorf("sopsql: table %q, object %s, column %q: %w", s.name, ls.obj.ID, c.name, err)
		}
	}
	ls.off += n
	return ch.SetSize(n)
}

// put writes the elements [off, off+n) of arr as rows 0..n-1 of column col
// of the chunk: with write, the bulk path, if not nil, or else fill.
func put(ws *writeState, ch duckdb.DataChunk, raw rawView, col int, write vecWriter, fill fillFunc, arr arrow.Array, off, n int) error {
	if write == nil {
		return fill(ch, col, arr, off, n)
	}
	v, err := raw.vector(col)
	if err != nil {
		return err
	}
	return write(ws, v, arr, off, n)
}

// load checks a record of the thread's object against its plan and
// widens the columns the plan widens.
func (ls *tableLocal) load(rec arrow.RecordBatch) error {
	plan := &ls.obj.plan
	if int(rec.NumCols()) != len(plan.cols) {
		return fmt.Errorf("%w: record of %d columns, want %d", ErrData, rec.NumCols(), len(plan.cols))
	}
	ls.rec, ls.off = rec, 0
	ls.arrs = ls.arrs[:0]
	for k, oc := range plan.cols {
		a := rec.Column(k)
		if !arrow.TypeEqual(a.DataType(), oc.dt) {
			ls.rec = nil
			return fmt.Errorf("%w: column %d is %s, want %s", ErrData, k, a.DataType(), oc.dt)
		}
		if oc.widen != nil && oc.out >= 0 {
			w, err := oc.widen(a)
			if err != nil {
				ls.rec = nil
				return err
			}
			ls.wide = append(ls.wide, w)
			a = w
		}
		ls.arrs = append(ls.arrs, a)
	}
	return nil
}

// nullArray returns an all-NULL array of column c's type, of at least n
// elements: written for an object that lacks the column.
func (ls *tableLocal) nullArray(out int, c *column, n int) (arrow.Array, error) {
	if a, ok := ls.nulls[out]; ok && a.Len() >= n {
		return a, nil
	}
	var a arrow.Array
	err := catchPanic(func() {
		a = array.MakeArrayOfNull(memory.DefaultAllocator, c.dt, max(n, duckdb.GetDataChunkCapacity()))
	})
	if err != nil {
		return nil, fmt.Errorf("%w: no NULL array of %s: %v", ErrType, c.dt, err)
	}
	ls.nulls[out] = a
	return a, nil
}

// catchPanic runs f and returns its panic as an error.
func catchPanic(f func()) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	f()
	return nil
}

// drop forgets the thread's record and releases what it widened.
func (ls *tableLocal) drop() {
	for _, a := range ls.wide {
		a.Release()
	}
	ls.wide = ls.wide[:0]
	ls.rec, ls.off = nil, 0
}

// close releases the row group being read; the reader clears its
// plaintext.
func (ls *tableLocal) close() {
	ls.drop()
	ls.scan.release()
}

var _ duckdb.ParallelChunkTableSource = (*tableScan)(nil)

// tableViews returns the statements that create a view of each table.
func tableViews(names []string) []string {
	qs := make([]string, len(names))
	for i, name := range names {
		qs[i] = fmt.Sprintf("CREATE OR REPLACE VIEW %s AS SELECT * FROM %s(%s)", quoteIdent(name), ScanFunction, quoteString(name))
	}
	return qs
}

// quoteString quotes s as a DuckDB string literal.
func quoteString(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}
