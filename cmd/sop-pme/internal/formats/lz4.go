package formats

import (
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/sovm/sop-pme/internal/lz4hadoop"
)

// arrow-go implements no decoder for Parquet's deprecated LZ4 codec
// (Hadoop framing, or a bare block), which parquet-mr and older
// parquet-cpp wrote, and fails such a file ("compression for LZ4
// unimplemented"). Import reads it with package lz4hadoop's decoder, the
// one the sealer uses to rewrite such pages as LZ4_RAW, registered as
// arrow-go documents it: in an init function, before any file is read.
// (The reader never decodes the codec: it refuses pages of codecs outside
// internal/pagebound/codecbound's list, which LZ4 is not on.)
func init() {
	compress.RegisterCodec(compress.Codecs.Lz4, lz4hadoop.Codec{})
}
