package table

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/sovm/sop-pme/reader"
)

// DefaultPrefetch is how many objects a Scan opens ahead of the one it
// decodes, unless WithPrefetch says otherwise.
const DefaultPrefetch = 4

// An Option configures Scan, Verify and NewAdapter.
type Option func(*config) error

type config struct {
	fields   []int32
	prefetch int
	ropts    []reader.Option
	sopts    []reader.ScanOption
	mem      memory.Allocator
}

func newConfig(opts []Option) (*config, error) {
	cfg := &config{prefetch: DefaultPrefetch, mem: memory.DefaultAllocator}
	for _, o := range opts {
		if err := o(cfg); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

// WithFields projects a Scan to the table's columns with these field IDs, or
// containing them: a nested field's ID selects the whole top-level column it
// is in. Columns are named by ID because names change and IDs do not
// (SOP-PME-1 Section 11.2); Resolve turns names and dotted paths into IDs.
// The records hold those columns, in the table's order. WithFields without an
// ID is an error (ErrOption), never "every column"; the default is every
// column.
func WithFields(ids ...int32) Option {
	return func(c *config) error {
		if len(ids) == 0 {
			return fmt.Errorf("%w: WithFields without a field ID", ErrOption)
		}
		c.fields = append([]int32(nil), ids...)
		return nil
	}
}

// WithPrefetch sets how many objects a Scan, or Verify, works on ahead of the
// one whose records it returns (default DefaultPrefetch): each is opened
// (its footer fetched, verified and decrypted) and its scan started, in a
// goroutine of the scan's, while the current one decodes, so that many small
// objects cost little more than one large one. Each holds its footer and the
// column chunks of the row groups its scan fetches ahead. 0 opens each object
// only when the one before it is done.
func WithPrefetch(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return fmt.Errorf("%w: WithPrefetch(%d)", ErrOption, n)
		}
		c.prefetch = n
		return nil
	}
}

// WithReaderOptions passes opts to reader.Open for every object.
func WithReaderOptions(opts ...reader.Option) Option {
	return func(c *config) error {
		c.ropts = append(c.ropts, opts...)
		return nil
	}
}

// WithScanOptions passes opts to every object's (*reader.Reader).Scan, such
// as reader.WithParallelism or reader.WithBatchSize. A reader.WithFields among
// them is overridden: each object's projection is the one the table's
// needs (Adapter.Fields).
func WithScanOptions(opts ...reader.ScanOption) Option {
	return func(c *config) error {
		c.sopts = append(c.sopts, opts...)
		return nil
	}
}

// WithAllocator sets the Arrow allocator of the records: the readers'
// (reader.WithAllocator) and the Adapter's, for the arrays it makes (nulls,
// widened columns). A Scan keeps up to 64 MiB of what one object's scan
// frees for the next objects' (cleared before reuse), and frees it to mem
// when it ends.
func WithAllocator(mem memory.Allocator) Option {
	return func(c *config) error {
		if mem == nil {
			return fmt.Errorf("%w: nil allocator", ErrOption)
		}
		c.mem = mem
		return nil
	}
}
