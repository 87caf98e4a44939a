package hostile

// Thrift field IDs (apache/parquet-format, parquet.thrift).
const (
	FMDVersion   = 1
	FMDSchema    = 2
	FMDNumRows   = 3
	FMDRowGroups = 4
	FMDKeyValue  = 5

	SEType       = 1
	SETypeLength = 2
	SERepetition = 3
	SEName       = 4
	SENumChild   = 5
	SEConverted  = 6
	SEFieldID    = 9
	SELogical    = 10

	KVKey   = 1
	KVValue = 2

	RGColumns         = 1
	RGTotalByteSize   = 2
	RGNumRows         = 3
	RGFileOffset      = 5
	RGTotalCompressed = 6

	CCMetaData = 3

	CMDType              = 1
	CMDCodec             = 4
	CMDNumValues         = 5
	CMDTotalUncompressed = 6
	CMDTotalCompressed   = 7
	CMDDataPageOffset    = 9
	CMDDictPageOffset    = 11

	PHType             = 1
	PHUncompressedSize = 2
	PHCompressedSize   = 3
	PHDataPage         = 5
	PHIndexPage        = 6
	PHDictPage         = 7
	PHDataPageV2       = 8

	// DataPageHeader, DictionaryPageHeader and DataPageHeaderV2 all have
	// num_values as field 1.
	NumValues = 1
	// DataPageHeader.encoding, DictionaryPageHeader.encoding.
	Encoding = 2
	// DataPageHeaderV2.
	V2NumNulls     = 2
	V2NumRows      = 3
	V2Encoding     = 4
	V2DefLevelsLen = 5
	V2RepLevelsLen = 6
)

// Parquet enum values.
const (
	PageData       = 0
	PageIndex      = 1
	PageDictionary = 2
	PageDataV2     = 3
)
