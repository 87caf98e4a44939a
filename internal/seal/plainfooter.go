package seal

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/sovm/sop-pme/internal/thrift"
)

// ReadPlainFooter reads and decodes the footer of the plaintext Parquet file
// r of size bytes, as AddFile does: the file must have the "PAR1" magic at
// both ends and a footer of at most 256 MiB, without encryption fields. The
// error wraps ErrPlaintextParquet. The Footer can be read (Fields) and
// edited (SetFieldIDs), for a caller that decides about the file before it
// seals it.
func ReadPlainFooter(r io.ReaderAt, size int64) (*Footer, error) {
	meta, err := readFooter(r, size)
	if err != nil {
		return nil, err
	}
	return &Footer{meta: meta}, nil
}

// readFooter reads and decodes the footer of the plaintext Parquet file r
// of size bytes.
func readFooter(r io.ReaderAt, size int64) (*thrift.Struct, error) {
	if size < 12 {
		return nil, fmt.Errorf("%w: %d bytes", ErrPlaintextParquet, size)
	}
	var head, tail [8]byte
	if _, err := r.ReadAt(head[:4], 0); err != nil {
		return nil, fmt.Errorf("pme: reading plaintext Parquet: %w", err)
	}
	if _, err := r.ReadAt(tail[:], size-8); err != nil {
		return nil, fmt.Errorf("pme: reading plaintext Parquet: %w", err)
	}
	if string(head[:4]) == "PARE" || string(tail[4:]) == "PARE" {
		return nil, fmt.Errorf("%w: %w", ErrPlaintextParquet, ErrEncryptedParquet)
	}
	if string(head[:4]) != "PAR1" || string(tail[4:]) != "PAR1" {
		return nil, fmt.Errorf("%w: no PAR1 magic at both ends", ErrPlaintextParquet)
	}
	flen := int64(binary.LittleEndian.Uint32(tail[:4]))
	if flen > size-12 || flen > maxPlainFooter {
		return nil, fmt.Errorf("%w: footer of %d bytes in a file of %d", ErrPlaintextParquet, flen, size)
	}
	raw := make([]byte, flen)
	if _, err := r.ReadAt(raw, size-8-flen); err != nil {
		return nil, fmt.Errorf("pme: reading plaintext Parquet: %w", err)
	}
	meta, err := thrift.DecodeExact(raw, footerLimits(len(raw)))
	if err != nil {
		// In plaintext footer mode, the footer's signature (nonce and tag)
		// follows the FileMetaData.
		if m, _, perr := thrift.Decode(raw, footerLimits(len(raw))); perr == nil && m.Field(fmdEncryptionAlgo) != nil {
			return nil, fmt.Errorf("%w: %w (plaintext footer mode: the footer carries encryption fields)", ErrPlaintextParquet, ErrEncryptedParquet)
		}
		return nil, fmt.Errorf("%w: footer: %w", ErrPlaintextParquet, err)
	}
	if meta.Field(fmdEncryptionAlgo) != nil || meta.Field(fmdFooterSigningKeyMD) != nil {
		return nil, fmt.Errorf("%w: %w (plaintext footer mode: the footer carries encryption fields)", ErrPlaintextParquet, ErrEncryptedParquet)
	}
	return meta, nil
}
