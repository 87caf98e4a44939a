package reader

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/sovm/sop-pme/internal/flatdec"
	"github.com/sovm/sop-pme/internal/pagebound/pagecheck"
)

// The scan's fast path: row groups whose projected columns are all flat
// and of the kinds package flatdec decodes (what TPC-H's generator,
// arrow-go and DuckDB write) are decoded by flatdec, straight from the
// verified plaintext the view holds, instead of arrow-go's record reader
// (whose per-batch dictionary materialisation and buffer zeroing were most
// of a scan's time). Every other row group is decoded by arrow-go as
// before. Verification, the page checks and the memory budget are the
// same for both: flatdec reads only what the fetcher has verified, opened
// and checked, and allocates through the scan's allocator.

// rowGroupReader reads the batches of one row group: arrow-go's
// pqarrow.RecordReader, or a flatReader.
type rowGroupReader interface {
	Next() bool
	RecordBatch() arrow.RecordBatch
	Err() error
	Release()
}

var (
	_ rowGroupReader = (pqarrow.RecordReader)(nil)
	_ rowGroupReader = (*flatReader)(nil)
)

// withArrowDecoder makes the scan decode every row group with arrow-go's
// decoder, never package flatdec: for tests that compare the two.
func withArrowDecoder() ScanOption {
	return func(c *scanConfig) error {
		c.arrowOnly = true
		return nil
	}
}

// rowGroupReader returns the reader of row group rg's batches, whose
// chunks view holds: flatdec's if the scan has a plan and the row group's
// pages are all of kinds it decodes, else arrow-go's record reader of fr.
// Decoders allocate through mem.
func (r *Reader) rowGroupReader(ctx context.Context, p *flatPlan, fr *pqarrow.FileReader, view *plainView, cols []int, rg int, mem memory.Allocator) (rowGroupReader, error) {
	f, err := r.openFlat(p, view, rg, mem)
	if err != nil {
		return nil, err
	}
	if f != nil {
		return f, nil
	}
	rr, err := fr.GetRecordReader(ctx, cols, []int{rg})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDecode, err)
	}
	return rr, nil
}

// flatPlan is what a scan needs to decode row groups with flatdec: the
// leaf column of each field of the scan's schema.
type flatPlan struct {
	schema *arrow.Schema
	leaves []int
	cols   []flatdec.Column // each leaf's, as flatdec.Leaf gives it
	batch  int64
}

// planFlat returns the plan of a scan of leaf columns cols (nil: every
// one) in the types of sc, or nil if some projected column is not one
// flatdec decodes, as the footer and the scan's types say (flatdec.Leaf).
func (r *Reader) planFlat(cfg *scanConfig, cols []int, sc *arrow.Schema) *flatPlan {
	if cfg.arrowOnly || sc.NumFields() == 0 {
		return nil
	}
	leaves := cols
	if leaves == nil {
		leaves = make([]int, r.numLeaves)
		for i := range leaves {
			leaves[i] = i
		}
	}
	if len(leaves) != sc.NumFields() {
		return nil
	}
	ps := r.meta.Schema
	descs := make([]flatdec.Column, len(leaves))
	for i, j := range leaves {
		if j < 0 || j >= ps.NumColumns() {
			return nil
		}
		col := ps.Column(j)
		if path := col.ColumnPath(); len(path) != 1 || path[0] != sc.Field(i).Name {
			return nil
		}
		c, err := flatdec.Leaf(col, sc.Field(i).Type)
		if err != nil {
			return nil
		}
		descs[i] = c
	}
	return &flatPlan{schema: sc, leaves: leaves, cols: descs, batch: cfg.batch}
}

// openFlat returns a reader of row group rg's batches by flatdec, whose
// chunks view holds, allocating through mem; or nil if the row group is
// not one flatdec decodes (a chunk the fetcher did not open, or a page of
// a kind flatdec does not decode: the scan then uses arrow-go's decoder).
// Only the page headers are read to decide. Its errors are the view's
// (a chunk that failed verification or its checks) or ErrDecode.
func (r *Reader) openFlat(p *flatPlan, view *plainView, rg int, mem memory.Allocator) (*flatReader, error) {
	if p == nil {
		return nil, nil
	}
	rows := r.meta.RowGroup(rg).NumRows()
	f := &flatReader{schema: p.schema, rows: rows, batch: max(p.batch, 1)}
	for i, j := range p.leaves {
		span := r.grid[rg][j]
		in, ok := r.info[span.Off]
		if !ok || in.values != rows {
			f.Release()
			return nil, nil
		}
		c := p.cols[i]
		c.Codec, c.Values = in.codec, in.values
		if c.Physical != in.physical || c.MaxDef != in.maxDef || c.MaxRep != in.maxRep {
			f.Release()
			return nil, nil // cannot happen: both are the footer's
		}
		plain, ok, err := view.held(span)
		if err != nil {
			f.Release()
			return nil, err
		}
		if !ok {
			f.Release()
			return nil, nil
		}
		// A page may be decompressed into what the page checks allowed.
		limit := min(pagecheck.DefaultLimit(span.Len), flatdec.MaxPageSize)
		if view.budget != nil {
			limit = min(view.budget.total(span.Len), flatdec.MaxPageSize)
		}
		// New reads the page headers (flatdec.Check): a page of a kind
		// flatdec does not decode sends the row group to arrow-go.
		d, err := flatdec.New(c, plain, mem, int(limit))
		if err != nil {
			f.Release()
			if errors.Is(err, flatdec.ErrUnsupported) {
				return nil, nil
			}
			return nil, fmt.Errorf("%w: row group %d column %d: %w", ErrDecode, rg, j, err)
		}
		f.decs = append(f.decs, d)
		f.leaves = append(f.leaves, j)
	}
	view.stats.flatRowGroups.Add(1)
	return f, nil
}

// flatReader reads one row group's batches with flatdec, a decoder per
// column: batches of the scan's batch size, the last one the rest.
type flatReader struct {
	schema *arrow.Schema
	decs   []*flatdec.Decoder
	leaves []int
	rows   int64 // the row group's
	done   int64 // read
	batch  int64
	cur    arrow.RecordBatch
	err    error
}

func (f *flatReader) Schema() *arrow.Schema { return f.schema }

// Next reads the next batch. The budget's panic (errBudget, or a parallel
// worker's errYield) passes through, to the scan's boundary.
func (f *flatReader) Next() bool {
	if f.cur != nil {
		f.cur.Release()
		f.cur = nil
	}
	if f.err != nil || f.done >= f.rows {
		return false
	}
	n := min(f.batch, f.rows-f.done)
	cols := make([]arrow.Array, 0, len(f.decs))
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for i, d := range f.decs {
		data, err := d.Read(int(n))
		if err != nil {
			if errors.Is(err, flatdec.ErrMemoryLimit) {
				f.err = fmt.Errorf("%w: column %d: %w", ErrMemoryLimit, f.leaves[i], err)
			} else {
				f.err = fmt.Errorf("column %d: %w", f.leaves[i], err)
			}
			return false
		}
		cols = append(cols, array.MakeFromData(data))
		data.Release()
	}
	f.cur = array.NewRecordBatch(f.schema, cols, n)
	f.done += n
	return true
}

func (f *flatReader) RecordBatch() arrow.RecordBatch { return f.cur }

func (f *flatReader) Err() error { return f.err }

// Release frees the current batch and the decoders' dictionaries.
func (f *flatReader) Release() {
	if f.cur != nil {
		f.cur.Release()
		f.cur = nil
	}
	for _, d := range f.decs {
		d.Release()
	}
	f.decs = nil
}
