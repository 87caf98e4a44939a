// Package catalog keeps an encrypted catalog of tables in the keyring's
// ring file: for each table, its name, the versions of its schema, and the
// SOP-PME-1 objects appended to it, with their exact sizes.
//
// A table is a sequence of immutable SOP-PME-1 objects appended over time,
// while its schema evolves by field ID, as Iceberg's does.
//
// # What SOP-PME-1 requires of it
//
//   - Section 11.2: field IDs are assigned at table creation and never
//     reused: a table keeps the largest ID it ever assigned (HighWater), and
//     every new column takes IDs above it, so a column dropped or renamed
//     away never lends its ID to another. Readers resolve columns by ID, so
//     an object written under an older version reads under the current one.
//   - Sections 11.4 and 11.8: table names, schemas, row counts and unpadded
//     sizes are metadata that untrusted storage must not see; "the unpadded
//     exact byte count remains encrypted catalog metadata". The catalog
//     lives in the ring file (keyring.Records, space "catalog"), each
//     record encrypted under the ring key with its key as associated data,
//     so a Rekey rewraps it with the DEKs and a removed record is shredded.
//
// # Why names are encrypted too
//
// The ring file travels to backups more freely than the data, and a
// table's name says what it holds ("payroll-2026"). So no record key holds
// a name: a table's header record is keyed by 16 random bytes, and a name
// is found by reading the headers. An object's record is keyed by its
// storage_id, which the store reveals anyway and the DEKs' bucket already
// holds; which table it belongs to is inside the encrypted value.
//
// # Records
//
// In space "catalog" of the ring:
//
//	't' ‖ table key (16 random bytes) → header: 0x01, name, created,
//	    high water, next object sequence, versions (created, change,
//	    schema as an Arrow IPC Schema message carrying field IDs)
//	'o' ‖ storage_id (32 bytes)       → object: 0x01, storage_id, table
//	    key, version, sequence, rows, unpadded size, size, appended
//
// Integers are uvarints, times int64 nanoseconds since 1970 (big endian).
// Parsing is strict and bounded: every length is checked against the bytes
// left before anything is allocated, a schema is decoded by the bounded
// flatbuffer decoder of internal/arrowfb (not arrow-go's ipc reader, which
// allocates by lengths it does not check), and trailing bytes are an error.
// A malformed record is ErrRecord.
//
// # Handing a table to another catalog
//
// ExportTable returns a table's records in the clear, and Import adds
// records so exported to another catalog, with the DEKs of their objects,
// in one transaction (the command's key grants: another node, another
// ring key). A table keeps its identity, its 16-byte key, across
// catalogs: the same table imported again merges, and another table of
// the same name is ErrConflict, never a silent merge of two tables. The
// records are parsed as strictly as the catalog's own before anything is
// written, since they come from outside the ring file.
//
// # Concurrency
//
// A Catalog is safe for concurrent use, and any number of processes may use
// one ring file: every change is one write transaction under the ring
// file's exclusive lock, and every read one read transaction.
package catalog

import (
	"errors"
	"fmt"
)

// Errors returned (wrapped with context) by this package.
var (
	// ErrNoTable reports a table name the catalog does not hold.
	ErrNoTable = errors.New("catalog: no such table")
	// ErrSchema reports an input schema that does not fit its table: a
	// type clash, a missing required column, an extra column or a wider
	// type without WithEvolve, or a schema that is not valid at all.
	ErrSchema = errors.New("catalog: the schema does not fit the table")
	// ErrEvolution reports a schema change that is not allowed: a
	// promotion that is not one of Iceberg's, a column that does not exist
	// or already does, a path into something that is not a struct.
	ErrEvolution = errors.New("catalog: schema evolution not allowed")
	// ErrRecord reports a malformed catalog record in the ring file.
	ErrRecord = errors.New("catalog: malformed catalog record")
	// ErrObject reports an object appended to a table while another table
	// holds it, or an Object whose fields are out of range.
	ErrObject = errors.New("catalog: bad object")
)

// A ColumnError names the column (a dotted path, as the input or the table
// spells it) that a schema or evolution error is about. Err is ErrSchema or
// ErrEvolution, wrapped with the reason.
type ColumnError struct {
	Column string
	Err    error
}

func (e *ColumnError) Error() string { return fmt.Sprintf("column %q: %v", e.Column, e.Err) }

// Unwrap returns Err.
func (e *ColumnError) Unwrap() error { return e.Err }

func colErr(path string, sentinel error, format string, args ...any) error {
	return &ColumnError{Column: path, Err: fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)}
}
