package sopsql

import "errors"

// Errors returned (wrapped) by this package. Errors of the reader and of
// verification (reader.ErrNoKey, verify.ErrVerify, pme.ErrAuth, ...) pass
// through wrapped, so errors.Is matches them too.
var (
	// ErrArgument reports a bad argument to sop_scan or sop_verify: a NULL
	// storage_id, an argument of the wrong type, a storage_id that does not
	// parse, a row group out of range or repeated, an empty list of row
	// groups, a negative batch size.
	ErrArgument = errors.New("sopsql: invalid argument")
	// ErrType reports a column whose Arrow type has no DuckDB mapping here
	// (for example TIME with nanoseconds, which duckdb-go cannot write).
	ErrType = errors.New("sopsql: unsupported column type")
	// ErrData reports a value that the column's DuckDB type cannot hold, or
	// a record whose shape differs from the object's schema.
	ErrData = errors.New("sopsql: value does not fit its DuckDB column")
	// ErrNoTable reports a sop_scan argument that is neither a storage_id
	// nor the name of a table of the Tables given with WithTables; a
	// Tables implementation returns it (wrapped) for a name it does not
	// know.
	ErrNoTable = errors.New("sopsql: no such table")
	// ErrOption reports an invalid option.
	ErrOption = errors.New("sopsql: invalid option")
)
