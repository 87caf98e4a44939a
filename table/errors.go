package table

import (
	"errors"
	"fmt"

	"github.com/sovm/sop-pme/storageid"
)

// Errors returned, wrapped, by this package.
var (
	// ErrColumn reports a name, dotted path or field ID that names no field
	// of the schema.
	ErrColumn = errors.New("table: no such column")
	// ErrSchema reports a column of an object that cannot be read at the
	// table's type: another type that is not a promotion the table allows,
	// or a nested shape that differs, or a schema without field IDs
	// (Section 11.2).
	ErrSchema = errors.New("table: object column does not match the table's schema")
	// ErrOption reports an invalid option.
	ErrOption = errors.New("table: invalid option")
)

// A ColumnError is an error about one column: one that does not resolve
// (ErrColumn) or that an object holds at a type the table's cannot read
// (ErrSchema).
type ColumnError struct {
	Column string // the name, dotted path or field ID as given, or the column's path
	Err    error
}

func (e *ColumnError) Error() string {
	return fmt.Sprintf("column %q: %v", e.Column, e.Err)
}

func (e *ColumnError) Unwrap() error { return e.Err }

// An ObjectError is the failure of one object of a table: it could not be
// opened (no key, a footer that does not verify or authenticate), or its scan
// failed (a column chunk that does not verify, a page that does not decode),
// or its schema does not match the table's. Err is the reader's error, so
// errors.Is(err, verify.ErrVerify) holds for damaged bytes.
type ObjectError struct {
	Index int          // the object's position in the list scanned
	ID    storageid.ID // its storage_id
	Err   error
}

func (e *ObjectError) Error() string {
	return fmt.Sprintf("table: object %d (%s): %v", e.Index, e.ID, e.Err)
}

func (e *ObjectError) Unwrap() error { return e.Err }
