package pme

import (
	"encoding/binary"
	"fmt"

	"github.com/sovm/sop-pme/internal/thrift"
)

// KeyMetadataSize is the size in bytes of the opaque key_ref SOP-PME-1 writes
// into FileCryptoMetaData.key_metadata (Section 11.5).
const KeyMetadataSize = 16

// AppendFileCryptoMetaData appends the Thrift compact encoding of the
// FileCryptoMetaData of a SOP-PME-1 object to dst: encryption_algorithm =
// AES_GCM_V1 with no field set (no aad_prefix, no aad_file_unique, no
// supply_aad_prefix: the empty-AAD construction of Section 11.3), and
// key_metadata = keyMetadata, which must be the 16-byte key_ref (Section
// 11.5). The result is "1c 1c 00 00 18 10 <16 bytes> 00", 23 bytes.
//
// FileCryptoMetaData is plaintext and covered by no authentication tag: it
// authenticates nothing, and a reader never depends on key_metadata.
func AppendFileCryptoMetaData(dst []byte, keyMetadata []byte) ([]byte, error) {
	if len(keyMetadata) != KeyMetadataSize {
		return dst, fmt.Errorf("%w: key_metadata must be %d bytes, got %d", ErrFormat, KeyMetadataSize, len(keyMetadata))
	}
	s := thrift.NewStruct(
		thrift.Field{ID: fcmAlgorithm, Value: thrift.StructValue(thrift.NewStruct(
			thrift.Field{ID: algoAESGCMV1, Value: thrift.StructValue(thrift.NewStruct())},
		))},
		thrift.Field{ID: fcmKeyMetadata, Value: thrift.Binary(keyMetadata)},
	)
	return s.Append(dst), nil
}

// CryptoMetaData is a parsed FileCryptoMetaData that this package can read:
// AES_GCM_V1 with the empty AAD.
type CryptoMetaData struct {
	// KeyMetadata is the key_metadata field, nil if absent. In a SOP-PME-1
	// object it is the 16-byte opaque key_ref; DuckDB writes none.
	KeyMetadata []byte
	// SupplyAADPrefix reports that the optional supply_aad_prefix field was
	// present (with the value false; true is refused). DuckDB and this
	// package never write it.
	SupplyAADPrefix bool
}

// ParseFileCryptoMetaData parses the FileCryptoMetaData at the start of b and
// returns it with the number of bytes it takes. It accepts only AES_GCM_V1
// without aad_prefix and aad_file_unique: module AADs are forbidden by
// Section 11.3, and AES_GCM_CTR_V1 is not the SOP-PME-1 algorithm.
func ParseFileCryptoMetaData(b []byte) (CryptoMetaData, int, error) {
	s, n, err := thrift.Decode(b, thriftLimits)
	if err != nil {
		return CryptoMetaData{}, 0, fmt.Errorf("%w: FileCryptoMetaData: %w", ErrFormat, err)
	}
	var cm CryptoMetaData
	for _, f := range s.Fields {
		switch f.ID {
		case fcmAlgorithm:
		case fcmKeyMetadata:
			if f.Type != thrift.TypeBinary {
				return cm, 0, fmt.Errorf("%w: FileCryptoMetaData.key_metadata is %v", ErrFormat, f.Type)
			}
			cm.KeyMetadata = f.Bin
		default:
			return cm, 0, fmt.Errorf("%w: FileCryptoMetaData has unknown field %d", ErrFormat, f.ID)
		}
	}
	algo, err := s.Struct(fcmAlgorithm)
	if err != nil {
		return cm, 0, fmt.Errorf("%w: FileCryptoMetaData.encryption_algorithm: %w", ErrFormat, err)
	}
	if len(algo.Fields) != 1 {
		return cm, 0, fmt.Errorf("%w: EncryptionAlgorithm union has %d members", ErrFormat, len(algo.Fields))
	}
	switch algo.Fields[0].ID {
	case algoAESGCMV1:
	case algoAESGCMCTRV1:
		return cm, 0, fmt.Errorf("%w: AES_GCM_CTR_V1", ErrUnsupported)
	default:
		return cm, 0, fmt.Errorf("%w: encryption algorithm %d", ErrUnsupported, algo.Fields[0].ID)
	}
	gcm, err := algo.Struct(algoAESGCMV1)
	if err != nil {
		return cm, 0, fmt.Errorf("%w: AES_GCM_V1: %w", ErrFormat, err)
	}
	for _, f := range gcm.Fields {
		switch f.ID {
		case gcmAADPrefix, gcmAADFileUnique:
			return cm, 0, fmt.Errorf("%w: AES_GCM_V1 carries an AAD field (%d); SOP-PME-1 modules have the empty AAD", ErrUnsupported, f.ID)
		case gcmSupplyAADPrefix:
			if f.Type != thrift.TypeBool || f.Int != 0 {
				return cm, 0, fmt.Errorf("%w: supply_aad_prefix set", ErrUnsupported)
			}
			cm.SupplyAADPrefix = true
		default:
			return cm, 0, fmt.Errorf("%w: AES_GCM_V1 has unknown field %d", ErrFormat, f.ID)
		}
	}
	return cm, n, nil
}

// Tail is the end of an encrypted-footer PME file, as found in its last
// bytes: FileCryptoMetaData, then the footer module, then the trailer.
type Tail struct {
	Crypto CryptoMetaData
	// CryptoLen is the encoded length of FileCryptoMetaData in bytes.
	CryptoLen int
	// FooterBody is the footer module's body (nonce ‖ ciphertext ‖ tag).
	FooterBody []byte
}

// ParseTrailer reads the last TrailerSize bytes of a file and returns the
// length of the footer region before them (FileCryptoMetaData plus the footer
// module). It returns ErrPlaintextFooter for "PAR1" and ErrFormat otherwise.
func ParseTrailer(trailer []byte) (uint32, error) {
	if len(trailer) != TrailerSize {
		return 0, fmt.Errorf("%w: trailer of %d bytes", ErrFormat, len(trailer))
	}
	switch string(trailer[4:]) {
	case string(magicPARE[:]):
	case "PAR1":
		return 0, ErrPlaintextFooter
	default:
		return 0, fmt.Errorf("%w: trailer magic %q", ErrFormat, trailer[4:])
	}
	return binary.LittleEndian.Uint32(trailer), nil
}

// ParseFooterRegion parses the footer region of a file: the footerLen bytes
// before the trailer. The footer module must end exactly where the region
// ends: nothing may follow it (Section 11.8).
func ParseFooterRegion(region []byte) (Tail, error) {
	cm, n, err := ParseFileCryptoMetaData(region)
	if err != nil {
		return Tail{}, err
	}
	body, rest, err := SplitModule(region[n:])
	if err != nil {
		return Tail{}, fmt.Errorf("footer module: %w", err)
	}
	if len(rest) != 0 {
		return Tail{}, fmt.Errorf("%w: %d bytes follow the footer module", ErrFormat, len(rest))
	}
	return Tail{Crypto: cm, CryptoLen: n, FooterBody: body}, nil
}

// AppendTrailer appends the trailer for a footer region of footerLen bytes.
func AppendTrailer(dst []byte, footerLen int) ([]byte, error) {
	if footerLen < 0 || uint64(footerLen) > 0xFFFFFFFF {
		return dst, fmt.Errorf("%w: footer region of %d bytes", ErrTooLarge, footerLen)
	}
	dst = binary.LittleEndian.AppendUint32(dst, uint32(footerLen))
	return append(dst, magicPARE[:]...), nil
}
