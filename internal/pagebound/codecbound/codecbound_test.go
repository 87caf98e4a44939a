package codecbound

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/zstd"
)

// pageData returns n bytes that compress somewhat.
func pageData(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.IntN(16))
	}
	return b
}

// encode compresses b as arrow-go's writer does.
func encode(t testing.TB, codec int32, b []byte) []byte {
	t.Helper()
	c, err := compress.GetCodec(compress.Compression(codec))
	if err != nil {
		t.Fatal(err)
	}
	return c.Encode(nil, b)
}

// TestWritersPass: what arrow-go's codecs write passes, whatever the size,
// and so do zstd frames with a checksum, a dictionary ID field, several
// frames and skippable frames.
func TestWritersPass(t *testing.T) {
	t.Parallel()
	for _, codec := range []int32{Uncompressed, Snappy, Gzip, Brotli, Zstd, Lz4Raw} {
		for _, n := range []int{0, 1, 100, 128 << 10, 1<<20 + 17} {
			b := pageData(n, uint64(n))
			if err := Check(codec, encode(t, codec, b), n); err != nil {
				t.Errorf("codec %d, %d bytes: %v", codec, n, err)
			}
		}
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderCRC(true), zstd.WithSingleSegment(false))
	if err != nil {
		t.Fatal(err)
	}
	a, b := pageData(300<<10, 1), pageData(5000, 2)
	fa, fb := enc.EncodeAll(a, nil), enc.EncodeAll(b, nil)
	skippable := binary.LittleEndian.AppendUint32(nil, 0x184D2A53)
	skippable = binary.LittleEndian.AppendUint32(skippable, 3)
	skippable = append(skippable, 1, 2, 3)
	for name, c := range map[string]struct {
		b    []byte
		size int
	}{
		"checksum":       {fa, len(a)},
		"two frames":     {append(bytes.Clone(fa), fb...), len(a) + len(b)},
		"skippable":      {append(append(bytes.Clone(skippable), fb...), skippable...), len(b)},
		"dictionary ID":  {withDictID(fb), len(b)},
		"fcs of 2 bytes": {enc.EncodeAll(pageData(300, 3), nil), 300},
		"streaming":      {stream(t, a), len(a)},
		"empty":          {nil, 0},
	} {
		if err := Check(Zstd, c.b, c.size); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// stream compresses b with klauspost/compress's streaming zstd writer,
// which writes frames without a content size.
func stream(t *testing.T, b []byte) []byte {
	var out bytes.Buffer
	w, err := zstd.NewWriter(&out)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(b)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if out.Bytes()[4]>>6 != 0 || out.Bytes()[4]>>5&1 != 0 {
		t.Fatal("the streaming writer wrote a content size: the case proves nothing")
	}
	return out.Bytes()
}

// withDictID rewrites a zstd frame's header to carry a 1-byte dictionary
// ID of 0 (which means none).
func withDictID(f []byte) []byte {
	out := append([]byte(nil), f[:4]...)
	out = append(out, f[4]|1)
	hdr := 5
	if f[4]>>5&1 == 0 {
		out = append(out, f[5])
		hdr = 6
	}
	out = append(out, 0)
	return append(out, f[hdr:]...)
}

// zstdFrame builds a frame by hand: fhd and the header bytes after it, then
// rle RLE blocks of 128 KiB − 1 bytes each.
func zstdFrame(fhd byte, header []byte, rle int) []byte {
	b := binary.LittleEndian.AppendUint32(nil, zstdMagic)
	b = append(b, fhd)
	b = append(b, header...)
	for i := range rle {
		h := uint32((128<<10)-1)<<3 | blockRLE<<1
		if i == rle-1 {
			h |= 1
		}
		b = append(b, byte(h), byte(h>>8), byte(h>>16), 'x')
	}
	return b
}

// compressedBlocks builds a frame without a content size, in an 8 MiB
// window, of n compressed blocks of 2 bytes each (which a decoder may
// expand to 128 KiB each).
func compressedBlocks(n int) []byte {
	b := binary.LittleEndian.AppendUint32(nil, zstdMagic)
	b = append(b, 0x00, 0x68) // no content size; window 2^(10+13)
	for i := range n {
		h := uint32(2)<<3 | blockCompressed<<1
		if i == n-1 {
			h |= 1
		}
		b = append(b, byte(h), byte(h>>8), byte(h>>16), 0, 0)
	}
	return b
}

// TestRefused: the bombs of the package doc, and bytes that are not of
// their codec, are refused with ErrUnbounded.
func TestRefused(t *testing.T) {
	t.Parallel()
	huge := binary.LittleEndian.AppendUint64([]byte{0x50}, 60<<30)
	good := encode(t, Zstd, pageData(1000, 9))
	big := encode(t, Zstd, pageData(200<<10, 9))
	for name, c := range map[string]struct {
		codec int32
		b     []byte
		size  int
	}{
		"zstd without content size, RLE blocks":        {Zstd, zstdFrame(0x00, []byte{0x50}, 8000), 1000},
		"zstd without content size, compressed blocks": {Zstd, compressedBlocks(2000), 1 << 20},
		"zstd content size of 60 GiB":                  {Zstd, zstdFrame(0xC0, huge, 1), 1000},
		"zstd content sizes past the page":             {Zstd, append(bytes.Clone(big), big...), 200 << 10},
		"zstd truncated":                               {Zstd, good[:len(good)-1], 1000},
		"zstd trailing byte":                           {Zstd, append(bytes.Clone(good), 0), 1000},
		"zstd reserved bit":                            {Zstd, zstdFrame(0xC8, huge, 1), 1000},
		"zstd reserved block":                          {Zstd, append(zstdFrame(0x20, []byte{3}, 0), 7, 0, 0), 3},
		"zstd bad magic":                               {Zstd, []byte("PAR1PAR1"), 8},
		"snappy length of 4 GiB":                       {Snappy, []byte{0xff, 0xff, 0xff, 0xff, 0x0f, 0}, 10},
		"snappy no length":                             {Snappy, nil, 0},
		"snappy length mismatch":                       {Snappy, encode(t, Snappy, pageData(10, 1)), 11},
		"gzip empty page, long body":                   {Gzip, encode(t, Gzip, pageData(100000, 1)), 0},
		"brotli empty page, long body":                 {Brotli, encode(t, Brotli, make([]byte, 1<<20)), 0},
		"LZO":                                          {3, []byte{1}, 1},
		"LZ4 (Hadoop)":                                 {5, []byte{1}, 1},
	} {
		if err := Check(c.codec, c.b, c.size); !errors.Is(err, ErrUnbounded) {
			t.Errorf("%s: %v; want ErrUnbounded", name, err)
		}
	}
}
