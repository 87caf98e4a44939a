// Package writer writes SOP-PME-1 objects: Arrow records in; out, an
// encrypted Parquet object, padded to its Padmé size and imported into a blob
// store, whose BLAKE3 root hash is the object's storage_id. It implements the
// writer pipeline of SOP-PME-1 Section 11.12, in its normative order.
//
// Every object gets a fresh random DEK (Section 11.2) and a fresh random
// key_ref (Section 11.5); the footer is encrypted (Section 11.4); every
// module is AES-GCM with the empty AAD, as DuckDB writes it (Section 11.3);
// the object reaches Padmé(L) exactly or is not published (Section 11.8).
// Plaintext and the DEK are never written to disk: what is staged in the
// store is ciphertext only.
//
// Column field IDs are mandatory (Section 11.2): every field of the schema,
// nested fields included, carries the Arrow field metadata key
// "PARQUET:field_id" (FieldIDKey) with a unique positive integer.
//
// The padding is a Thrift binary in the footer, which holds at most 2^31−1
// bytes (pme.MaxPadValue): from 256 GiB, where Padmé may pad an object by up
// to 4 GiB, an object whose padding would be longer is refused with
// ErrPadding, never published short of its target.
//
// The writer never publishes an object its own reader refuses, or that the
// reader's default scan cannot return (ErrReaderLimit): the schema's depth
// and width, the footer's paths, elements, key-value entries and size, and
// the values it holds are checked against package reader's bounds before
// anything is committed. Rows that decode to far more than they compress
// to (long repeated strings) go into smaller row groups, so that a batch
// of the default scan fits its memory limit; a single row that does not is
// refused.
//
// SealFile makes an object of an existing plaintext Parquet file instead,
// byte for byte: its pages are sealed as they are, through the same steps.
//
// A Writer is not safe for concurrent use.
package writer

import (
	"context"
	"errors"
	"fmt"
	"runtime"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/internal/seal"
	"github.com/sovm/sop-pme/pme"
)

// abandoned is what the cleanup of a Writer dropped without Close releases.
type abandoned struct {
	pipe    *pipeline
	out     *sink
	pending blobs.Pending
}

// sliceRows is the most rows of one record a row group takes at once, so
// that the byte limit is checked often enough to hold.
const sliceRows = 1 << 16

// A Writer writes one SOP-PME-1 object. Call Write for each record, then
// Close, which publishes the object and describes it.
//
// A Writer encodes row groups on goroutines of its own, WithParallelism at
// once, seals them in order on another, and hands the ciphertext to the
// store from a third; Close (or a failure) ends them. A Writer dropped
// without Close is aborted when the garbage collector finds it.
type Writer struct {
	ctx     context.Context // New's: bounds the whole write
	cfg     config
	schema  *arrow.Schema
	dek     pme.DEK
	pending blobs.Pending
	out     *sink
	sealer  *seal.Sealer
	pipe    *pipeline

	rg        []arrow.RecordBatch // the open row group's records (retained slices)
	rgRows    int64               // rows in the open row group
	rgRaw     int64               // Arrow bytes of the open row group, about
	rowGroups int                 // row groups submitted
	closed    bool
	err       error

	progress Progress // rows and bytes in (bytes out: out.n; row groups: pipe.sealed)
}

// New starts an object with the given schema in store. ctx bounds the whole
// write: once it is done, Write and Close fail with its error and nothing
// is published (Close's own context applies as well). The schema is checked
// before anything is staged: it must have at least one field, every field
// needs a valid, unique field ID (ErrFieldID), and its Parquet form must be
// one the reader takes (ErrReaderLimit: at most pme.MaxSchemaDepth levels
// deep and reader.DefaultMaxColumns leaf columns).
func New(ctx context.Context, store blobs.Store, schema *arrow.Schema, opts ...Option) (*Writer, error) {
	if ctx == nil {
		return nil, fmt.Errorf("%w: nil context", ErrOption)
	}
	cfg := defaultConfig()
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if cfg.idsFrom != nil {
		return nil, fmt.Errorf("%w: WithFieldIDsFrom applies to SealFile; give New a schema with the IDs", ErrOption)
	}
	if cfg.assignIDs {
		return nil, fmt.Errorf("%w: WithAssignFieldIDs applies to SealFile; give New a schema with IDs (AssignFieldIDs)", ErrOption)
	}
	if cfg.pageVersion == DataPageV2 && cfg.codec != Uncompressed {
		return nil, fmt.Errorf("%w: data page V2 is only written uncompressed: DuckDB 1.5.6 reads the levels and the values of a compressed V2 page in encrypted files as two modules, a layout no PME writer produces", ErrOption)
	}
	if err := checkSchema(schema); err != nil {
		return nil, err
	}
	if store == nil {
		return nil, fmt.Errorf("%w: nil store", ErrOption)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// The encoder must be able to take the schema, and the reader its
	// Parquet form: try both before staging.
	sc, err := pqarrow.ToParquet(schema, cfg.parquetProps(), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEncode, err)
	}
	if err := checkSchemaShape(sc); err != nil {
		return nil, err
	}
	pending, err := store.Create(ctx)
	if err != nil {
		return nil, fmt.Errorf("writer: staging object: %w", err)
	}
	w := &Writer{ctx: ctx, cfg: cfg, schema: schema, dek: pme.NewDEK(), pending: pending}
	// The Sealer writes a page (header and body modules) at a time, and the
	// tail goes in one piece; the sink hands them to the store from a
	// goroutine of its own.
	w.out = newSink(pending)
	w.sealer = seal.NewSealer(w.out, w.dek)
	w.pipe = newPipeline(schema, w.cfg, w.sealer)
	// A Writer dropped without Close must not keep its goroutines or the
	// staged bytes.
	runtime.AddCleanup(w, func(c abandoned) {
		c.pipe.abort(ErrClosed)
		c.out.close()
		c.pending.Abort()
	}, abandoned{w.pipe, w.out, pending})
	return w, nil
}

