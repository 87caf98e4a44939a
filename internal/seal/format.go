package seal

import "github.com/sovm/sop-pme/internal/thrift"

// Thrift field IDs of the parquet.thrift structures a Sealer reads and
// edits, and the values of its enums it needs (apache/parquet-format,
// parquet.thrift and Encryption.md).
const (
	// FileMetaData
	fmdVersion            = 1
	fmdSchema             = 2
	fmdNumRows            = 3
	fmdRowGroups          = 4
	fmdKeyValueMetadata   = 5
	fmdEncryptionAlgo     = 8
	fmdFooterSigningKeyMD = 9

	// SchemaElement
	seType        = 1
	seTypeLength  = 2
	seRepetition  = 3
	seNumChild    = 5
	seFieldID     = 9
	seLogicalType = 10

	// KeyValue
	kvKey   = 1
	kvValue = 2

	// RowGroup
	rgColumns         = 1
	rgNumRows         = 3
	rgFileOffset      = 5
	rgTotalCompressed = 6
	rgOrdinal         = 7

	// ColumnChunk
	ccFilePath          = 1
	ccFileOffset        = 2
	ccMetaData          = 3
	ccOffsetIndexOffset = 4
	ccCryptoMetadata    = 8
	ccEncryptedColumnMD = 9

	// ColumnMetaData
	cmdEncodings         = 2
	cmdPathInSchema      = 3
	cmdCodec             = 4
	cmdNumValues         = 5
	cmdTotalUncompressed = 6
	cmdTotalCompressed   = 7
	cmdDataPageOffset    = 9
	cmdIndexPageOffset   = 10
	cmdDictPageOffset    = 11
	cmdEncodingStats     = 13
	cmdBloomFilterOffset = 14
	cmdBloomFilterLength = 15

	// PageEncodingStats
	pesPageType = 1

	// PageHeader
	phType             = 1
	phUncompressedSize = 2
	phCompressedSize   = 3
	phCRC              = 4 // of the compressed page: dropped when it changes
	phDataPage         = 5
	phDictPageHdr      = 7
	phDataPageV2       = 8

	// DataPageHeader
	dphNumValues   = 1
	dphEncoding    = 2
	dphDefEncoding = 3
	dphRepEncoding = 4
	dphStatistics  = 5

	// DictionaryPageHeader
	dictEncoding = 2

	// DataPageHeaderV2
	dph2NumValues    = 1
	dph2Encoding     = 4
	dph2DefLen       = 5
	dph2RepLen       = 6
	dph2IsCompressed = 7
	dph2Statistics   = 8

	// PageType
	pageData       = 0
	pageDictionary = 2
	pageDataV2     = 3

	// FieldRepetitionType
	repRequired = 0
	repRepeated = 2

	// CompressionCodec
	codecUncompressed = 0
	codecLZ4          = 5
	codecLZ4Raw       = 7
)

// Magic bytes, at both ends: of an encrypted-footer Parquet file, and of a
// plaintext one.
const (
	magicPARE = "PARE"
	magicPAR1 = "PAR1"
)

// Limits on the Thrift structures this package parses. A Parquet footer
// nests about 9 deep; page headers much less.
var thriftLimits = thrift.Limits{MaxDepth: 24}

// footerLimits are pme's limits for a footer of n bytes (see pme.ParseFooter):
// a plaintext file's footer is read under those its object's will be.
func footerLimits(n int) thrift.Limits {
	return thrift.Limits{MaxDepth: thriftLimits.MaxDepth, MaxNodes: n/2 + 1<<16}
}
