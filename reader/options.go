package reader

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/sovm/sop-pme/verify"
)

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

// A ScanOption configures Scan.
type ScanOption func(*scanConfig) error

type scanConfig struct {
	fieldIDs  []int32
	rowGroups []int
	batch     int64
	memLimit  int64
	maxValues int64
	narrow    bool // WithNarrowDecimals
	dict      bool // WithDictionaries
	dictAny   bool // (tests) every column with dictionary pages
	parallel  int  // WithParallelism, or 0 for GOMAXPROCS
	arrowOnly bool // (tests) every row group by arrow-go's decoder (flatscan.go)
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
