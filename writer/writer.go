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
// "PARQUET:field_id" (FieldIDKey) with a unique non-negative integer.
//
// The padding lives in the footer module, whose length is a u32: an object
// whose Padmé padding would not fit one module (from 256 GiB, where the
// padding can reach 4 GiB) is refused with ErrPadding, never published short
// of its target.
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
	"github.com/sovm/sop-pme/keyref"
	"github.com/sovm/sop-pme/padme"
	"github.com/sovm/sop-pme/pme"
)

// abandoned is what the cleanup of a Writer dropped without Close releases.
type abandoned struct {
	out     *sink
	pending blobs.Pending
}

// sliceRows is the most rows Write hands the encoder at once.
const sliceRows = 1 << 16

// A Writer writes one SOP-PME-1 object. Call Write for each record, then
// Close, which publishes the object and describes it. A Writer hands its
// ciphertext to the store from a goroutine of its own, which Close (or a
// failure) ends; a Writer dropped without Close is aborted when the garbage
// collector finds it.
type Writer struct {
	cfg     config
	schema  *arrow.Schema
	dek     pme.DEK
	pending blobs.Pending
	out     *sink
	rf      *pme.Reframer
	fw      *pqarrow.FileWriter

	rowGroups int   // row groups opened in the encoder
	rgRows    int64 // rows in the open row group
	rgRaw     int64 // Arrow bytes handed to the encoder for the open row group, about
	rgFull    bool  // the open row group takes no more rows
	leaves    int64 // leaf columns of the schema
	closed    bool
	err       error

	progress Progress // rows and bytes in, row groups sealed (bytes out: out.n)
}

// New starts an object with the given schema in store. The schema is checked
// before anything is staged: it must have at least one field, and every
// field needs a valid, unique field ID (ErrFieldID).
func New(store blobs.Store, schema *arrow.Schema, opts ...Option) (*Writer, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
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
	if err := cfg.ctx.Err(); err != nil {
		return nil, err
	}
	pending, err := store.Create(cfg.ctx)
	if err != nil {
		return nil, fmt.Errorf("writer: staging object: %w", err)
	}
	w := &Writer{cfg: cfg, schema: schema, dek: pme.NewDEK(), pending: pending, leaves: int64(leafColumns(schema))}
	// The Reframer writes a page (header and body modules) at a time, and
	// the tail in one piece; the sink hands them to the store from a
	// goroutine of its own.
	w.out = newSink(pending)
	// A Writer dropped without Close must not keep the sink's goroutine or
	// the staged bytes.
	runtime.AddCleanup(w, func(c abandoned) {
		c.out.close()
		c.pending.Abort()
	}, abandoned{w.out, pending})
	w.rf = pme.NewReframer(w.out, w.dek)
	w.fw, err = pqarrow.NewFileWriter(schema, plainSink{w.rf}, cfg.parquetProps(), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		w.abort(err)
		return nil, fmt.Errorf("%w: %w", ErrEncode, err)
	}
	return w, nil
}

func (cfg config) parquetProps() *parquet.WriterProperties {
	codec := map[Codec]compress.Compression{
		Zstd:         compress.Codecs.Zstd,
		Snappy:       compress.Codecs.Snappy,
		Uncompressed: compress.Codecs.Uncompressed,
	}[cfg.codec]
	version := parquet.DataPageV1
	if cfg.pageVersion == DataPageV2 {
		version = parquet.DataPageV2
	}
	return parquet.NewWriterProperties(
		parquet.WithCompression(codec),
		parquet.WithMaxRowGroupLength(cfg.rowGroupRows),
		parquet.WithDataPageSize(cfg.dataPageSize),
		parquet.WithDataPageVersion(version),
		parquet.WithDictionaryDefault(cfg.dictionary),
		parquet.WithStats(true),
		// SOP-PME-1, as DuckDB, has no page index and no bloom filters.
		parquet.WithPageIndexEnabled(false),
		parquet.WithBloomFilterEnabled(false),
	)
}

// plainSink hides the Reframer's Close from arrow-go, which closes its sink
// if it can.
type plainSink struct{ rf *pme.Reframer }

func (s plainSink) Write(p []byte) (int, error) { return s.rf.Write(p) }

// Write adds the rows of rec to the object. rec's schema must equal the
// writer's. Rows are buffered into row groups; each full row group is
// encoded, sealed and staged before the next begins.
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
	if err := w.cfg.ctx.Err(); err != nil {
		return w.abort(err)
	}
	recRaw := recordBytes(rec)
	for off, n := int64(0), rec.NumRows(); off < n; {
		if w.rgFull || w.rowGroups == 0 {
			if err := w.nextRowGroup(); err != nil {
				return w.abort(err)
			}
		}
		// As many rows as the row group's byte budget surely holds (counted
		// at their Arrow size, more than they encode to), else sliceRows at
		// a time, so that the byte limit is checked often enough to hold.
		perRow := max(1, recRaw/max(1, n))
		budget := (w.cfg.rowGroupBytes - w.bufferedEstimate()) / perRow
		take := min(n-off, w.cfg.rowGroupRows-w.rgRows, max(sliceRows, budget))
		part := rec
		if off != 0 || take != n {
			part = rec.NewSlice(off, off+take)
		}
		err := w.fw.WriteBuffered(part)
		if part != rec {
			part.Release()
		}
		if err != nil {
			return w.abort(fmt.Errorf("%w: %w", ErrEncode, err))
		}
		off += take
		w.rgRows += take
		w.rgRaw += recRaw * take / n
		w.rgFull = w.rgRows >= w.cfg.rowGroupRows || w.bufferedEstimate() >= w.cfg.rowGroupBytes
	}
	w.progress.Rows += rec.NumRows()
	w.progress.BytesIn += recRaw
	w.report()
	return nil
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
}

