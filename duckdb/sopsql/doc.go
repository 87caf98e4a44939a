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
//
// which opens the object by storage_id with [reader.Open] over a
// [verify.Source] and a [reader.KeyResolver], and reads it with
// [reader.Reader.Scan] and nothing else.
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
//     cardinality and no statistics, so count(*), min, max and every filter
//     are computed over the rows it produces (Section 11.10).
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
