// Package sopsql lets DuckDB query SOP-PME-1 objects through the verified
// reader, so that every byte DuckDB sees was first checked against the
// object's storage_id (SOP-PME-1 Section 11.10).
//
// DuckDB's own read_parquet, handed an object's file and its DEK, reads an
// unverified byte stream: under SOP-PME-1's empty module AAD (Section 11.3)
// two page modules swapped inside an object still open, and DuckDB returns
// wrong rows without an error. Register instead installs, on a DuckDB
// database, the table function
//
//	sop_scan('<storage_id>' [, row_groups := [i, ...]] [, batch_size := n])
//	sop_scan('<table name>' [, batch_size := n])
//
// which opens the object by storage_id with [reader.Open] over a
// [verify.Source] and a [reader.KeyResolver], and reads it with
// [reader.Reader.Scan] and nothing else. An argument that parses as a
// storage_id names one object; any other names a table of the [Tables]
// given with [WithTables] ([ErrNoTable] if there is none).
//
// # Tables
//
// A table is a sequence of immutable objects whose schema evolved by
// Parquet field ID (Section 11.2: field IDs are stable; Iceberg's rules).
// sop_scan('NAME') has the table's current schema ([Table].Schema), not any
// one object's, and reads every object into it by field ID: a column an
// object lacks (added after it was written) is NULL, a renamed one is
// found by its ID, a dropped one is not read, and a promoted one (int32 to
// int64, float32 to float64, a decimal to more digits at the same scale)
// is widened; a type that neither equals nor widens into the table's
// fails the query with [ErrType], naming the column and the object. The
// bind opens no object: the catalog's row counts ([TableObject].Rows) are
// the planner's estimate only. DuckDB's threads share one cursor over
// (object, row group) pairs; each object is opened, and its footer
// verified, once, when the scan reaches the object before it, and read
// with the query's columns it holds only, so a query fetches of each
// object its footer and those columns' chunks (one column, to count its
// rows, of an object that holds none of them). Every byte is verified as
// for one object: a damaged object fails the query with
// [verify.ErrVerify], naming its storage_id. [WithTableViews] makes a view
// of each table.
//
// # What sop_scan does
//
//   - Projection pushdown: a query fetches and verifies the footer and the
//     column chunks of the fields it uses, no more (Section 11.10: "a
//     projection over three column chunks of a large object verifies those
//     three ranges and the footer, not the object").
//   - Parallelism over row groups: DuckDB's threads each take the next row
//     group not yet read (duckdb-go's parallel chunk table source).
//   - Types: every column has the DuckDB type that read_parquet gives the same
//     Parquet column (see [Register] for the list).
//   - Nothing is answered from footer metadata: sop_scan gives DuckDB no
//     statistics, and the footer's row count of the row groups it reads
//     only as the planner's cardinality estimate, so count(*), min, max and
//     every filter are computed over the rows it produces (Section 11.10).
//   - Columns are written into DuckDB's vectors in bulk through the C API
//     (duckdb_vector_get_data, duckdb_vector_get_validity; strings in one
//     cgo call per vector), reached under duckdb-go's DataChunk.
//   - A chunk that fails verification fails the query, with an error that
//     matches [verify.ErrVerify] where it reaches Go through [DB.Query] or
//     [TrackErrors], and no row of its row group reaches DuckDB.
//   - A query never makes an object count as verified: only sop_verify (and
//     [DB.Verify]), which checks every byte, reports an object verified.
//
// Row order: like every table function of DuckDB's C API, sop_scan cannot
// tell DuckDB the order of its rows across threads. DuckDB keeps the order
// of a plain SELECT by running it on one thread; where order matters under
// parallel operators, use ORDER BY.
//
// # What DuckDB's C API lets a table function tell the planner
//
// DuckDB 1.5.6's C API (duckdb.h, "Table Functions") gives a table
// function, through duckdb-go, exactly these: its columns, projection
// pushdown (duckdb_table_function_supports_projection_pushdown, which
// duckdb-go always turns on), a cardinality (duckdb_bind_set_cardinality),
// a thread count and thread-local state. sop_scan uses them all.
//
//   - Cardinality: the footer's row count of the row groups read, a
//     planning hint that orders joins (without it the planner takes a table
//     function for ~1 row and hashes it, the large side, in a join) and
//     releases no value. In 1.5.6 is_exact = true sets the estimate only,
//     and is_exact = false an estimate and a maximum cardinality
//     (table_function-c.cpp; swapped on DuckDB's main branch by commit
//     90cb1904), which lets the statistics optimizer sum a CASE of
//     constants in an int64 that wraps if the maximum is low: measured,
//     -9123183826594430976 for a sum of 5·10^22 over 50,000 rows stated as
//     1. sop_scan passes the estimate only (TestCardinalityIsAnEstimate),
//     DuckDB never answers count(*) from it, and the reader fails a row
//     group whose pages hold another number of rows than its footer states
//     (TestLyingFooterSum).
//   - Filters: the C API has no filter pushdown. DuckDB hands its
//     TableFilterSet to the C init info, but no C function reads it, and
//     filter_pushdown stays false: a FILTER operator above sop_scan
//     evaluates every predicate on the decoded rows (EXPLAIN shows it), as
//     Section 11.10 wants; no row group is skipped, by statistics or
//     otherwise.
//   - Statistics (min, max, null counts per column), complex-filter and
//     sampling pushdown, late materialization, partitions, batch indices
//     and ordering: not in the C API (DuckDB's C++ TableFunction has them;
//     duckdb_create_table_function sets only the cardinality callback), and
//     sop_scan would give no statistics anyway.
//   - Without batch indices DuckDB keeps the order of a plain SELECT by
//     running it on one thread; SET preserve_insertion_order = false lets
//     an export run on every thread. Aggregates run in parallel either way.
//
// # Using it
//
// [Open] makes an in-memory DuckDB database with the functions registered,
// optionally with a view per object; [DB.QueryRows] runs a statement and
// reads its rows one at a time (sop-pme sql prints them as they come, as a
// table, CSV or JSON); [DB.Query] returns the whole [Result]. [Register]
// installs the functions on a database the caller opened.
//
// # What a query cannot do
//
// The rows a query sees are decrypted: they must not leave the process by
// another way than the query's result. Open closes the session before any
// query runs ([LockDown]): DuckDB has no temporary directory, so a query
// that outgrows its memory limit fails instead of spilling decrypted rows
// to disk; a query reads and writes no file of the host (COPY ... TO,
// read_csv, ATTACH, EXPORT DATABASE all fail), installs, loads or
// autoloads no extension, and reaches no network; and no SET, RESET or
// PRAGMA can undo that. Any argument of sop_scan and sop_verify, NULL and
// every type included, gives an error and never crashes the process.
package sopsql
