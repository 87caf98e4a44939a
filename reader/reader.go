// Package reader reads SOP-PME-1 objects back as Arrow records, through byte
// ranges verified against the object's storage_id. It implements the read
// side of SOP-PME-1 Sections 11.5–11.8 and the integrity layer of Section
// 11.10.
//
// A Reader is opened by storage_id. It proves the object's size from its
// verified last bytes (Section 11.8), reads and verifies the footer region,
// asks a KeyResolver for the object's DEK by storage_id (never by the
// key_ref, Section 11.5), and decrypts the footer. A Scan then fetches, for
// each row group it reads, the column chunks it projects, each one verified
// against storage_id before it is decrypted and decoded. No other path to
// the object's bytes exists: the package obtains them only from a
// verify.Reader (Section 11.10), and exports none.
//
// A projection verifies the footer and the chunks it reads, not the object.
// Only Verify, which checks every byte, makes an object count as verified.
//
// Nothing here answers from footer metadata: the package offers no row
// counts or statistics; counts come from the rows a Scan materialises
// (Section 11.10).
//
// # A hostile producer
//
// Producer authenticity is a separate layer (Section 11.10): a reader that
// holds an object's DEK must survive any object whose bytes verify against
// its storage_id and whose modules open under that DEK, whatever plaintext
// the producer put in them. The reader holds to this:
//
//   - The Arrow schema is derived from the Parquet schema and its field
//     IDs, and refined by the ARROW:schema footer entry (an Arrow IPC
//     message) only where the refinement is consistent with the Parquet
//     types (package internal/pqtypes): a time zone other than UTC, large
//     strings, binaries and lists, durations, dictionaries, decimal256,
//     date64, extension types. arrow-go's IPC reader never sees the entry:
//     it allocates the lengths the message states (one changed byte of an
//     832-byte object asked for 32 GiB, a fatal error), and pqarrow applies
//     the stored types over the inferred ones without checking them. The
//     entry is decoded by internal/arrowfb, within bounds (its fields at
//     most one per 4 bytes, its strings at most twice its size), and
//     ignored, with no error, when it is malformed or does not match the
//     Parquet schema; it is never shown by Metadata. INT96 columns and
//     timestamps of legacy converted types read without a time zone, as
//     DuckDB reads them, INT96 at microseconds (or in the unit
//     ARROW:schema gives: pyarrow's nanoseconds), a value beyond that unit
//     failing the scan (ErrDecode); GEOMETRY and GEOGRAPHY columns as a
//     GeoArrow extension type over their bytes. The schema's metadata is the
//     footer's key-value metadata. DuckDB writes no ARROW:schema.
//   - The footer is decoded into a compact form with at most one value per
//     two bytes beyond the first 64 Ki, and its schema's paths, schema
//     elements and key-value entries are bounded by its size (package pme),
//     before arrow-go decodes the footer again; the column chunks, row counts
//     and column counts are checked before arrow-go reads a page.
//   - Every page header is checked against the footer in the plaintext view
//     before arrow-go decodes the page (ErrFormat): whole pages, a known page
//     type with its type-specific header, sizes that match the modules, and
//     counts that agree, so that every column yields the row group's rows.
//   - A scan's decoder allocates through a budget (WithMemoryLimit): what an
//     object decodes to is bounded by what the scan reads, not by what the
//     pages claim (ErrMemoryLimit).
//   - A scan decodes at most WithMaxValues values (by default 2^30, or 4,096
//     per byte of the object), refusing a row group that would pass the
//     limit before decoding it (ErrValueLimit), and checks its context
//     before every batch: a page of one RLE run claims 2^31−1 rows in a few
//     bytes, as a constant column's page legitimately does.
//   - Two fields with one field ID make Open fail (ErrField).
//   - arrow-go decodes in the goroutine that calls the record reader's Next,
//     which turns any panic of the decoder into an error (ErrDecode); no
//     goroutine arrow-go starts decodes. Every error of a scan is typed.
//
// Under these rules the hostile objects of internal/hostile open, scan and
// check within 64 MiB + 16 × (footer bytes + the largest column chunk) of
// Go heap, plus 64 KiB for each leaf column whose decoder the default memory
// limit makes room for (at most DefaultMaxColumns), as a test measures.
package reader

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/sovm/sop-pme/internal/arrowfb"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
)

// A KeyResolver finds the DEK of an object by its storage_id. In SOP the path
// is storage_id → ObjectManifest + current AccessRecord → DEK (Section 11.5);
// the key_ref inside the object is never used to find a key. Package keyring
// implements one over DEKs wrapped under a key-encryption key.
//
// A resolver that has no key for id returns an error wrapping ErrNoKey.
type KeyResolver interface {
	ResolveDEK(ctx context.Context, id storageid.ID) (pme.DEK, error)
}