func (cfg config) parquetProps(extra ...parquet.WriterProperty) *parquet.WriterProperties {
	codec := map[Codec]compress.Compression{
		Zstd:         compress.Codecs.Zstd,
		Snappy:       compress.Codecs.Snappy,
		Uncompressed: compress.Codecs.Uncompressed,
	}[cfg.codec]
	version := parquet.DataPageV1
	if cfg.pageVersion == DataPageV2 {
		version = parquet.DataPageV2
	}
	props := []parquet.WriterProperty{
		parquet.WithCompression(codec),
		parquet.WithMaxRowGroupLength(cfg.rowGroupRows),
		parquet.WithDataPageSize(cfg.dataPageSize),
		parquet.WithDataPageVersion(version),
		parquet.WithDictionaryDefault(cfg.dictionary != dictionaryOff),
		parquet.WithStats(true),
		// Decimals of up to 18 digits as integers, as DuckDB and
		// parquet-rs write them (INT32 up to 9 digits, INT64 up to 18;
		// wider ones FIXED_LEN_BYTE_ARRAY): a scan WithNarrowDecimals
		// hands them to DuckDB as they are stored, where arrow-go's
		// default FIXED_LEN_BYTE_ARRAY is converted value by value.
		parquet.WithStoreDecimalAsInteger(true),
		// SOP-PME-1, as DuckDB, has no page index and no bloom filters.
		parquet.WithPageIndexEnabled(false),
		parquet.WithBloomFilterEnabled(false),
	}
	if cfg.level != 0 && cfg.codec == Zstd {
		props = append(props, parquet.WithCompressionLevel(cfg.level))
	}
	return parquet.NewWriterProperties(append(props, extra...)...)
}

// Write adds the rows of rec to the object. rec's schema must equal the
// writer's. Rows are gathered into row groups (WithRowGroupRows,
// WithRowGroupBytes); each full row group is encoded, sealed and staged
// while the next is gathered. Write keeps references to rec's buffers
// until its row group is encoded; the caller may release rec.
func (w *Writer) Write(rec arrow.RecordBatch) error {
	if w.err != nil {
		return fmt.Errorf("%w: aborted: %w", ErrClosed, w.err)
	}
	if w.closed {
		return ErrClosed
	}
	if rec == nil || !rec.Schema().Equal(w.schema) {
		return ErrRecordSchema
	}
	if err := w.ctx.Err(); err != nil {
		return w.abort(err)
	}
	recRaw := recordBytes(rec)
	n := rec.NumRows()
	perRow := max(1, recRaw/max(1, n))
	for off := int64(0); off < n; {
		// As many rows as the row group's byte budget holds, at most
		// sliceRows at a time.
		budget := max(1, (w.cfg.rowGroupBytes-w.rgRaw)/perRow)
		take := min(n-off, w.cfg.rowGroupRows-w.rgRows, budget, sliceRows)
		w.rg = append(w.rg, rec.NewSlice(off, off+take))
		off += take
		w.rgRows += take
		w.rgRaw += perRow * take
		if w.rgRows >= w.cfg.rowGroupRows || w.rgRaw >= w.cfg.rowGroupBytes {
			if err := w.submit(); err != nil {
				return w.abort(err)
			}
		}
	}
	w.progress.Rows += n
	w.progress.BytesIn += recRaw
	w.report()
	return nil
}

// submit hands the open row group to the pipeline.
func (w *Writer) submit() error {
	if w.rowGroups >= pme.MaxRowGroups {
		return fmt.Errorf("%w: more than %d row groups", pme.ErrTooLarge, pme.MaxRowGroups)
	}
	recs, rows, raw := w.rg, w.rgRows, w.rgRaw
	w.rg, w.rgRows, w.rgRaw = nil, 0, 0
	w.rowGroups++
	return w.pipe.submit(recs, rows, raw)
}

