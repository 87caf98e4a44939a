package sopsql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
)

// A DB is an in-memory DuckDB database with sop_scan and sop_verify
// registered over one store and one key resolver: what `sop-pme sql` runs
// queries in. It is safe for concurrent use.
type DB struct {
	db     *sql.DB
	src    verify.Source
	keys   reader.KeyResolver
	cfg    config
	closed atomic.Bool
}

// Open opens an in-memory DuckDB database (or the one WithDSN names),
// registers sop_scan and sop_verify over src and keys (see Register) on it,
// defines the sop_scan macro on every connection of its pool, sets the
// TimeZone to UTC and the settings given with WithThreads and
// WithMemoryLimit, closes the session to the host (LockDown), and creates
// the views given with WithView. Nothing of any object is read until a
// query uses it.
//
// A query on the DB cannot SET or RESET DuckDB's settings, spill to disk,
// read or write a file of the host, attach a database, or install or load
// an extension: see LockDown (and its limits).
func Open(ctx context.Context, src verify.Source, keys reader.KeyResolver, opts ...Option) (*DB, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if src == nil || keys == nil {
		return nil, fmt.Errorf("%w: nil source or key resolver", ErrOption)
	}
	// The first connection registers the functions and defines the macro
	// (Register); every later one defines the macro when it opens.
	var registered atomic.Bool
	connector, err := duckdb.NewConnector(cfg.dsn, func(execer driver.ExecerContext) error {
		if !registered.Load() {
			return nil
		}
		err := defineMacro(execer)
		if err != nil && failsEveryStatement(execer) {
			// duckdb-go closes a connection whose initializer fails, and
			// closing one may abort the process when DuckDB fails every
			// statement (see Close): keep it; it fails every query, as
			// every other connection does.
			return nil
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sopsql: opening DuckDB: %w", err)
	}
	d := &DB{db: sql.OpenDB(connector), src: src, keys: keys, cfg: cfg}
	// The pool keeps every connection it opens until Close: see Close for
	// why closing one may abort the process.
	d.db.SetMaxIdleConns(math.MaxInt32)
	if err := d.init(ctx, opts, &registered); err != nil {
		d.db.Close()
		return nil, err
	}
	return d, nil
}

func (d *DB) init(ctx context.Context, opts []Option, registered *atomic.Bool) error {
	conn, err := d.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("sopsql: connecting to DuckDB: %w", err)
	}
	defer conn.Close()
	if err := Register(conn, d.src, d.keys, opts...); err != nil {
		return err
	}
	registered.Store(true)
	// TIMESTAMP WITH TIME ZONE prints in UTC, whatever the machine's zone:
	// the text of a Result is the same everywhere.
	settings := []string{"SET GLOBAL TimeZone = 'UTC'"}
	if d.cfg.threads > 0 {
		settings = append(settings, fmt.Sprintf("SET GLOBAL threads = %d", d.cfg.threads))
	}
	if d.cfg.memoryLimit > 0 {
		settings = append(settings, fmt.Sprintf("SET GLOBAL memory_limit = '%dB'", d.cfg.memoryLimit))
	}
	for _, q := range settings {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("sopsql: %s: %w", q, err)
		}
	}
	if err := LockDown(ctx, conn); err != nil {
		return err
	}
	for _, v := range d.cfg.views {
		if err := d.CreateView(ctx, v.name, v.id); err != nil {
			return err
		}
	}
	if d.cfg.tableViews {
		names, err := d.cfg.tables.Names(ctx)
		if err != nil {
			return fmt.Errorf("sopsql: listing tables: %w", err)
		}
		tctx, wrap := TrackErrors(ctx)
		for i, q := range tableViews(names) {
			if _, err := d.db.ExecContext(tctx, q); err != nil {
				return fmt.Errorf("sopsql: creating the view of table %q: %w", names[i], wrap(err))
			}
		}
	}
	return nil
}

