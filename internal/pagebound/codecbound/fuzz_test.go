package codecbound

import (
	"testing"

	"github.com/apache/arrow-go/v18/parquet/compress"
)

// FuzzCheck: Check never panics, and what it accepts decodes, with
// arrow-go's decoder of the codec into a buffer of the page's size (nil for
// an empty page, arrow-go's worst case), to at most size plus one zstd
// block. The seed corpus (testdata/fuzz/FuzzCheck) holds pages of every
// codec as arrow-go writes them and the bombs of TestRefused.
func FuzzCheck(f *testing.F) {
	for _, codec := range []int32{Snappy, Gzip, Brotli, Zstd, Lz4Raw} {
		c, _ := compress.GetCodec(compress.Compression(codec))
		for _, n := range []int{0, 10, 5000} {
			f.Add(codec, c.Encode(nil, pageData(n, 1)), uint32(n))
		}
	}
	f.Add(int32(Zstd), zstdFrame(0x00, []byte{0x50}, 20), uint32(1000))
	f.Add(int32(Zstd), compressedBlocks(20), uint32(1000))
	f.Fuzz(func(t *testing.T, codec int32, b []byte, size uint32) {
		if size > 1<<20 || len(b) > 1<<16 {
			return
		}
		if Check(codec, b, int(size)) != nil || codec == Uncompressed {
			return
		}
		if codec == Lz4Raw && size == 0 {
			// LZ4_RAW decodes into the buffer only, and with none at all
			// pierrec/lz4 dereferences nil: a panic, which the reader
			// turns into ErrDecode, not an allocation.
			return
		}
		c, err := compress.GetCodec(compress.Compression(codec))
		if err != nil {
			t.Fatalf("Check accepted codec %d, which arrow-go does not have", codec)
		}
		var dst []byte
		if size > 0 {
			dst = make([]byte, size)
		}
		out, err := compress.Decode(c, dst, b)
		if err == nil && uint64(len(out)) > uint64(size)+maxBlock {
			t.Fatalf("codec %d: a page of %d bytes decoded to %d", codec, size, len(out))
		}
	})
}
