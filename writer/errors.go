package writer

import "errors"

// Errors returned (wrapped) by this package. Match them with errors.Is.
// Errors from the blob store, from package pme and from a context pass
// through wrapped, so errors.Is matches them too.
var (
	// ErrSchema reports a nil schema or one without fields.
	ErrSchema = errors.New("writer: schema is nil or has no fields")
	// ErrFieldID reports a column without a valid, unique Parquet field ID
	// (Section 11.2). Every field needs one: top-level columns, struct
	// children, list elements, map keys and values.
	ErrFieldID = errors.New("writer: every column needs a unique, positive Parquet field ID")
	// ErrReservedKey reports schema metadata whose key starts with the
	// reserved padding key sovm:sop-pad-v1 (Section 11.8).
	ErrReservedKey = errors.New("writer: metadata key is reserved for padding")
	// ErrRecordSchema reports a record whose schema differs from the
	// writer's.
	ErrRecordSchema = errors.New("writer: record schema differs from the writer's schema")
	// ErrClosed reports Write or Close after Close, or after a failure that
	// aborted the object.
	ErrClosed = errors.New("writer: writer is closed")
	// ErrOption reports an invalid option.
	ErrOption = errors.New("writer: invalid option")
	// ErrPadding reports an object that would not reach its Padmé target
	// exactly. Such an object is never published (Section 11.8).
	ErrPadding = errors.New("writer: object does not reach its Padmé target")
	// ErrReaderLimit reports an object that package reader would refuse, or
	// could not return with its default options: a schema nested deeper
	// than pme.MaxSchemaDepth or wider than reader.DefaultMaxColumns leaf
	// columns, a footer beyond the reader's bounds on its paths, elements,
	// key-value entries or size (pme), more values than
	// reader.DefaultMaxValues, or a row whose values decode to more than
	// the default memory limit of a scan (reader.DefaultMemoryLimit). Such
	// an object is never published, and no DEK is handed out for it: a
	// writer must not acknowledge what its reader cannot read back (the
	// spirit of Section 11.8's rule against publishing short of the
	// target).
	ErrReaderLimit = errors.New("writer: the object would break a limit of the reader")
	// ErrEncode reports a failure of the Parquet encoder.
	ErrEncode = errors.New("writer: Parquet encoding failed")
	// ErrNotSealable reports a plaintext Parquet file that SealFile cannot
	// turn into an object byte for byte, though it may be a sound file:
	// a codec not every reader decompresses (pme.ErrCodec), an encoding
	// DuckDB cannot decode (pme.ErrEncoding), a compressed
	// page whose bytes do not bound its decompression (pme.ErrUnboundedPage,
	// such as a streaming zstd compressor's large frames), a page or a
	// row-group count beyond the format's limits (pme.ErrTooLarge), or a
	// field that needs an ID and has no schema element of its own to carry
	// it. The error wraps the cause. Re-encoding the rows (WriteRecords)
	// makes an object of such a file.
	ErrNotSealable = errors.New("writer: the Parquet file cannot be sealed as it is; re-encode it")
)