// failsEveryStatement reports whether DuckDB fails even SELECT 1 on a
// connection.
func failsEveryStatement(execer driver.ExecerContext) bool {
	_, err := execer.ExecContext(context.Background(), "SELECT 1", nil)
	return err != nil
}

// lockDown is what LockDown sets, in this order.
func lockDown() []string {
	return []string{
		// No spill: a query that outgrows memory_limit fails, and
		// decrypted rows never reach a disk.
		"SET GLOBAL temp_directory = ''",
		// No extension is installed (which writes under the home
		// directory, and fetches from the network) or loaded, known or not.
		"SET GLOBAL autoinstall_known_extensions = false",
		"SET GLOBAL autoload_known_extensions = false",
		"SET GLOBAL allow_community_extensions = false",
		"SET GLOBAL allow_unsigned_extensions = false",
		"SET GLOBAL allow_persistent_secrets = false",
		// No file of the host, read or written (read_csv, COPY ... TO,
		// ATTACH, EXPORT DATABASE, INSTALL, LOAD), not even in a
		// directory the DSN allowed.
		"SET GLOBAL allowed_directories = []",
		"SET GLOBAL allowed_paths = []",
		"SET GLOBAL enable_external_access = false",
		// And no SET, RESET or PRAGMA undoes any of it.
		"SET GLOBAL lock_configuration = true",
	}
}

// LockDown closes the DuckDB database conn belongs to to its host, for
// every connection, for the life of the database: no spill directory (a
// query that outgrows memory_limit fails instead of writing decrypted rows
// to disk), no extension installed, loaded or autoloaded, no persistent
// secret, no file or network access from a query (enable_external_access
// false: no read_csv, COPY ... TO, ATTACH of a file, EXPORT DATABASE), and
// then lock_configuration, so that no query can undo any of it. Open calls
// it after registering the functions; a caller that uses Register on a
// database of its own calls it once its own settings are made.
//
// sop_scan and sop_verify read objects through the verify.Source, in Go,
// and keep working. Measured on DuckDB 1.5.6, two statements still change
// a session after the lock, and neither writes a file: PRAGMA
// enable_profiling (query plans printed on the process's standard error),
// and CALL enable_logging, whose file storage, refused by
// enable_external_access, then fails every later statement of the
// database (DB.Close then leaves it open rather than abort the process;
// see Close).
func LockDown(ctx context.Context, conn *sql.Conn) error {
	if conn == nil {
		return fmt.Errorf("%w: nil connection", ErrOption)
	}
	for _, q := range lockDown() {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("sopsql: locking DuckDB down: %s: %w", q, err)
		}
	}
	return nil
}

// SQL returns the database/sql handle of the database, for queries that
// stream their rows. Run them under a context from TrackErrors to match
// verification errors with errors.Is.
func (d *DB) SQL() *sql.DB { return d.db }

// Close closes the database, unless DuckDB fails every statement: then it
// returns an error and leaves the database open. A query can do that:
// CALL enable_logging(storage := 'file', ...) is not refused by
// lock_configuration in DuckDB 1.5.6, and its file storage, which
// enable_external_access refuses, then fails every later statement; DuckDB
// flushes that storage again when a connection closes, and the exception
// escapes duckdb_disconnect, which aborts the process. Leaving the
// database open costs its memory, not the process. For the same reason
// the pool of SQL keeps every connection it opens until Close (do not
// lower its SetMaxIdleConns or set a connection lifetime).
func (d *DB) Close() error {
	if !d.closed.Load() {
		if _, err := d.db.ExecContext(context.Background(), "SELECT 1"); err != nil {
			return fmt.Errorf("sopsql: DuckDB fails every statement, so closing it could abort the process; the database is left open: %w", err)
		}
	}
	d.closed.Store(true)
	return d.db.Close()
}

