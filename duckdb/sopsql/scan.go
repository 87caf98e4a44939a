package sopsql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/duckdb/duckdb-go/v2"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
)

// Names of the table functions Register installs.
const (
	ScanFunction   = "sop_scan"
	VerifyFunction = "sop_verify"
)

// Register installs two table functions on the DuckDB database conn belongs
// to (table functions live in DuckDB's system catalog: every connection of
// the database sees them), and the sop_scan macro on conn only (a TEMP
// macro, never written to a database file; Open defines it on every
// connection of its pool). It leaves the database's settings as they are:
// call LockDown once they are made, so that no query can reconfigure
// DuckDB, spill, or reach the host (Open does).
//
//	sop_scan('<storage_id>' [, row_groups := [i, ...]] [, batch_size := n])
//	sop_scan('<table name>' [, batch_size := n])
//
// The second form, with WithTables, reads a table: see Tables and the package documentation
// (row_groups is refused, with ErrArgument: a table's row groups are not
// known before its objects are opened). The first form
// returns the rows of the object src holds under storage_id (hex, or iroh
// base32), read with reader.Open and reader.Reader.Scan: every byte is
// verified against storage_id before it is decrypted, decoded or given to
// DuckDB (SOP-PME-1 Section 11.10). keys resolves the DEK by storage_id
// (Section 11.5). row_groups restricts the scan to those row groups (indices
// from 0, no repeats); batch_size sets the most rows per Arrow record the
// reader decodes at once (0: the reader's default). Each query opens the
// object anew, and verifies its footer anew.
//
// Arguments: storage_id is a string, row_groups a list of integers,
// batch_size an integer; NULL leaves row_groups and batch_size at their
// defaults. Any other argument, NULL storage_id and every type included,
// fails the query with ErrArgument, which names the argument and its type;
// none can crash the process (see nullarg.go for the duckdb-go defect this
// works around, which a NULL argument to any Go table function would
// otherwise hit).
//
// Projection pushdown: a query reads the footer and the column chunks of
// the columns it uses (for a count(*), DuckDB asks for the first column,
// whose chunks are read to count the rows they hold), no others. An object
// whose top-level fields lack Parquet field IDs (a DuckDB file written
// without FIELD_IDS) is read whole.
//
// Parallelism: each DuckDB thread reads the next row group nobody has read
// yet, so a query runs on up to as many threads as it reads row groups.
//
// Types: each column has the DuckDB type read_parquet gives the same
// Parquet column (measured on DuckDB 1.5.6), from the Arrow type the reader
// returns:
//
//	int8..int64, uint8..uint64     TINYINT..BIGINT, UTINYINT..UBIGINT
//	float16, float32, float64      FLOAT, FLOAT, DOUBLE
//	decimal128(p, s)               DECIMAL(p, s)
//	decimal256(p, s), p > 38       DOUBLE
//	bool                           BOOLEAN
//	string, large_string, view     VARCHAR
//	binary, large_binary, view,
//	fixed_size_binary              BLOB
//	date32, date64                 DATE
//	time32[s|ms], time64[us]       TIME
//	timestamp[s|ms|us]             TIMESTAMP (microseconds)
//	timestamp[ns]                  TIMESTAMP_NS
//	timestamp[any unit, tz]        TIMESTAMP WITH TIME ZONE (microseconds;
//	                               nanoseconds truncated toward zero)
//	null                           INTEGER (every value NULL)
//	list, large_list,
//	fixed_size_list                LIST
//	struct                         STRUCT
//	map                            MAP
//	dictionary                     the type of its values
//
// A column of another type (time64[ns], DuckDB's TIME_NS, which duckdb-go
// cannot write; a map with BLOB or nested keys) fails the bind with
// ErrType. A value its DuckDB type cannot hold (a decimal with more digits
// than its precision, a timestamp in seconds beyond the microsecond range,
// a VARCHAR that is not UTF-8, a map with two equal keys) fails the query
// with ErrData: sop_scan never wraps or drops a value. (A TIME beyond a
// day reads as its time of day, where read_parquet keeps it whole.)
//
// Columns go into DuckDB's vectors in bulk (vector.go): a copy or one loop
// per vector for fixed-width values and validity masks, one cgo call per
// vector for strings (read as dictionaries where every chunk of the column
// is dictionary-encoded, reader.WithDictionaries, and written once per
// distinct string and vector), child vectors for lists, structs and maps;
// dictionaries of other values than strings go value by value. The
// batches of a scan reuse the buffers of the batches before them
// (pool.go).
//
// Nothing comes from footer metadata: sop_scan reports no statistics to
// DuckDB, and the footer's row count only as the planner's estimate (see
// Cardinality), so every count, min, max and filter is computed from the
// rows it produces.
//
//	sop_verify('<storage_id>')
//
// checks every byte of the object against storage_id (reader.Reader.Verify)
// and returns one row (storage_id VARCHAR, size BIGINT, verified BOOLEAN),
// or fails with the verification error. It is the only way an object counts
// as verified here: sop_scan never reports one so (Section 11.10).
//
// Errors cross DuckDB's C API as text: a query through database/sql fails
// with a *duckdb.Error whose message carries the Go error's text. Run the
// query under a context from TrackErrors (DB.Query does) to get the Go
// errors back for errors.Is.
func Register(conn *sql.Conn, src verify.Source, keys reader.KeyResolver, opts ...Option) error {
	if conn == nil || src == nil || keys == nil {
		return fmt.Errorf("%w: nil connection, source or key resolver", ErrOption)
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return err
	}
	fn := &functions{src: src, keys: keys, readerOpts: cfg.readerOpts, tables: cfg.tables, valuePath: cfg.valuePath, poison: cfg.poison}
	varchar := typeInfo(duckdb.TYPE_VARCHAR)
	scan := duckdb.ParallelChunkTableFunction{
		Config: duckdb.TableFunctionConfig{
			// storage_id, row_groups and batch_size, each as text and type
			// (scanMacro).
			Arguments: []duckdb.TypeInfo{varchar, varchar, varchar, varchar, varchar, varchar},
		},
		BindArgumentsContext: fn.bindScan,
	}
	if err := duckdb.RegisterTableUDF(conn, ScanFunction, scan); err != nil {
		return fmt.Errorf("sopsql: registering %s: %w", ScanFunction, err)
	}
	ver := duckdb.RowTableFunction{
		Config:               duckdb.TableFunctionConfig{Arguments: []duckdb.TypeInfo{varchar}},
		BindArgumentsContext: fn.bindVerify,
	}
	if err := duckdb.RegisterTableUDF(conn, VerifyFunction, ver); err != nil {
		return fmt.Errorf("sopsql: registering %s: %w", VerifyFunction, err)
	}
	return conn.Raw(func(c any) error {
		execer, ok := c.(driver.ExecerContext)
		if !ok {
			return fmt.Errorf("%w: connection %T is not a DuckDB connection", ErrOption, c)
		}
		return defineMacro(execer)
	})
}