// Progress describes the work of a Writer so far, for progress displays
// and statistics.
type Progress struct {
	// Rows and BytesIn count the rows handed to Write and their Arrow
	// buffer bytes (for a sliced record, its parent's buffers: an
	// estimate).
	Rows, BytesIn int64
	// BytesOut counts the object bytes handed to the store: sealed modules,
	// and after Close the whole object (Size).
	BytesOut int64
	// RowGroups counts the row groups encoded, sealed and handed to the
	// store.
	RowGroups int
	// RewrittenPages counts, in SealFile, the pages rewritten rather than
	// sealed byte for byte: compressed DATA_PAGE_V2 pages as DATA_PAGE (V1)
	// ones, and pages of the deprecated LZ4 codec as LZ4_RAW ones (see
	// seal.Sealer.RewrittenPages). The Writer leaves it 0.
	RewrittenPages int64
}

// Progress returns the Writer's progress so far. Like every method of a
// Writer, it is not safe for use concurrently with Write or Close.
func (w *Writer) Progress() Progress {
	p := w.progress
	if w.out != nil && !w.closed {
		p.BytesOut = w.out.n.Load()
		p.RowGroups = int(w.pipe.sealed.Load())
	}
	return p
}

// report calls the progress callback, if any.
func (w *Writer) report() {
	if w.cfg.progress != nil {
		w.cfg.progress(w.Progress())
	}
}

// recordBytes returns the memory a record's Arrow buffers hold: their
// capacity, slack included (a slice counts its parent's buffers, which it
// keeps alive).
func recordBytes(rec arrow.RecordBatch) int64 {
	var n int64
	var add func(d arrow.ArrayData)
	add = func(d arrow.ArrayData) {
		for _, b := range d.Buffers() {
			if b != nil {
				n += int64(b.Cap())
			}
		}
		for _, c := range d.Children() {
			add(c)
		}
	}
	for _, c := range rec.Columns() {
		add(c.Data())
	}
	return n
}

// Close finishes the object and publishes it: the encoder writes its footer,
// the footer is sealed, the key_ref is written, the object is padded to its
// Padmé size, and the bytes are committed to the store (Section 11.12). On
// any error nothing is published and the staged bytes are discarded. Close
// returns ErrClosed if called again.
func (w *Writer) Close(ctx context.Context) (Object, error) {
	if w.closed {
		return Object{}, ErrClosed
	}
	w.closed = true
	if w.err != nil {
		return Object{}, fmt.Errorf("%w: aborted: %w", ErrClosed, w.err)
	}
	obj, err := w.finish(ctx)
	if err != nil {
		return Object{}, w.abort(err)
	}
	w.progress.BytesOut = int64(obj.Size)
	w.progress.RowGroups = int(w.pipe.sealed.Load())
	if w.cfg.progress != nil {
		w.cfg.progress(w.progress)
	}
	return obj, nil
}

// WriteRecords writes every record of rr into a new object in store, and
// publishes it: New with rr's schema, Write for each record, then Close.
// ctx bounds the whole write. It does not release rr. On any error, from
// rr included, nothing is published.
func WriteRecords(ctx context.Context, store blobs.Store, rr array.RecordReader, opts ...Option) (Object, error) {
	if rr == nil {
		return Object{}, fmt.Errorf("%w: nil record reader", ErrOption)
	}
	w, err := New(ctx, store, rr.Schema(), opts...)
	if err != nil {
		return Object{}, err
	}
	for rr.Next() {
		if err := w.Write(rr.RecordBatch()); err != nil {
			return Object{}, err // w is aborted
		}
	}
	if err := rr.Err(); err != nil {
		return Object{}, w.abort(fmt.Errorf("writer: reading records: %w", err))
	}
	return w.Close(ctx)
}

func (w *Writer) finish(ctx context.Context) (Object, error) {
	if err := errors.Join(ctx.Err(), w.ctx.Err()); err != nil {
		return Object{}, err
	}
	// Step 1: the last row group (or, for an object without rows, a file
	// without row groups, which gives the footer its schema) is encoded and
	// sealed with the others.
	if w.rgRows > 0 || w.rowGroups == 0 {
		if err := w.submit(); err != nil {
			return Object{}, err
		}
	}
	if err := w.pipe.finish(); err != nil {
		return Object{}, err
	}
	footer, err := w.sealer.Close()
	if err != nil {
		return Object{}, err
	}
	// The footer's metadata, with the empty padding entry; then steps 2
	// to 5.
	return newEncoded(footer, w.sealer.Offset(), w.dek, w.cfg.keyValues).finish(ctx, w.out, w.pending)
}

// abort records err, discards the staged bytes, and returns err. Later
// calls of Write and Close return err.
func (w *Writer) abort(err error) error {
	if w.err != nil {
		return w.err
	}
	w.err = err
	release(w.rg)
	w.rg = nil
	if w.pipe != nil {
		w.pipe.abort(err) // what is still encoding finishes; nothing more is sealed
	}
	if w.out != nil {
		w.out.close() // its goroutine ends; what it still held goes nowhere
	}
	if w.pending != nil {
		w.pending.Abort()
	}
	return err
}
