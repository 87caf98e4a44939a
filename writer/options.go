package writer

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"runtime"
	"unicode/utf8"

	"github.com/sovm/sop-pme/padme"
)

// Codec is the compression codec of data pages.
type Codec int

// The codecs. Zstd is the default.
const (
	Zstd Codec = iota
	Snappy
	Uncompressed
)

// String returns the codec's name, such as "zstd".
func (c Codec) String() string {
	switch c {
	case Zstd:
		return "zstd"
	case Snappy:
		return "snappy"
	case Uncompressed:
		return "uncompressed"
	}
	return fmt.Sprintf("Codec(%d)", int(c))
}

// DataPageVersion selects the Parquet data page format.
type DataPageVersion int

// The data page versions. V1 is the default; DuckDB reads both.
const (
	DataPageV1 DataPageVersion = 1
	DataPageV2 DataPageVersion = 2
)

// Defaults of the options.
const (
	DefaultRowGroupRows  = 122_880 // DuckDB's: row groups encode, and read, in parallel
	DefaultRowGroupBytes = 128 << 20
	DefaultDataPageSize  = 1 << 20
)

type config struct {
	codec         Codec
	rowGroupRows  int64
	rowGroupBytes int64
	dataPageSize  int64
	pageVersion   DataPageVersion
	dictionary    dictionaryMode
	keyValues     [][2]string
	progress      func(Progress)
	parallelism   int
	level         int           // zstd level; 0: the codec's default
	assignIDs     bool          // SealFile only: WithAssignFieldIDs
	idsFrom       *arrow.Schema // SealFile only: WithFieldIDsFrom
	// SealFile only, and only in this package's tests: publish row groups
	// without decoding them first (see decodeRowGroup).
	noDecodeCheck bool
}

func defaultConfig() config {
	return config{
		codec:         Zstd,
		rowGroupRows:  DefaultRowGroupRows,
		rowGroupBytes: DefaultRowGroupBytes,
		dataPageSize:  DefaultDataPageSize,
		pageVersion:   DataPageV1,
		dictionary:    dictionaryAuto,
		parallelism:   runtime.GOMAXPROCS(0),
	}
}

// An Option configures a Writer. Options are checked by New, which returns an
// error matching ErrOption for a bad one.
type Option func(*config) error

// WithCodec sets the compression codec of data pages (default Zstd).
func WithCodec(c Codec) Option {
	return func(cfg *config) error {
		if c < Zstd || c > Uncompressed {
			return fmt.Errorf("%w: codec %v", ErrOption, c)
		}
		cfg.codec = c
		return nil
	}
}

// WithRowGroupRows sets the most rows a row group holds (default
// DefaultRowGroupRows, DuckDB's default). Row groups are the unit of
// parallel encoding, of a scan's read-ahead, and of DuckDB's parallelism
// over an object (package sql).
func WithRowGroupRows(n int64) Option {
	return func(cfg *config) error {
		if n <= 0 {
			return fmt.Errorf("%w: row group of %d rows", ErrOption, n)
		}
		cfg.rowGroupRows = n
		return nil
	}
}

// WithRowGroupBytes sets the size in bytes at which a row group is closed
// even if it has fewer rows than the row limit (default
// DefaultRowGroupBytes). The size is the capacity of the rows' Arrow
// buffers (for a sliced record, its share of its parent's), which bounds
// what they encode to. It bounds the writer's memory: (WithParallelism + 1)
// row groups are held at most, one being gathered and the others handed to
// the encoders, each as its records and then its encoded plaintext.
func WithRowGroupBytes(n int64) Option {
	return func(cfg *config) error {
		if n <= 0 {
			return fmt.Errorf("%w: row group of %d bytes", ErrOption, n)
		}
		cfg.rowGroupBytes = n
		return nil
	}
}

