package writer

import (
	"errors"

	"github.com/sovm/sop-pme/internal/seal"
)

// Errors returned (wrapped) by this package. Match them with errors.Is.
// Errors from the blob store, from package pme and from a context pass
// through wrapped, so errors.Is matches them too; so do the sealer's, below.
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
	// a codec not every reader decompresses (ErrCodec), an encoding
	// DuckDB cannot decode (ErrEncoding), a compressed
	// page whose bytes do not bound its decompression (ErrUnboundedPage,
	// such as a streaming zstd compressor's large frames), a page or a
	// row-group count beyond the format's limits (pme.ErrTooLarge), or a
	// field that needs an ID and has no schema element of its own to carry
	// it. The error wraps the cause. Re-encoding the rows (WriteRecords)
	// makes an object of such a file.
	ErrNotSealable = errors.New("writer: the Parquet file cannot be sealed as it is; re-encode it")
)

// The sealer's refusals of a plaintext Parquet file (SealFile, and the
// pages of a Writer's own row groups): defined by the sealer, which turns
// Parquet pages into the modules of Section 11.3, and exported here, where
// callers meet them.
var (
	// ErrPlaintextParquet reports input that is not a plaintext Parquet
	// file the sealer takes: no "PAR1" at both ends, an encrypted file
	// (with ErrEncryptedParquet), a malformed footer or page header, a
	// column chunk in another file, a footer key reserved for padding,
	// pages the reader's page checks refuse, or rows that do not decode.
	ErrPlaintextParquet = seal.ErrPlaintextParquet
	// ErrEncryptedParquet reports an encrypted Parquet file where a
	// plaintext one is wanted: "PARE" at either end, or a "PAR1" file
	// whose footer carries encryption fields (plaintext footer mode). It
	// comes with ErrPlaintextParquet.
	ErrEncryptedParquet = seal.ErrEncryptedParquet
	// ErrCodec reports a column chunk compressed with a codec that the
	// readers of SOP-PME-1 objects cannot be relied on to decompress:
	// DuckDB 1.5.6 and this library's reader (arrow-go) both read
	// UNCOMPRESSED, SNAPPY, GZIP, BROTLI, ZSTD and LZ4_RAW, which the
	// sealer takes, and the deprecated LZ4 codec (Hadoop framing), which
	// it rewrites as LZ4_RAW. LZO is read by neither, nor is a codec
	// parquet.thrift does not name.
	ErrCodec = seal.ErrCodec
	// ErrEncoding reports a page whose encoding DuckDB 1.5.6, or arrow-go
	// (the decoder of this library's reader), cannot decode: a sealed
	// object keeps its file's encodings (Section 11.3: "readable by any
	// conforming reader holding only the object's DEK"). BYTE_STREAM_SPLIT
	// for INT32, INT64 and FIXED_LEN_BYTE_ARRAY, levels in BIT_PACKED,
	// DELTA_BYTE_ARRAY for FIXED_LEN_BYTE_ARRAY, and encodings
	// parquet.thrift does not define are refused; the command's import then
	// encodes the rows again.
	ErrEncoding = seal.ErrEncoding
	// ErrUnboundedPage reports a compressed page whose own bytes do not
	// bound its decompression by its uncompressed_page_size (a zstd frame
	// that states a larger content size, or none; a snappy page whose
	// decoded length is not its size): the reader refuses such pages, so
	// the sealer does.
	ErrUnboundedPage = seal.ErrUnboundedPage
)

// A ColumnError is the sealer's refusal of one column chunk: RowGroup is
// the index of its row group in the file, Column names the column (its
// dotted path_in_schema), and Err, which it wraps, says why (ErrCodec,
// ErrEncoding, ErrUnboundedPage, ErrPlaintextParquet, pme.ErrTooLarge).
// Match it with errors.As.
type ColumnError = seal.ColumnError
