package sopsql

import (
	"fmt"

	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
)

// An Option configures Register and Open.
type Option func(*config) error

type config struct {
	readerOpts  []reader.Option
	views       []view
	tables      Tables
	tableViews  bool
	dsn         string
	threads     int
	memoryLimit int64
	valuePath   bool // write every value through duckdb-go, for the tests' reference
	poison      bool // overwrite every buffer a scan frees, for the tests (bufferPool)
}

type view struct {
	name string
	id   storageid.ID
}

// WithReaderOptions passes options to reader.Open for every object a
// function opens (for example reader.WithMaxFooterSize).
func WithReaderOptions(opts ...reader.Option) Option {
	return func(c *config) error {
		c.readerOpts = append(c.readerOpts, opts...)
		return nil
	}
}

// WithView makes Open create a view name, defined as SELECT * FROM
// sop_scan('<id>'). DuckDB binds sop_scan when Open creates the view, which
// opens the object and verifies its footer (not its rows); each query over
// the view opens and verifies the object anew. An error creating the view
// crosses DuckDB as text; use DB.CreateView under TrackErrors where the
// error must match the library's sentinels.
func WithView(name string, id storageid.ID) Option {
	return func(c *config) error {
		if name == "" {
			return fmt.Errorf("%w: empty view name", ErrOption)
		}
		c.views = append(c.views, view{name, id})
		return nil
	}
}

// WithTables makes sop_scan('NAME') read the table tables resolves NAME
// to (an argument that parses as a storage_id still names one object):
// its objects in append order, each read by field ID into the table's
// current schema (Table). Without it, every argument is a storage_id.
func WithTables(t Tables) Option {
	return func(c *config) error {
		if t == nil {
			return fmt.Errorf("%w: nil Tables", ErrOption)
		}
		c.tables = t
		return nil
	}
}

// WithTableViews makes Open create a view named after each table of
// WithTables (Tables.Names), defined as SELECT * FROM sop_scan('NAME'),
// the name quoted as an identifier and as a string. Creating a view binds
// sop_scan, which resolves the table and opens none of its objects; each
// query over the view resolves the table anew, so it reads the objects the
// table has then (Tables.Table). A table added after Open has no view:
// query it as sop_scan('NAME').
func WithTableViews() Option {
	return func(c *config) error {
		c.tableViews = true
		return nil
	}
}

// WithDSN makes Open open the DuckDB database dsn (a file path, with
// duckdb-go's ?option=value settings) instead of a fresh in-memory one.
func WithDSN(dsn string) Option {
	return func(c *config) error {
		c.dsn = dsn
		return nil
	}
}

// WithThreads makes Open set DuckDB's threads to n (default: DuckDB's,
// the number of cores). A query cannot change it (LockDown).
func WithThreads(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("%w: %d threads", ErrOption, n)
		}
		c.threads = n
		return nil
	}
}

// WithMemoryLimit makes Open set DuckDB's memory_limit to bytes (default:
// DuckDB's, 80 % of the machine's memory). A query that needs more fails:
// DuckDB has no temporary directory to spill to (LockDown), and a query
// cannot change the limit.
func WithMemoryLimit(bytes int64) Option {
	return func(c *config) error {
		if bytes < 1 {
			return fmt.Errorf("%w: memory limit %d bytes", ErrOption, bytes)
		}
		c.memoryLimit = bytes
		return nil
	}
}

func newConfig(opts []Option) (config, error) {
	var cfg config
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return config{}, err
		}
	}
	if cfg.tableViews && cfg.tables == nil {
		return config{}, fmt.Errorf("%w: WithTableViews without WithTables", ErrOption)
	}
	return cfg, nil
}
