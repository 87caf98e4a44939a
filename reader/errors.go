package reader

import "errors"

// Errors returned (wrapped) by this package. Errors of verification
// (verify.ErrVerify, verify.ErrSize), of decryption and format (pme.ErrAuth,
// pme.ErrFormat, pme.ErrUnsupported, pme.ErrPlaintextFooter), of the store
// (blobs.ErrNotFound) and of the KeyResolver pass through wrapped, so
// errors.Is matches them too.
var (
	// ErrNoKey reports that the KeyResolver has no DEK for the storage_id.
	// Resolvers should wrap it.
	ErrNoKey = errors.New("reader: no key for this storage_id")
	// ErrFormat reports an object whose layout this reader cannot read: a
	// footer region that does not fit the object, a column chunk outside the
	// data region, a read outside every column chunk, a page header that
	// breaks a rule the decoder relies on.
	ErrFormat = errors.New("reader: malformed object")
	// ErrField reports a projection by a field ID the schema does not have,
	// and, from Open, a schema in which two fields share a field ID
	// (Section 11.2: a projection by ID must name one field).
	ErrField = errors.New("reader: no field with this field ID")
	// ErrRowGroup reports a row-group index out of range.
	ErrRowGroup = errors.New("reader: no such row group")
	// ErrOption reports an invalid option.
	ErrOption = errors.New("reader: invalid option")
	// ErrDecode reports column data that the Parquet decoder cannot decode:
	// an error, or a panic, of the decoder, turned into an error at the
	// record reader.
	ErrDecode = errors.New("reader: column data does not decode")
	// ErrMemoryLimit reports a batch whose decoding would allocate more
	// than the scan's memory limit (see WithMemoryLimit).
	ErrMemoryLimit = errors.New("reader: decoding a batch needs more memory than the limit")
	// ErrValueLimit reports a scan that would decode more values than its
	// limit (see WithMaxValues).
	ErrValueLimit = errors.New("reader: the scan would decode more values than its limit")
	// ErrClosed reports use of a closed Reader.
	ErrClosed = errors.New("reader: reader is closed")
)
