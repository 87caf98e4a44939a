package sopsql

import "github.com/duckdb/duckdb-go/v2/mapping"

// A NULL argument must fail a query, never the process.
//
// duckdb-go v2.10506.0 reads each positional argument of a Go table
// function with the getter of its type (duckdb_get_varchar,
// duckdb_get_int64, ...) without checking for NULL first. On a NULL value
// those getters throw a C++ exception ("Calling StringValue::Get on a NULL
// value"); it unwinds into the Go frames of the bind callback, which have no
// unwind tables, and ends in std::terminate: SIGABRT, and every query in
// flight in the process is lost. SELECT * FROM sop_scan(NULL) did that, and
// so does any typed NULL (NULL::VARCHAR, NULL::BIGINT) given to any Go table
// function; the type of the argument does not matter, and neither does a
// macro in front, which a query can bypass by calling the function itself.
//
// duckdb-go reads the arguments through the function variable
// mapping.BindGetParameter. init wraps it so that a NULL argument reaches
// duckdb-go as a NULL of type SQLNULL, which duckdb-go hands to the bind
// function as nil without calling a getter: the bind then refuses it with
// ErrArgument. Nothing else changes: a value that is not NULL passes through
// untouched, and an untyped NULL literal already arrived as nil. This is
// the package's one effect on global state, made in init (before any
// goroutine can bind a table function) so that it never races with a
// query; it protects every Go table function of the process, those of the
// importing program included. Remove it once duckdb-go checks
// duckdb_is_null_value before reading a bind argument.
func init() {
	get := mapping.BindGetParameter
	mapping.BindGetParameter = func(info mapping.BindInfo, index mapping.IdxT) mapping.Value {
		v := get(info, index)
		if v.Ptr != nil && mapping.IsNullValue(v) {
			mapping.DestroyValue(&v)
			return mapping.CreateNullValue()
		}
		return v
	}
}