// WithDataPageSize sets the target size in bytes of a data page (default
// DefaultDataPageSize).
func WithDataPageSize(n int64) Option {
	return func(cfg *config) error {
		if n <= 0 || n > 1<<30 {
			return fmt.Errorf("%w: data page size %d", ErrOption, n)
		}
		cfg.dataPageSize = n
		return nil
	}
}

// WithDataPageVersion selects data page format V1 (default) or V2. V2 pages
// are written only uncompressed (WithCodec(Uncompressed)); New refuses V2
// with another codec, because DuckDB 1.5.6 cannot read compressed V2 pages
// in encrypted files: it expects their levels and values in two modules.
func WithDataPageVersion(v DataPageVersion) Option {
	return func(cfg *config) error {
		if v != DataPageV1 && v != DataPageV2 {
			return fmt.Errorf("%w: data page version %d", ErrOption, v)
		}
		cfg.pageVersion = v
		return nil
	}
}

// dictionaryMode says where dictionary encoding is used.
type dictionaryMode int

const (
	dictionaryAuto dictionaryMode = iota // where it pays (the default)
	dictionaryOn                         // every column that can have one
	dictionaryOff                        // no column
)

// WithDictionary turns dictionary encoding on for every column (arrow-go
// never dictionary-encodes booleans) or off for every column, in which case
// every column is written in plain encoding. By default the writer decides
// per column and row group, as DuckDB does: a column is dictionary-encoded
// only where, from a sample of the row group's values, the dictionary and
// its indices come out smaller than the plain values and the dictionary fits
// its page; other columns are plain from their first page.
func WithDictionary(on bool) Option {
	return func(cfg *config) error {
		cfg.dictionary = dictionaryOff
		if on {
			cfg.dictionary = dictionaryOn
		}
		return nil
	}
}

// WithMetadata adds a key-value entry to the object's footer metadata. The
// footer is encrypted, so the entry is not visible to untrusted storage
// (Section 11.4). Keys starting with the reserved padding key
// sovm:sop-pad-v1 are refused with ErrReservedKey (Section 11.8).
func WithMetadata(key, value string) Option {
	return func(cfg *config) error {
		if padme.IsReserved(key) {
			return fmt.Errorf("%w: %q", ErrReservedKey, key)
		}
		if !utf8.ValidString(key) || !utf8.ValidString(value) {
			return fmt.Errorf("%w: metadata must be UTF-8", ErrOption)
		}
		cfg.keyValues = append(cfg.keyValues, [2]string{key, value})
		return nil
	}
}

// WithProgress makes the Writer call fn with its Progress after each Write,
// after each row group it seals, and once after Close has published the
// object (then BytesOut is the object's size). fn runs on the goroutine
// that called Write or Close, and should return quickly.
func WithProgress(fn func(Progress)) Option {
	return func(cfg *config) error {
		if fn == nil {
			return fmt.Errorf("%w: nil progress function", ErrOption)
		}
		cfg.progress = fn
		return nil
	}
}

// WithParallelism sets how many row groups are encoded at once (default
// runtime.GOMAXPROCS(0)). Row groups are sealed in order whatever n is, so
// the object's layout does not depend on it; (n + 1) row groups are held in
// memory at most. For SealFile it is how many row groups its decode check
// decodes at once, while the next ones are sealed.
func WithParallelism(n int) Option {
	return func(cfg *config) error {
		if n < 1 || n > 256 {
			return fmt.Errorf("%w: parallelism %d", ErrOption, n)
		}
		cfg.parallelism = n
		return nil
	}
}

// WithCompressionLevel sets the zstd level (1 to 22, as the zstd command
// line numbers them; default 3, which DuckDB uses too). Higher levels make
// smaller objects, more slowly. It applies to WithCodec(Zstd) only.
func WithCompressionLevel(level int) Option {
	return func(cfg *config) error {
		if level < 1 || level > 22 {
			return fmt.Errorf("%w: zstd level %d", ErrOption, level)
		}
		cfg.level = level
		return nil
	}
}