// CreateView creates (or replaces) the view name, defined as SELECT * FROM
// sop_scan('<id>'). DuckDB binds sop_scan when it creates the view, which
// opens the object and verifies its footer (not its rows); each query over
// the view opens and verifies the object anew. Run it under TrackErrors for
// errors.Is to match the library's sentinels.
func (d *DB) CreateView(ctx context.Context, name string, id storageid.ID) error {
	q := fmt.Sprintf("CREATE OR REPLACE VIEW %s AS SELECT * FROM %s('%s')", quoteIdent(name), ScanFunction, id)
	if _, err := d.db.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("sopsql: creating view %q: %w", name, err)
	}
	return nil
}

// Verify checks every byte of object id against id (reader.Reader.Verify):
// what sop_verify does, from Go.
func (d *DB) Verify(ctx context.Context, id storageid.ID) error {
	r, err := reader.Open(ctx, d.src, id, d.keys, d.cfg.readerOpts...)
	if err != nil {
		return err
	}
	return r.Verify(ctx)
}

// A Result is the complete result of a statement.
type Result struct {
	Columns []Column
	Rows    [][]any // as duckdb-go scans them: nil for NULL
}

// A Column is a result column: its name and DuckDB type (as DuckDB spells
// it, e.g. "DECIMAL(9,2)").
type Column struct {
	Name string
	Type string
}

// Query runs one statement and returns its whole result, every row in
// memory: for large results, read them with QueryRows. If it fails, the
// error is a *QueryError that also wraps the Go errors sop_scan and
// sop_verify returned, so that errors.Is(err, verify.ErrVerify) reports a
// verification failure; no row is returned then.
func (d *DB) Query(ctx context.Context, query string, args ...any) (*Result, error) {
	rows, err := d.QueryRows(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	res := &Result{Columns: rows.Columns()}
	for rows.Next() {
		res.Rows = append(res.Rows, slices.Clone(rows.Row()))
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return res, nil
}

// QueryRows runs one statement (or several, separated by ";": the rows are
// those of the last) and returns its rows, to be read one at a time: what
// the caller holds is one row, not the result.
//
// duckdb-go v2.10506.0 runs a statement to its end before it returns the
// first row, and keeps the result in DuckDB, in DuckDB's own columnar
// form (within memory_limit, never spilled: see LockDown). So a failure of
// sop_scan or sop_verify (a verification error) fails QueryRows itself,
// before any row. Errors are a *QueryError, as for Query.
func (d *DB) QueryRows(ctx context.Context, query string, args ...any) (*Rows, error) {
	ctx, wrap := TrackErrors(ctx)
	rows, err := d.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, wrap(err)
	}
	types, err := rows.ColumnTypes()
	if err != nil {
		rows.Close()
		return nil, wrap(err)
	}
	r := &Rows{rows: rows, wrap: wrap, cols: make([]Column, len(types)), row: make([]any, len(types)), ptrs: make([]any, len(types))}
	for i, t := range types {
		r.cols[i] = Column{Name: t.Name(), Type: t.DatabaseTypeName()}
		r.ptrs[i] = &r.row[i]
	}
	return r, nil
}

// Rows are the rows of a statement, read one at a time (what `sop-pme
// sql` prints as they come). Close them when done.
type Rows struct {
	rows *sql.Rows
	wrap func(error) error
	cols []Column
	row  []any
	ptrs []any
	err  error
}

// Columns returns the columns of the rows.
func (r *Rows) Columns() []Column { return r.cols }

// Next reads the next row, and reports whether there is one.
func (r *Rows) Next() bool {
	if r.err != nil || !r.rows.Next() {
		return false
	}
	clear(r.row)
	if err := r.rows.Scan(r.ptrs...); err != nil {
		r.err = err
		return false
	}
	return true
}

// Row returns the current row, as duckdb-go scans it (nil for NULL); it is
// valid until the next call to Next.
func (r *Rows) Row() []any { return r.row }

// Err returns the error that ended the rows, a *QueryError, or nil.
func (r *Rows) Err() error {
	if r.err != nil {
		return r.wrap(r.err)
	}
	return r.wrap(r.rows.Err())
}

// Close closes the rows.
func (r *Rows) Close() error { return r.rows.Close() }

// quoteIdent quotes s as a DuckDB identifier.
func quoteIdent(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}