// Progress returns the Writer's progress so far. Like every method of a
// Writer, it is not safe for use concurrently with Write or Close.
func (w *Writer) Progress() Progress {
	p := w.progress
	if w.out != nil {
		p.BytesOut = int64(w.out.n)
	}
	return p
}

// report calls the progress callback, if any.
func (w *Writer) report() {
	if w.cfg.progress != nil {
		w.cfg.progress(w.Progress())
	}
}

// bufferedEstimate bounds from above the encoded bytes the open row group
// holds: the pages the encoder has closed, plus its open pages, each at most
// a data page and together at most the Arrow bytes handed over.
func (w *Writer) bufferedEstimate() int64 {
	return w.fw.RowGroupTotalCompressedBytes() + min(w.rgRaw, w.leaves*w.cfg.dataPageSize)
}

// recordBytes returns the size of a record's Arrow buffers (a slice counts
// its parent's buffers: an estimate).
func recordBytes(rec arrow.RecordBatch) int64 {
	var n int64
	var add func(d arrow.ArrayData)
	add = func(d arrow.ArrayData) {
		for _, b := range d.Buffers() {
			if b != nil {
				n += int64(b.Len())
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

// leafColumns counts the Parquet leaf columns of a schema.
func leafColumns(s *arrow.Schema) int {
	var count func(t arrow.DataType) int
	count = func(t arrow.DataType) int {
		switch t := t.(type) {
		case *arrow.MapType:
			return count(t.KeyType()) + count(t.ItemType())
		case arrow.ListLikeType:
			return count(t.Elem())
		case *arrow.StructType:
			n := 0
			for _, f := range t.Fields() {
				n += count(f.Type)
			}
			return n
		case arrow.ExtensionType:
			return count(t.StorageType())
		}
		return 1
	}
	n := 0
	for _, f := range s.Fields() {
		n += count(f.Type)
	}
	return n
}

// nextRowGroup closes the open row group, if any, seals it, and opens the
// next.
func (w *Writer) nextRowGroup() error {
	if w.rowGroups >= pme.MaxRowGroups {
		return fmt.Errorf("%w: more than %d row groups", pme.ErrTooLarge, pme.MaxRowGroups)
	}
	if err := w.fw.NewBufferedRowGroupChecked(); err != nil {
		return fmt.Errorf("%w: %w", ErrEncode, err)
	}
	w.rowGroups++
	w.rgRows, w.rgRaw, w.rgFull = 0, 0, false
	if w.rowGroups > 1 {
		return w.flushRowGroup(w.rowGroups - 2)
	}
	return nil
}

// flushRowGroup hands the column chunks of closed row group i to the
// Reframer, which seals them and drops their plaintext.
func (w *Writer) flushRowGroup(i int) error {
	md, err := w.fw.FileMetadata()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrEncode, err)
	}
	rg := md.RowGroup(i)
	spans := make([]pme.Span, rg.NumColumns())
	for j := range spans {
		cc, err := rg.ColumnChunk(j)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrEncode, err)
		}
		start := cc.DataPageOffset()
		if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 && cc.DictionaryPageOffset() < start {
			start = cc.DictionaryPageOffset()
		}
		spans[j] = pme.Span{Off: start, Len: cc.TotalCompressedSize()}
	}
	if err := w.rf.FlushRowGroup(spans); err != nil {
		return err
	}
	w.progress.RowGroups++
	w.report()
	return nil
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
	w, err := New(store, rr.Schema(), append(opts, WithContext(ctx))...)
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
	if err := errors.Join(ctx.Err(), w.cfg.ctx.Err()); err != nil {
		return Object{}, err
	}
	// Step 1: the encoder finishes. The padding entry is present, empty,
	// on every object, so that L includes it (Section 11.8).
	for _, kv := range w.cfg.keyValues {
		if err := w.fw.AppendKeyValueMetadata(kv[0], kv[1]); err != nil {
			return Object{}, fmt.Errorf("%w: %w", ErrEncode, err)
		}
	}
	if err := w.fw.AppendKeyValueMetadata(padme.PadKey, ""); err != nil {
		return Object{}, fmt.Errorf("%w: %w", ErrEncode, err)
	}
	if err := w.fw.Close(); err != nil {
		return Object{}, fmt.Errorf("%w: %w", ErrEncode, err)
	}
	if w.rowGroups > 0 {
		if err := w.flushRowGroup(w.rowGroups - 1); err != nil {
			return Object{}, err
		}
	}
	step1 := encoded{rf: w.rf, dek: w.dek}
	// Steps 2 to 5.
	step2, err := step1.encrypt()
	if err != nil {
		return Object{}, err
	}
	step3, err := step2.withKeyRef(keyref.New())
	if err != nil {
		return Object{}, err
	}
	step4, err := step3.pad()
	if err != nil {
		return Object{}, err
	}
	return step4.publish(ctx, w.out, w.pending)
}

// abort records err, discards the staged bytes, and returns err. Later
// calls of Write and Close return err.
func (w *Writer) abort(err error) error {
	if w.err != nil {
		return w.err
	}
	w.err = err
	if w.fw != nil {
		w.fw.Close() // releases arrow-go's buffers; its output goes nowhere
	}
	if w.out != nil {
		w.out.close() // its goroutine ends; what it still held goes nowhere
	}
	if w.pending != nil {
		w.pending.Abort()
	}
	return err
}
