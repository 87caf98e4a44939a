package pme

import "github.com/sovm/sop-pme/internal/thrift"

// Thrift field IDs of the parquet.thrift structures this package reads
// (apache/parquet-format, parquet.thrift and Encryption.md).
const (
	// FileMetaData
	fmdSchema           = 2
	fmdRowGroups        = 4
	fmdKeyValueMetadata = 5
	fmdMaxKnown         = 9 // the largest field ID of FileMetaData

	// SchemaElement
	seName     = 4
	seNumChild = 5
	seFieldID  = 9

	// KeyValue
	kvKey   = 1
	kvValue = 2

	// RowGroup
	rgColumns = 1

	// ColumnChunk
	ccFilePath          = 1
	ccMetaData          = 3
	ccOffsetIndexOffset = 4
	ccEncryptedColumnMD = 9

	// ColumnMetaData
	cmdTotalCompressed   = 7
	cmdDataPageOffset    = 9
	cmdIndexPageOffset   = 10
	cmdDictPageOffset    = 11
	cmdBloomFilterOffset = 14
	cmdBloomFilterLength = 15

	// FileCryptoMetaData
	fcmAlgorithm   = 1
	fcmKeyMetadata = 2

	// EncryptionAlgorithm (a union)
	algoAESGCMV1    = 1
	algoAESGCMCTRV1 = 2

	// AesGcmV1
	gcmAADPrefix       = 1
	gcmAADFileUnique   = 2
	gcmSupplyAADPrefix = 3
)

// MaxPageSize is the largest page, compressed or not, in bytes, that the
// writer seals and that package reader decodes: 256 MiB, arrow-go's default
// limit for uncompressed pages. A larger page would make an object its
// readers refuse, so it is refused before anything is published.
const MaxPageSize = 256 << 20

// MaxRowGroups is the most row groups an object may have: RowGroup.ordinal is
// a Thrift i16, and DuckDB rejects larger ordinals.
const MaxRowGroups = 32767

// Magic bytes of an encrypted-footer Parquet file, at both ends.
var magicPARE = [4]byte{'P', 'A', 'R', 'E'}

// Limits on the Thrift structures this package parses. A Parquet footer
// nests about 9 deep; page headers and FileCryptoMetaData much less.
var thriftLimits = thrift.Limits{MaxDepth: 24}

// footerLimits are the limits for a footer of n bytes: the number of values
// grows with the footer (a footer of many row groups and columns holds
// millions), at most one per two bytes beyond the first 64 Ki. Real footers
// take 2.4 to 8 bytes per value (arrow-go's, DuckDB's), while a footer of
// empty structs takes one: the limit halves what such a footer costs.
func footerLimits(n int) thrift.Limits {
	return thrift.Limits{MaxDepth: 24, MaxNodes: n/2 + 1<<16}
}

// TrailerSize is the size in bytes of the file trailer: the u32 LE length of
// FileCryptoMetaData plus the footer module, and "PARE".
const TrailerSize = 8