// defineMacro defines the sop_scan macro on a connection. DuckDB binds a
// table macro's body when it is created, so the table function must be
// registered first.
func defineMacro(execer driver.ExecerContext) error {
	if _, err := execer.ExecContext(context.Background(), scanMacro, nil); err != nil {
		return fmt.Errorf("sopsql: creating the %s macro: %w", ScanFunction, err)
	}
	return nil
}

// functions holds what the table functions read objects with.
type functions struct {
	src        verify.Source
	keys       reader.KeyResolver
	readerOpts []reader.Option
	tables     Tables // WithTables, or nil
	valuePath  bool
	poison     bool // overwrite the buffers a scan frees (config.poison)
}

func (fn *functions) bindScan(ctx context.Context, named map[string]any, args ...any) (_ duckdb.ParallelChunkTableSource, err error) {
	sink := sinkFrom(ctx)
	defer func() { sink.add(err) }()
	// Every argument is checked before the object is opened.
	p, err := parseScanArgs(args)
	if err != nil {
		return nil, err
	}
	// An argument that parses as a storage_id names an object; any other
	// string names a table (WithTables).
	if name, ok := p.id.(string); ok && fn.tables != nil {
		if _, perr := storageid.Parse(name); perr != nil {
			return fn.bindTable(ctx, name, p, sink)
		}
	}
	// The scan's batches reuse the buffers of the batches released before
	// them (pool.go).
	r, err := fn.open(ctx, p.id, reader.WithAllocator(newBufferPool(poolLimit, fn.poison)))
	if err != nil {
		return nil, err
	}
	s := &scanSource{ctx: ctx, r: r, sink: sink, batch: p.batch}
	// Decimals stored as INT32 or INT64 are read as such (decimal32 and
	// decimal64), not widened into decimal128 by arrow-go only to be
	// narrowed again into DuckDB's int16, int32 or int64; strings whose
	// chunks are dictionary-encoded throughout as dictionaries, not
	// copied out of the dictionary value by value by arrow-go only to be
	// copied again into DuckDB's vectors (reader.WithDictionaries).
	if s.cols, err = columns(r.DictionarySchema(r.NarrowDecimalSchema().Fields())); err != nil {
		return nil, fmt.Errorf("sopsql: object %s: %w", r.ID(), err)
	}
	if len(s.cols) == 0 {
		return nil, fmt.Errorf("%w: object %s has no columns", ErrType, r.ID())
	}
	if fn.valuePath {
		for i := range s.cols {
			s.cols[i].write = nil
		}
	}
	if s.rowGroups, err = p.rowGroupList(r.NumRowGroups()); err != nil {
		return nil, err
	}
	return s, nil
}