// DefaultMaxFooterSize is the least default limit on the footer region
// (FileCryptoMetaData plus the footer module), in bytes. Padding lives in the
// footer (Section 11.8): Padmé pads an object by less than 1/32 of its size
// from 32 KiB on, so the default limit is the larger of this and 1/16 of
// the object's proven size (pme.MaxFooterRegion, which the writer holds to).
const DefaultMaxFooterSize = pme.DefaultMaxFooterRegion

// minObjectSize is "PARE", the smallest FileCryptoMetaData (5 bytes), an
// empty footer module (32 bytes) and the trailer.
const minObjectSize = 4 + 5 + pme.Overhead + pme.TrailerSize

// A Reader reads one SOP-PME-1 object. It is safe for concurrent use; each
// Scan reads independently.
type Reader struct {
	id        storageid.ID
	vr        *verify.Reader
	src       verify.Source
	dek       pme.DEK
	meta      *metadata.FileMetaData // the decrypted footer, padding entries removed
	schema    *arrow.Schema
	stored    *arrowfb.Schema // the footer's ARROW:schema, decoded, or nil
	kv        arrow.Metadata
	fields    []pme.Field
	chunks    []pme.Span   // every column chunk, sorted by offset
	grid      [][]pme.Span // the column chunks by row group and leaf column
	info      map[int64]chunkInfo
	numLeaves int
	maxChunk  int64
	ctPool    sync.Pool // buffers for the modules of a chunk (ciphertext only)
	ptPool    sync.Pool // buffers for the plaintext of a chunk, cleared before they return
	nrg       int
	alloc     memory.Allocator
	verified  atomic.Bool
	stats     *counters
}

// An Option configures Open.
type Option func(*config) error

type config struct {
	maxFooter int64
	alloc     memory.Allocator
	verify    []verify.Option
}

// WithMaxFooterSize sets the largest footer region Open accepts, in bytes
// (default: DefaultMaxFooterSize or 1/16 of the object, whichever is larger).
func WithMaxFooterSize(n int64) Option {
	return func(c *config) error {
		if n < minObjectSize {
			return fmt.Errorf("%w: max footer size %d", ErrOption, n)
		}
		c.maxFooter = n
		return nil
	}
}

// WithAllocator sets the Arrow allocator for the records a Scan returns.
func WithAllocator(mem memory.Allocator) Option {
	return func(c *config) error {
		if mem == nil {
			return fmt.Errorf("%w: nil allocator", ErrOption)
		}
		c.alloc = mem
		return nil
	}
}

// WithExpectedSize makes Open fail (with verify.ErrSize) unless the object's
// proven size is size: for a caller whose catalog records it.
func WithExpectedSize(size int64) Option {
	return func(c *config) error {
		c.verify = append(c.verify, verify.WithExpectedSize(size))
		return nil
	}
}

// Open opens the object src holds under id. It verifies the object's last
// group (proving its size), reads the footer region through verified
// ranges, resolves the DEK by id with keys, and decrypts and parses the
// footer. It reads nothing else: not even the leading "PARE", which Check
// tests, so that a projection fetches only the footer and its chunks.
func Open(ctx context.Context, src verify.Source, id storageid.ID, keys KeyResolver, opts ...Option) (*Reader, error) {
	cfg := config{alloc: memory.DefaultAllocator}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if src == nil || keys == nil {
		return nil, fmt.Errorf("%w: nil source or key resolver", ErrOption)
	}
	stats := new(counters)
	src = countingSource{src, stats}
	vr, err := verify.NewReader(ctx, src, id, cfg.verify...)
	if err != nil {
		return nil, fmt.Errorf("reader: opening %s: %w", id, err)
	}
	size := vr.Size()
	if size < minObjectSize {
		return nil, fmt.Errorf("%w: object of %d bytes", ErrFormat, size)
	}
	trailer := make([]byte, pme.TrailerSize)
	if _, err := vr.ReadAtContext(ctx, trailer, size-pme.TrailerSize); err != nil {
		return nil, fmt.Errorf("reader: reading %s: %w", id, err)
	}
	stats.verified.Add(pme.TrailerSize)
	flen, err := pme.ParseTrailer(trailer)
	if err != nil {
		return nil, err
	}
	dataEnd := size - pme.TrailerSize - int64(flen)
	maxFooter := cfg.maxFooter
	if maxFooter == 0 {
		maxFooter = pme.MaxFooterRegion(size)
	}
	if int64(flen) > maxFooter || dataEnd < 4 {
		return nil, fmt.Errorf("%w: footer region of %d bytes in an object of %d", ErrFormat, flen, size)
	}
	region := make([]byte, flen)
	if _, err := vr.ReadAtContext(ctx, region, dataEnd); err != nil {
		return nil, fmt.Errorf("reader: reading %s: %w", id, err)
	}
	stats.verified.Add(int64(flen))
	tail, err := pme.ParseFooterRegion(region)
	if err != nil {
		return nil, err
	}
	dek, err := keys.ResolveDEK(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("reader: resolving the key of %s: %w", id, err)
	}
	footer, err := pme.OpenFooter(dek, tail.FooterBody)
	if err != nil {
		return nil, err
	}
	stats.modules.Add(1)
	r := &Reader{id: id, vr: vr, src: src, dek: dek, alloc: cfg.alloc, stats: stats}
	if err := r.load(footer, dataEnd); err != nil {
		return nil, err
	}
	return r, nil
}

