package seal

import (
	"errors"
	"fmt"
)

// Errors returned (wrapped) by this package, besides pme's (ErrTooLarge,
// ErrFormat). Match them with errors.Is; package writer exports those its
// SealFile returns. Their text keeps the "pme:" of the layer they belong
// to: the encryption of Parquet pages into modules.
var (
	// ErrPlaintextParquet reports input to a Sealer that is not a
	// plaintext Parquet file it can seal: no "PAR1" at both ends, an
	// encrypted file, a column chunk in another file, or a footer it
	// cannot decode.
	ErrPlaintextParquet = errors.New("pme: not a plaintext Parquet file this sealer takes")
	// ErrEncryptedParquet reports an encrypted Parquet file where a
	// plaintext one is wanted (ReadPlainFooter, a Sealer): "PARE" at
	// either end, or a "PAR1" file whose footer carries encryption fields
	// (plaintext footer mode, whose column chunks are encrypted). It comes
	// with ErrPlaintextParquet.
	ErrEncryptedParquet = errors.New("pme: an encrypted Parquet file")
	// ErrLayout reports plaintext Parquet, fed to the Sealer, that does not
	// have the shape it expects (an internal error of the encoder), or a
	// footer without exactly one padding entry (Footer.SetPad).
	ErrLayout = errors.New("pme: unexpected plaintext Parquet layout")
	// ErrPadding reports a pad entry that a footer cannot hold (see
	// Footer.SetPad); the writer refuses such an object with its own
	// ErrPadding, wrapping this one.
	ErrPadding = errors.New("pme: the pad does not fit the footer")
)

// ErrUnboundedPage reports a compressed page whose own bytes do not bound
// its decompression by its uncompressed_page_size: a zstd frame that states
// a larger content size, or that states none and whose blocks may decode
// to more (a streaming compressor's output can); a snappy page whose
// decoded length is not its size. The reader refuses such pages, since the
// decompressors allocate what those bytes say (see the reader's page
// checks), so a Sealer refuses them rather than make an object no
// SOP-PME-1 reader of this library opens.
var ErrUnboundedPage = errors.New("pme: compressed page whose bytes do not bound its decompressed size")

// ErrCodec reports a column chunk compressed with a codec that the readers
// of SOP-PME-1 objects cannot be relied on to decompress: DuckDB 1.5.6 and
// this library's reader (arrow-go) both read UNCOMPRESSED, SNAPPY, GZIP,
// BROTLI, ZSTD and LZ4_RAW, and a Sealer takes those, and the deprecated
// LZ4 codec (Hadoop framing), which it rewrites as LZ4_RAW (neither reads
// it). LZO is read by neither, nor is a codec parquet.thrift does not name.
var ErrCodec = errors.New("pme: compression codec not readable by every SOP-PME-1 reader")

// A ColumnError is a Sealer's refusal of one column chunk: RowGroup is the
// index of its row group in the file AddFile was given, Column names the
// column (its dotted path_in_schema), and Err, which it wraps, says why
// (ErrCodec, ErrUnboundedPage, ErrPlaintextParquet, pme.ErrTooLarge, ...).
type ColumnError struct {
	RowGroup int
	Column   string
	Err      error
}

// Error returns "row group N: column PATH: " and Err's text.
func (e *ColumnError) Error() string {
	return fmt.Sprintf("row group %d: column %s: %v", e.RowGroup, e.Column, e.Err)
}

// Unwrap returns Err, for errors.Is and errors.As.
func (e *ColumnError) Unwrap() error { return e.Err }