// scanSource is one sop_scan in one query: duckdb-go's parallel chunk table
// source. DuckDB calls FillChunk from several threads, each with its own
// local state.
type scanSource struct {
	ctx       context.Context
	r         *reader.Reader
	cols      []column
	rowGroups []int
	batch     int64
	sink      *errSink

	next   atomic.Int64 // the next index into rowGroups to read
	locals atomic.Int32 // local states made (one per thread)

	projOnce sync.Once
	proj     projection
}

// projection is what every thread of the query reads: the DuckDB column of
// each column of the records the reader returns.
type projection struct {
	opts []reader.ScanOption
	out  []int // column of the records → column of sop_scan, or -1: read only to count rows
}

// scanLocal is a thread's state: the row group it is reading.
type scanLocal struct {
	scan *rowGroupScan
	rec  arrow.RecordBatch
	off  int // rows of rec already given to DuckDB
	ws   writeState
}

// rowGroupScan holds the reader of the row group a thread reads. DuckDB
// drops a thread's state without notice when a query stops early (a
// LIMIT, an error elsewhere, an interrupt): a cleanup then releases the
// reader, which stops its prefetch and clears its plaintext, as the end of
// a row group does.
type rowGroupScan struct {
	rr array.RecordReader
}

func (g *rowGroupScan) release() {
	if g.rr != nil {
		g.rr.Release()
		g.rr = nil
	}
}

func (s *scanSource) ColumnInfos() []duckdb.ColumnInfo {
	infos := make([]duckdb.ColumnInfo, len(s.cols))
	for i, c := range s.cols {
		infos[i] = duckdb.ColumnInfo{Name: c.name, T: c.info}
	}
	return infos
}

// Cardinality gives DuckDB's planner the row count the footer states for
// the row groups the scan reads (reader.Reader.FooterRowCount): a planning
// hint (the join order: the larger side is probed, not built), never an
// answer (Section 11.10). DuckDB 1.5.6's C API takes it in
// duckdb_bind_set_cardinality(n, is_exact), where is_exact = true sets the
// estimate only (NodeStatistics(n)), and is_exact = false sets the
// estimate and a maximum (NodeStatistics(n, n)) that lets the statistics
// optimizer pick an int64 state for sum that overflows if the maximum is
// wrong: hence Exact: true, the estimate alone (DuckDB's main branch swaps
// the two, commit 90cb1904; TestLyingFooterSum catches the swap). DuckDB
// answers no count(*) from it: the rows are still read and counted. A scan
// that succeeds returned exactly this many rows (the reader checks each
// row group's pages against the footer), so the hint misleads nobody; a
// footer that lies fails the scan.
func (s *scanSource) Cardinality() *duckdb.CardinalityInfo {
	n, err := s.r.FooterRowCount(s.rowGroups...)
	if err != nil || len(s.rowGroups) == 0 {
		return nil
	}
	return &duckdb.CardinalityInfo{Cardinality: uint(n), Exact: true}
}

func (s *scanSource) Init() duckdb.ParallelTableSourceInfo {
	return duckdb.ParallelTableSourceInfo{MaxThreads: max(1, len(s.rowGroups))}
}

func (s *scanSource) NewLocalState() any {
	s.locals.Add(1)
	ls := &scanLocal{scan: &rowGroupScan{}}
	runtime.AddCleanup(ls, (*rowGroupScan).release, ls.scan)
	return ls
}

