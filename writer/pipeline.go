package writer

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/sovm/sop-pme/internal/seal"
)

// pipeline encodes row groups in parallel and seals them in order.
//
// Each row group is encoded by arrow-go, on a goroutine of its own, into a
// plaintext Parquet file in memory that holds only that row group (steps 1
// and 2 of Section 11.12 overlap: row group i+1 encodes while row group i
// is sealed). One goroutine takes the encoded files in row-group order and
// hands them to the seal.Sealer, which seals their pages into the object's
// data region and drops everything else, then clears the plaintext. At most
// par row groups are handed over at once (encoding, encoded and waiting, or
// being sealed), and the Writer gathers one more, so the writer's memory
// stays within about (par+1) row groups.
type pipeline struct {
	schema *arrow.Schema
	cfg    config
	sealer *seal.Sealer

	slots   chan struct{} // row groups handed over and not sealed: par
	workers chan struct{} // row groups encoding: par
	order   chan *job     // row groups in order, to the sealing goroutine
	done    chan struct{}
	sealed  atomic.Int64 // row groups sealed

	mu       sync.Mutex
	err      error
	finished sync.Once
}

// job is one row group: its records, then its encoded plaintext file.
type job struct {
	recs  []arrow.RecordBatch
	rows  int64
	bytes int64 // Arrow bytes of recs, about
	done  chan struct{}
	file  *segments
	err   error
	// rowGroups is how many row groups the records were encoded into.
	rowGroups int
}

func newPipeline(schema *arrow.Schema, cfg config, sealer *seal.Sealer) *pipeline {
	p := &pipeline{
		schema: schema, cfg: cfg, sealer: sealer,
		slots:   make(chan struct{}, cfg.parallelism),
		workers: make(chan struct{}, cfg.parallelism),
		order:   make(chan *job, cfg.parallelism),
		done:    make(chan struct{}),
	}
	go p.seal()
	return p
}

func (p *pipeline) failed() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

func (p *pipeline) fail(err error) {
	p.mu.Lock()
	if p.err == nil {
		p.err = err
	}
	p.mu.Unlock()
}

// submit starts encoding a row group of recs, which it releases when done.
// It blocks while par row groups are handed over and not sealed. It returns
// the pipeline's first error, if any.
func (p *pipeline) submit(recs []arrow.RecordBatch, rows, size int64) error {
	if err := p.failed(); err != nil {
		release(recs)
		return err
	}
	p.slots <- struct{}{}
	j := &job{recs: recs, rows: rows, bytes: size, done: make(chan struct{})}
	p.order <- j
	go func() {
		p.workers <- struct{}{}
		defer func() { <-p.workers }()
		defer close(j.done)
		j.file, j.err = p.encode(j)
		release(j.recs)
		j.recs = nil
	}()
	return nil
}

func release(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

// encode writes the row group's records as a plaintext Parquet file that
// holds them in one row group, or in several smaller ones if the reader's
// default scan could not decode a batch of the one (readableRowGroups:
// rows that decode to far more than they compress to, such as long
// repeated strings). A row that does not fit alone is refused with
// ErrReaderLimit.
func (p *pipeline) encode(j *job) (*segments, error) {
	buf := new(segments)
	maxRows := max(j.rows, 1)
	for {
		props := append(p.encodingChoices(j.recs), parquet.WithMaxRowGroupLength(maxRows))
		fw, err := pqarrow.NewFileWriter(p.schema, buf, p.cfg.parquetProps(props...), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
		if err != nil {
			return buf, fmt.Errorf("%w: %w", ErrEncode, err)
		}
		for _, r := range j.recs {
			if err := fw.WriteBuffered(r); err != nil {
				fw.Close()
				return buf, fmt.Errorf("%w: %w", ErrEncode, err)
			}
		}
		if err := fw.Close(); err != nil {
			return buf, fmt.Errorf("%w: %w", ErrEncode, err)
		}
		meta, err := fw.FileMetadata()
		if err != nil {
			return buf, fmt.Errorf("%w: %w", ErrEncode, err)
		}
		fewer, err := readableRowGroups(j.recs, meta, maxRows, p.cfg.dataPageSize)
		if err != nil || fewer == 0 {
			j.rowGroups = meta.NumRowGroups()
			return buf, err
		}
		buf.reset()
		maxRows = fewer
	}
}

// encodingChoices returns the per-column properties for a row group of
// recs: the dictionary choices, unless WithDictionary decided for every
// column.
func (p *pipeline) encodingChoices(recs []arrow.RecordBatch) []parquet.WriterProperty {
	if p.cfg.dictionary != dictionaryAuto {
		return nil
	}
	return dictionaryChoices(recs)
}

// seal takes the encoded row groups in order and seals them.
func (p *pipeline) seal() {
	defer close(p.done)
	for j := range p.order {
		<-j.done
		err := j.err
		if err == nil && p.failed() == nil {
			err = p.sealer.AddFile(j.file, j.file.Len())
		}
		if j.file != nil {
			j.file.reset() // plaintext does not outlive its sealing
			j.file = nil
		}
		if err != nil {
			p.fail(err)
		} else {
			p.sealed.Add(int64(j.rowGroups))
		}
		<-p.slots
	}
}

// finish waits until every row group submitted is sealed, and returns the
// first error.
func (p *pipeline) finish() error {
	p.finished.Do(func() { close(p.order) })
	<-p.done
	return p.failed()
}

// abort stops the pipeline: row groups still encoding finish, and nothing
// more is sealed.
func (p *pipeline) abort(err error) {
	p.fail(err)
	p.finish()
}