// load checks the footer's column chunks against the data region and builds
// what Scan needs.
func (r *Reader) load(footer *pme.Footer, dataEnd int64) error {
	rgs, err := footer.ColumnChunks()
	if err != nil {
		return err
	}
	r.grid = rgs
	for i, rg := range rgs {
		for j, c := range rg {
			if c.Off < 4 || c.End() > dataEnd {
				return fmt.Errorf("%w: row group %d column %d at [%d, %d) is outside the data region [4, %d)", ErrFormat, i, j, c.Off, c.End(), dataEnd)
			}
			r.chunks = append(r.chunks, c)
			r.maxChunk = max(r.maxChunk, c.Len)
		}
	}
	slices.SortFunc(r.chunks, func(a, b pme.Span) int { return int(min(max(a.Off-b.Off, -1), 1)) })
	for i := 1; i < len(r.chunks); i++ {
		if r.chunks[i].Off < r.chunks[i-1].End() {
			return fmt.Errorf("%w: column chunks overlap at %d", ErrFormat, r.chunks[i].Off)
		}
	}
	r.nrg = len(rgs)
	if r.fields, err = footer.Fields(); err != nil {
		return err
	}
	if err := uniqueIDs(r.fields); err != nil {
		return err
	}
	// Readers must ignore the padding entries (Section 11.8); this one
	// removes them before arrow-go, or a caller, can see them.
	kvs, err := footer.KeyValues()
	if err != nil {
		return err
	}
	r.stored = storedSchema(kvs)
	footer.StripForReading()
	if kvs, err = footer.KeyValues(); err != nil {
		return err
	}
	var keys, values []string
	for _, kv := range kvs {
		if kv.Key == "ARROW:schema" {
			continue
		}
		keys, values = append(keys, kv.Key), append(values, string(kv.Value))
	}
	r.kv = arrow.NewMetadata(keys, values)
	// arrow-go builds its own view of the footer and derives the Arrow
	// schema from the Parquet schema alone: StripForReading removed the
	// stored ARROW:schema. A panic there is a malformed footer.
	return catch(pme.ErrFormat, func() error {
		if r.meta, err = metadata.NewFileMetaData(footer.Append(nil), nil); err != nil {
			return fmt.Errorf("%w: footer: %v", pme.ErrFormat, err)
		}
		if err := r.loadChunkInfo(); err != nil {
			return err
		}
		pf, _, err := r.open(context.Background(), nil)
		if err != nil {
			return err
		}
		_, fields, err := r.fileReader(pf, pqarrow.ArrowReadProperties{}, r.alloc)
		if err != nil {
			return fmt.Errorf("%w: schema: %v", pme.ErrFormat, err)
		}
		r.schema = arrow.NewSchema(fields, &r.kv)
		return nil
	})
}