// FillChunk fills ch with the next rows of the thread's row group, starting
// the next unread row group when it is done, and sets ch's size to 0 when
// no row group is left.
func (s *scanSource) FillChunk(state any, ch duckdb.DataChunk) (err error) {
	defer func() {
		// A panic must not cross the cgo callback into DuckDB.
		if p := recover(); p != nil {
			err = fmt.Errorf("sopsql: internal error in %s: %v", ScanFunction, p)
		}
		s.sink.add(err)
	}()
	ls, ok := state.(*scanLocal)
	if !ok {
		return fmt.Errorf("sopsql: internal error: local state %T", state)
	}
	s.projOnce.Do(func() { s.proj = s.project(&ch) })
	for ls.rec == nil || ls.off >= int(ls.rec.NumRows()) {
		ls.rec, ls.off = nil, 0
		if rr := ls.scan.rr; rr != nil {
			if rr.Next() {
				ls.rec = rr.RecordBatch()
				if err := s.checkRecord(ls.rec); err != nil {
					ls.close()
					return err
				}
				continue
			}
			err := rr.Err()
			ls.close()
			if err != nil {
				return fmt.Errorf("sopsql: object %s: %w", s.r.ID(), err)
			}
		}
		i := s.next.Add(1) - 1
		if i >= int64(len(s.rowGroups)) {
			return ch.SetSize(0)
		}
		opts := append(slices.Clip(s.proj.opts), reader.WithRowGroups(s.rowGroups[i]))
		if s.batch > 0 {
			opts = append(opts, reader.WithBatchSize(s.batch))
		}
		if ls.scan.rr, err = s.r.Scan(s.ctx, opts...); err != nil {
			return fmt.Errorf("sopsql: object %s: %w", s.r.ID(), err)
		}
	}
	n := min(int(ls.rec.NumRows())-ls.off, duckdb.GetDataChunkCapacity())
	raw, err := rawChunk(&ch)
	if err != nil {
		ls.close()
		return err
	}
	for k, out := range s.proj.out {
		if out < 0 {
			continue
		}
		if err := s.cols[out].put(&ls.ws, ch, raw, out, ls.rec.Column(k), ls.off, n); err != nil {
			ls.close()
			return fmt.Errorf("sopsql: object %s, column %q: %w", s.r.ID(), s.cols[out].name, err)
		}
	}
	ls.off += n
	return ch.SetSize(n)
}

// put writes the elements [off, off+n) of arr as rows 0..n-1 of column
// col of the chunk: through the bulk path if the column has one.
func (c *column) put(ws *writeState, ch duckdb.DataChunk, raw rawView, col int, arr arrow.Array, off, n int) error {
	if c.write == nil {
		return c.fill(ch, col, arr, off, n)
	}
	v, err := raw.vector(col)
	if err != nil {
		return err
	}
	return c.write(ws, v, arr, off, n)
}

// project works out, from the first output chunk, which columns DuckDB wants
// (duckdb-go does not write the others, and GetVector fails for them), and
// how to have the reader fetch only those.
func (s *scanSource) project(ch *duckdb.DataChunk) projection {
	var want []int
	for i := range s.cols {
		if _, err := ch.GetVector(i); err == nil {
			want = append(want, i)
		}
	}
	if len(want) == 0 {
		// DuckDB 1.5.6 asks for column 0 for a count(*); should a DuckDB
		// ask for none, every column is read, and the rows counted
		// (Section 11.10).
		return projection{opts: scanTypes(), out: fill(len(s.cols), -1)}
	}
	ids := make([]int32, 0, len(want))
	for _, i := range want {
		if !s.cols[i].hasID {
			// Without field IDs the reader cannot project: read every
			// column and hand DuckDB the ones it wants.
			out := fill(len(s.cols), -1)
			for _, i := range want {
				out[i] = i
			}
			return projection{opts: scanTypes(), out: out}
		}
		ids = append(ids, s.cols[i].id)
	}
	// The reader returns the projected fields in schema order.
	return projection{opts: append(scanTypes(), reader.WithFields(ids...)), out: want}
}

// scanTypes are the options that give a scan the types bindScan's columns
// have.
func scanTypes() []reader.ScanOption {
	return []reader.ScanOption{reader.WithNarrowDecimals(), reader.WithDictionaries()}
}

func fill(n, v int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// checkRecord checks that rec has the columns the projection expects.
func (s *scanSource) checkRecord(rec arrow.RecordBatch) error {
	if int(rec.NumCols()) != len(s.proj.out) {
		return fmt.Errorf("%w: object %s: record of %d columns, want %d", ErrData, s.r.ID(), rec.NumCols(), len(s.proj.out))
	}
	for k, out := range s.proj.out {
		if out >= 0 && !arrow.TypeEqual(rec.Column(k).DataType(), s.cols[out].dt) {
			return fmt.Errorf("%w: object %s: column %q is %s, want %s", ErrData, s.r.ID(), s.cols[out].name, rec.Column(k).DataType(), s.cols[out].dt)
		}
	}
	return nil
}

// close releases the row group being read; the reader clears its plaintext.
func (ls *scanLocal) close() {
	ls.scan.release()
	ls.rec, ls.off = nil, 0
}
