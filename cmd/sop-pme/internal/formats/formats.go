// Package formats reads tables into Arrow records for the sop-pme command's
// import, and writes them out for its export: Parquet, Arrow IPC (file and
// stream), CSV and NDJSON. Inputs stream: memory is bounded by a row group
// (Parquet), a record batch (Arrow IPC) or a batch of rows (CSV, NDJSON),
// never by the input, except where a format needs random access and the
// input is a pipe (Parquet or an Arrow IPC file on stdin), which is read
// into memory.
package formats

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/sovm/sop-pme/internal/pqtypes"
)

// A Format is a table format.
type Format string

// The formats.
const (
	Parquet     Format = "parquet"
	ArrowFile   Format = "arrow"  // Arrow IPC file ("ARROW1" at both ends)
	ArrowStream Format = "arrows" // Arrow IPC stream
	CSV         Format = "csv"
	NDJSON      Format = "ndjson" // one JSON object per line
)

// All lists the formats, for help texts.
var All = []Format{Parquet, ArrowFile, ArrowStream, CSV, NDJSON}

// ErrFormat reports an input that is not in the format it is read as, or
// whose format cannot be told.
var ErrFormat = errors.New("formats: not a readable table")

// Parse returns the format named s.
func Parse(s string) (Format, error) {
	for _, f := range All {
		if string(f) == s {
			return f, nil
		}
	}
	return "", fmt.Errorf("%w: %q (one of %s)", ErrFormat, s, list())
}

func list() string {
	s := make([]string, len(All))
	for i, f := range All {
		s[i] = string(f)
	}
	return strings.Join(s, ", ")
}

// Detect tells the format of an input from its first bytes, then from its
// file name's extension.
func Detect(name string, head []byte) (Format, error) {
	switch {
	case bytes.HasPrefix(head, []byte("PAR1")):
		return Parquet, nil
	case bytes.HasPrefix(head, []byte("PARE")):
		return "", fmt.Errorf("%w: %s is an encrypted Parquet file; import takes plaintext tables", ErrFormat, name)
	case bytes.HasPrefix(head, []byte("ARROW1")):
		return ArrowFile, nil
	case bytes.HasPrefix(head, []byte{0xff, 0xff, 0xff, 0xff}):
		return ArrowStream, nil
	}
	switch strings.ToLower(filepath.Ext(name)) {
	case ".csv":
		return CSV, nil
	case ".ndjson", ".jsonl", ".json":
		return NDJSON, nil
	case ".arrows":
		return ArrowStream, nil
	}
	return "", fmt.Errorf("%w: %s (give --format: %s)", ErrFormat, name, list())
}

// InputOptions configure Open.
type InputOptions struct {
	Format    Format // "" detects it
	BatchRows int    // rows per record for CSV, NDJSON and Parquet; 0: 64 Ki
	Alloc     memory.Allocator
	// OnRead, if set, is called with the number of bytes of each read
	// from the input (for progress displays). It may be called from
	// several goroutines at once.
	OnRead func(n int)

	// MaxRecordBytes is the longest CSV record or NDJSON line read; 0:
	// MaxRecordBytes. A longer one fails the read (ErrRecordTooLong).
	MaxRecordBytes int64

	allocFloor int64 // the allocation bound's floor (see newBoundedAlloc); 0: the default
}

// An Input is a table being read.
type Input struct {
	Format Format
	array.RecordReader
	close func() error
	name  string
}

// Close releases the reader and closes the input.
func (in *Input) Close() (err error) {
	in.RecordReader.Release()
	if in.close != nil {
		defer func() {
			if p := recover(); p != nil {
				err = recovered(in.name, in.Format, p)
			}
		}()
		return in.close()
	}
	return nil
}