// loadChunkInfo records, for each column chunk, what its pages must agree
// with (see checkPages).
func (r *Reader) loadChunkInfo() error {
	sch := r.meta.Schema
	r.numLeaves = sch.NumColumns()
	r.info = make(map[int64]chunkInfo, len(r.chunks))
	for i, spans := range r.grid {
		rg := r.meta.RowGroup(i)
		if rg.NumColumns() != sch.NumColumns() || rg.NumRows() < 0 {
			return fmt.Errorf("%w: row group %d has %d column chunks and %d rows; the schema has %d columns", ErrFormat, i, rg.NumColumns(), rg.NumRows(), sch.NumColumns())
		}
		for j, c := range spans {
			cc, err := rg.ColumnChunk(j)
			if err != nil {
				return fmt.Errorf("%w: row group %d column %d: %v", ErrFormat, i, j, err)
			}
			if cc.NumValues() < 0 {
				return fmt.Errorf("%w: row group %d column %d: num_values %d", ErrFormat, i, j, cc.NumValues())
			}
			r.info[c.Off] = chunkInfo{
				rowGroup: i, column: j,
				rows: rg.NumRows(), values: cc.NumValues(),
				codec:    cc.Compression(),
				repeated: sch.Column(j).MaxRepetitionLevel() > 0,
				maxDef:   sch.Column(j).MaxDefinitionLevel(),
				maxRep:   sch.Column(j).MaxRepetitionLevel(),
				physical: sch.Column(j).PhysicalType(),
				typeLen:  sch.Column(j).TypeLength(),
			}
		}
	}
	return nil
}

// open returns an arrow-go file reader over a plaintext view of the object,
// and the view. A scan passes its budget, which arrow-go then allocates
// through.
func (r *Reader) open(ctx context.Context, b *budget) (*file.Reader, *plainView, error) {
	view := &plainView{ctx: ctx, vr: r.vr, dek: r.dek, stats: r.stats, chunks: r.chunks, size: r.vr.Size(), ctPool: &r.ctPool, ptPool: &r.ptPool,
		info: r.info, budget: b, plainLen: make(map[int64]int64)}
	var mem memory.Allocator = r.alloc
	if b != nil {
		mem = b
	}
	props := parquet.NewReaderProperties(mem)
	// One buffered stream per column chunk, as large as the chunk: arrow-go
	// then reads a chunk with one ReadAt and meets the end of its plaintext
	// as io.EOF (see plainView).
	props.BufferedStreamEnabled = true
	props.BufferSize = r.maxChunk
	// Pages up to the size the writer allows (and DuckDB writes: it closes
	// pages at 100 MiB), whatever arrow-go's defaults.
	props.MaxCompressedPageSize = pme.MaxPageSize
	props.MaxUncompressedPageSize = pme.MaxPageSize
	pf, err := file.NewParquetReader(view, file.WithMetadata(r.meta), file.WithReadProps(props))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", pme.ErrFormat, err)
	}
	return pf, view, nil
}

// ID returns the object's storage_id.
func (r *Reader) ID() storageid.ID { return r.id }

// Size returns the object's size in bytes, as proven from its last group.
func (r *Reader) Size() int64 { return r.vr.Size() }

// Schema returns the object's Arrow schema, derived from its Parquet schema
// and refined by its ARROW:schema entry where that is consistent (see the
// package doc). Every field carries its Parquet field ID in the
// field metadata under "PARQUET:field_id". The schema's metadata is the
// footer's key-value metadata, without the entries reserved for padding and
// without ARROW:schema.
func (r *Reader) Schema() *arrow.Schema { return r.schema }

// Metadata returns the footer's key-value metadata, such as the entries
// written with writer.WithMetadata, without the stored Arrow schema and
// without the entries reserved for padding, which readers never show
// (Section 11.8).
func (r *Reader) Metadata() arrow.Metadata { return r.kv }

// NumRowGroups returns the number of row groups, for WithRowGroups. It is
// the structure of the object, not an answer about its data.
func (r *Reader) NumRowGroups() int { return r.nrg }

// Verified reports whether Verify has succeeded on this Reader. Reads and
// projections never make it true (Section 11.10).
func (r *Reader) Verified() bool { return r.verified.Load() }

// Verify checks every byte of the object against its storage_id (Section
// 11.10): the only operation after which the object counts as verified.
func (r *Reader) Verify(ctx context.Context) error {
	if err := verify.Verify(ctx, r.src, r.id, verify.WithExpectedSize(r.vr.Size())); err != nil {
		return err
	}
	r.stats.verified.Add(r.vr.Size())
	r.verified.Store(true)
	return nil
}

// Stats counts what a Reader has done so far, for statistics and progress
// displays. The counts are cumulative over Open, every Scan and Verify.
type Stats struct {
	// BytesFetched counts the bytes the source handed over: BAO slices,
	// that is the object bytes read (rounded out to 16 KiB groups) and the
	// parent hashes that prove them.
	BytesFetched int64
	// BytesVerified counts the object bytes verified against storage_id
	// and released: the ranges read, and the whole object for a Verify.
	BytesVerified int64
	// ModulesOpened counts the modules authenticated and decrypted under
	// the DEK: the footer and the page header and page modules of the
	// column chunks read.
	ModulesOpened int64
}

// Stats returns the Reader's counts so far. It is safe to call while a
// Scan runs.
func (r *Reader) Stats() Stats {
	return Stats{
		BytesFetched:  r.stats.fetched.Load(),
		BytesVerified: r.stats.verified.Load(),
		ModulesOpened: r.stats.modules.Load(),
	}
}

// counters are a Reader's Stats, and how many chunks a scan had to open
// when arrow-go asked for them, not fetched ahead (for tests).
type counters struct {
	fetched, verified, modules atomic.Int64
	syncOpens                  atomic.Int64
}

// countingSource counts the bytes of the slices its source hands over.
type countingSource struct {
	verify.Source
	c *counters
}

func (s countingSource) Slice(ctx context.Context, id storageid.ID, off, n uint64) (io.ReadCloser, error) {
	rc, err := s.Source.Slice(ctx, id, off, n)
	if err != nil || rc == nil {
		return rc, err
	}
	return countingReadCloser{rc, s.c}, nil
}

type countingReadCloser struct {
	io.ReadCloser
	c *counters
}

func (r countingReadCloser) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.c.fetched.Add(int64(n))
	return n, err
}

// A ScanOption configures Scan.
type ScanOption func(*scanConfig) error

type scanConfig struct {
	fieldIDs  []int32
	rowGroups []int
	batch     int64
	memLimit  int64
	maxValues int64
}

// WithFields projects the scan to the fields with these Parquet field IDs
// (top-level or nested: a nested field brings its enclosing fields with it,
// pruned to it). The default is every field.
// WithFields without an ID is an error (ErrOption), never "every field".
func WithFields(ids ...int32) ScanOption {
	return func(c *scanConfig) error {
		if len(ids) == 0 {
			return fmt.Errorf("%w: WithFields without a field ID", ErrOption)
		}
		c.fieldIDs = append(c.fieldIDs, ids...)
		return nil
	}
}

// WithRowGroups restricts the scan to these row groups, in this order.
// WithRowGroups without an index is an error (ErrOption), never "every row
// group".
func WithRowGroups(idx ...int) ScanOption {
	return func(c *scanConfig) error {
		if len(idx) == 0 {
			return fmt.Errorf("%w: WithRowGroups without a row group", ErrOption)
		}
		c.rowGroups = append(c.rowGroups, idx...)
		return nil
	}
}

// WithBatchSize sets the most rows per record (default DefaultBatchSize,
// 65536).
func WithBatchSize(n int64) ScanOption {
	return func(c *scanConfig) error {
		if n <= 0 {
			return fmt.Errorf("%w: batch size %d", ErrOption, n)
		}
		c.batch = n
		return nil
	}
}

// WithMemoryLimit sets the memory, in bytes, a scan's decoder may use: its
// column decoders (64 KiB for each leaf column the scan reads) and what
// decoding one batch allocates through the allocator and does not free.
// The default (DefaultMemoryLimit) is 40 MiB, plus 64 KiB for the decoder
// of each leaf column the scan reads if it reads at most DefaultMaxColumns,
// plus 16 bytes per byte of the column chunks the columns decode, which
// bounds what an object can make the decoder allocate (a dictionary of long
// strings, or a run of nulls, decodes to far more than its bytes) by what
// the scan reads and its width, whatever the footer claims.
// A scan whose column decoders do not fit fails at once, and a batch beyond
// the limit makes the record reader fail, with an error matching
// ErrMemoryLimit. Lower WithBatchSize, or project fewer fields, to need
// less.
func WithMemoryLimit(n int64) ScanOption {
	return func(c *scanConfig) error {
		if n <= 0 {
			return fmt.Errorf("%w: memory limit %d", ErrOption, n)
		}
		c.memLimit = n
		return nil
	}
}

// Scan returns a reader of the object's rows as Arrow records, projected and
// restricted by opts. It reads one row group at a time: memory is bounded by
// the projected column chunks of one row group, and what decoding a batch
// allocates by WithMemoryLimit. Each chunk is verified against storage_id
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
	err = catch(ErrDecode, func() error {
		var err error
		if fr, _, err = r.fileReader(pf, pqarrow.ArrowReadProperties{BatchSize: cfg.batch, Parallel: false}, b); err != nil {
			return fmt.Errorf("%w: %v", pme.ErrFormat, err)
		}
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
	f := startFetcher(ctx, view, r.grid, cols, rgs)
	sr := &scanReader{rr: rr, schema: r.scanSchema(rr.Schema()), fr: fr, ctx: ctx, cols: cols, fetch: f, view: view, budget: b, values: values,
		done: func() { cancel(); f.stop(); view.close() }}
	sr.refs.Store(1)
	return sr, nil
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