// Open opens the table at path ("-" for stdin) for reading.
func Open(ctx context.Context, path string, opts InputOptions) (*Input, error) {
	if path == "-" {
		return OpenFile(ctx, os.Stdin, "stdin", opts)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	in, err := OpenFile(ctx, f, path, opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	prev := in.close
	in.close = func() error {
		err := f.Close()
		if prev != nil {
			err = errors.Join(prev(), err)
		}
		return err
	}
	return in, nil
}

// OpenFile opens the table in f, called name in errors, for reading. f
// stays the caller's to close, after the Input.
func OpenFile(ctx context.Context, f *os.File, name string, opts InputOptions) (*Input, error) {
	return openSource(ctx, f, name, opts)
}

// OpenStream opens the table read from r, called name in errors, for
// reading, as from a pipe: a format that needs random access (Parquet, an
// Arrow IPC file) is read into memory first.
func OpenStream(ctx context.Context, r io.Reader, name string, opts InputOptions) (*Input, error) {
	return openSource(ctx, stream{r}, name, opts)
}

func openSource(ctx context.Context, f file_, name string, opts InputOptions) (*Input, error) {
	if opts.BatchRows <= 0 {
		opts.BatchRows = 1 << 16
	}
	if opts.Alloc == nil {
		opts.Alloc = memory.DefaultAllocator
	}
	if opts.OnRead != nil {
		f = &countingFile{file_: f, onRead: opts.OnRead}
	}
	return open(ctx, f, name, opts)
}

// errStream is what a stream answers to ReadAt, Seek and Stat.
var errStream = errors.New("formats: a stream has no random access")

// stream is a file_ that can only be read in order, as a pipe.
type stream struct{ io.Reader }

func (stream) ReadAt([]byte, int64) (int, error) { return 0, errStream }
func (stream) Seek(int64, int) (int64, error)    { return 0, errStream }
func (stream) Stat() (os.FileInfo, error)        { return nil, errStream }

// file_ is what Open reads: an *os.File, or one that counts what is read.
type file_ interface {
	readAtSeeker
	Stat() (os.FileInfo, error)
}

// countingFile reports the bytes read from a file.
type countingFile struct {
	file_
	onRead func(n int)
}

func (c *countingFile) Read(p []byte) (int, error) {
	n, err := c.file_.Read(p)
	c.onRead(n)
	return n, err
}

func (c *countingFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.file_.ReadAt(p, off)
	c.onRead(n)
	return n, err
}

// open opens f in its format. Whatever arrow-go does with bad input, open
// and the Input it returns report it as an error matching ErrFormat: a
// panic in a reader is recovered (see guarded), and Parquet and Arrow IPC
// readers allocate through a bounded allocator (see boundedAlloc).
func open(ctx context.Context, f file_, name string, opts InputOptions) (in *Input, err error) {
	defer func() {
		if p := recover(); p != nil {
			in, err = nil, recovered(name, in.formatOr(opts.Format), p)
		}
	}()
	in, err = openFormat(ctx, f, name, opts)
	if err != nil {
		return nil, badInput(name, err)
	}
	in.name = name
	in.RecordReader = &guarded{RecordReader: in.RecordReader, name: name, format: in.Format,
		validate: in.Format == ArrowFile || in.Format == ArrowStream}
	if in.Format == ArrowFile || in.Format == ArrowStream {
		// After the arrays are validated: views read as the forms Parquet
		// holds (see views.go).
		in.RecordReader = unviewed(in.RecordReader, opts.Alloc, name)
	}
	return in, nil
}

func (in *Input) formatOr(f Format) Format {
	if in != nil {
		return in.Format
	}
	return f
}

func openFormat(ctx context.Context, f file_, name string, opts InputOptions) (*Input, error) {
	// The input's size, if it is a regular file: no length the input
	// declares can be larger.
	size := int64(-1)
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		size = fi.Size()
	}
	br := bufio.NewReaderSize(f, 1<<16)
	format := opts.Format
	if format == "" {
		head, _ := br.Peek(8)
		var err error
		if format, err = Detect(name, head); err != nil {
			return nil, err
		}
	}
	// Formats that need random access read the file itself, or all of a
	// pipe into memory.
	randomAccess := func() (readAtSeeker, int64, error) {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			if _, err := f.Seek(0, io.SeekStart); err == nil {
				return f, fi.Size(), nil
			}
		}
		b, err := io.ReadAll(br)
		if err != nil {
			return nil, 0, fmt.Errorf("reading %s: %w", name, err)
		}
		return bytes.NewReader(b), int64(len(b)), nil
	}
	switch format {
	case Parquet:
		ra, n, err := randomAccess()
		if err != nil {
			return nil, err
		}
		opts.Alloc = newBoundedAlloc(opts.Alloc, n, opts.allocFloor)
		return openParquet(ctx, ra, n, name, opts)
	case ArrowFile:
		ra, n, err := randomAccess()
		if err != nil {
			return nil, err
		}
		blocks, err := checkArrowFile(ra, n)
		if err != nil {
			return nil, fmt.Errorf("%w: %s is not an Arrow IPC file: %w", ErrFormat, name, err)
		}
		if _, err := ra.Seek(0, io.SeekStart); err != nil {
			return nil, fmt.Errorf("reading %s: %w", name, err)
		}
		r, err := ipc.NewFileReader(ra, ipc.WithAllocator(newBoundedAlloc(opts.Alloc, n, opts.allocFloor)))
		if err != nil {
			return nil, fmt.Errorf("%w: %s is not an Arrow IPC file: %v", ErrFormat, name, err)
		}
		return &Input{Format: ArrowFile, RecordReader: &fileRecords{r: r, ra: ra, size: n, blocks: blocks}, close: r.Close}, nil
	case ArrowStream:
		ipcOpts := []ipc.Option{ipc.WithAllocator(newBoundedAlloc(opts.Alloc, size, opts.allocFloor))}
		// A pipe's messages: arrow-go's metadata limit, and bodies as long
		// as the input goes (read, never allocated as declared).
		metaLimit, bodyLimit := int64(64<<20), int64(math.MaxInt64)
		if size >= 0 {
			// No message of a file is larger than the file.
			metaLimit, bodyLimit = max(size, 8), max(size, 8)
			ipcOpts = append(ipcOpts, ipc.WithMetadataSizeLimit(metaLimit), ipc.WithBodySizeLimit(bodyLimit))
		}
		// The reader owns msgs, and releases it.
		r, err := ipc.NewReaderFromMessageReader(newStreamMessages(br, metaLimit, bodyLimit), ipcOpts...)
		if err != nil {
			return nil, fmt.Errorf("%w: %s is not an Arrow IPC stream: %v", ErrFormat, name, err)
		}
		return &Input{Format: ArrowStream, RecordReader: r}, nil
	case CSV:
		rr, err := openCSV(bufio.NewReaderSize(newRecordGuard(br, name, CSV, opts.MaxRecordBytes), 1<<16), name, opts)
		if err != nil {
			return nil, err
		}
		return &Input{Format: CSV, RecordReader: rr}, nil
	case NDJSON:
		rr, err := openNDJSON(bufio.NewReaderSize(newRecordGuard(br, name, NDJSON, opts.MaxRecordBytes), 1<<16), name, opts)
		if err != nil {
			return nil, err
		}
		return &Input{Format: NDJSON, RecordReader: rr}, nil
	}
	return nil, fmt.Errorf("%w: %q", ErrFormat, format)
}

// readAtSeeker is what Parquet and Arrow IPC files are read through: a
// file, or a pipe read into memory.
type readAtSeeker interface {
	io.Reader
	io.ReaderAt
	io.Seeker
}

// openParquet reads a plaintext Parquet file row group by row group, each
// field with the field ID the file gives it ("PARQUET:field_id"; -1 when it
// has none).
func openParquet(ctx context.Context, ra readAtSeeker, size int64, name string, opts InputOptions) (*Input, error) {
	// Buffered streams read a column chunk a buffer at a time, rather than
	// whole: memory stays bounded by pages, not by the input's row groups.
	props := parquet.NewReaderProperties(opts.Alloc)
	props.BufferedStreamEnabled = true
	props.BufferSize = 1 << 20
	ropts := []file.ReadOption{file.WithReadProps(props)}
	md, err := parquetMeta(ra, size, name)
	if err != nil {
		return nil, err
	}
	if md != nil {
		ropts = append(ropts, file.WithMetadata(md))
	}
	pf, err := file.NewParquetReader(ra, ropts...)
	if err != nil {
		return nil, fmt.Errorf("%w: %s is not a readable Parquet file: %v", ErrFormat, name, err)
	}
	stored := takeArrowSchema(pf)
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: int64(opts.BatchRows)}, opts.Alloc)
	if err != nil {
		pf.Close()
		return nil, fmt.Errorf("%w: %s: %v", ErrFormat, name, err)
	}
	// The types the reader reads the file in once sealed: those pqarrow
	// derives, corrected where it departs from Parquet's rules and from
	// pyarrow and DuckDB (legacy lists keep their shape and their elements'
	// nullability, INT96 and legacy timestamps have no time zone, GEOMETRY
	// and GEOGRAPHY stay geospatial), refined by the file's ARROW:schema
	// where it is consistent (see pqtypes).
	fields, _ := pqtypes.Apply(pf.MetaData().Schema, fr.Manifest, stored)
	rr, err := fr.GetRecordReader(ctx, nil, nil)
	if err != nil {
		pf.Close()
		return nil, fmt.Errorf("%w: %s: %v", ErrFormat, name, err)
	}
	return &Input{Format: Parquet, RecordReader: pqtypes.NewRecordReader(rr, fields), close: pf.Close}, nil
}

// fileRecords reads the record batches of an Arrow IPC file in order. A
// batch is the file reader's, valid until the next one.
type fileRecords struct {
	r      *ipc.FileReader
	ra     io.ReaderAt
	size   int64
	blocks [][2]int64 // offset and metadata length of each batch
	i      int
	cur    arrow.RecordBatch
	err    error
}

func (f *fileRecords) Schema() *arrow.Schema { return f.r.Schema() }
func (f *fileRecords) Next() bool {
	f.cur = nil
	if f.err != nil || f.i >= f.r.NumRecords() {
		return false
	}
	if f.i < len(f.blocks) {
		b := f.blocks[f.i]
		if err := checkArrowBlock(f.ra, f.size, b[0], int32(b[1])); err != nil {
			f.err = fmt.Errorf("%w: Arrow IPC record batch %d: %w", ErrFormat, f.i, err)
			return false
		}
	}
	f.cur, f.err = f.r.RecordBatch(f.i)
	f.i++
	if f.err != nil {
		f.err = fmt.Errorf("%w: Arrow IPC record batch %d: %v", ErrFormat, f.i-1, f.err)
		f.cur = nil
	}
	return f.cur != nil
}
func (f *fileRecords) RecordBatch() arrow.RecordBatch { return f.cur }
func (f *fileRecords) Record() arrow.RecordBatch      { return f.cur }
func (f *fileRecords) Err() error                     { return f.err }
func (f *fileRecords) Retain()                        {}
func (f *fileRecords) Release()                       { f.cur = nil }
