package lz4hadoop

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/pierrec/lz4/v4"
)

func sample(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i % 7 * (i / 100 % 3))
	}
	return b
}

func bareBlock(t testing.TB, src []byte) []byte {
	t.Helper()
	var c lz4.Compressor
	out := make([]byte, lz4.CompressBlockBound(len(src)))
	n, err := c.CompressBlock(src, out)
	if err != nil {
		t.Fatal(err)
	}
	return out[:n]
}

// TestDecode: Hadoop frames (one, several) and a bare LZ4 block decode to
// exactly the page's size; anything else, and a size that differs, is
// ErrCorrupt.
func TestDecode(t *testing.T) {
	t.Parallel()
	want := sample(5000)
	one := Encode(nil, want)
	several := Encode(Encode(Encode(nil, want[:10]), want[10:4000]), want[4000:])
	for name, src := range map[string][]byte{"one frame": one, "three frames": several, "bare block": bareBlock(t, want)} {
		got, err := Decode(make([]byte, len(want)), src)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes, %v", name, len(got), err)
		}
		// One byte more or less than the page's size is refused.
		for _, size := range []int{len(want) - 1, len(want) + 1} {
			if _, err := Decode(make([]byte, size), src); !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s into %d bytes: %v, want ErrCorrupt", name, size, err)
			}
		}
	}
	if got, err := Decode(nil, nil); err != nil || len(got) != 0 {
		t.Errorf("an empty page: %v", err)
	}
	// A frame that claims more than the page holds, a compressed size beyond
	// the input, trailing bytes, garbage.
	huge := binary.BigEndian.AppendUint32(nil, 1<<31)
	huge = binary.BigEndian.AppendUint32(huge, uint32(len(one)-8))
	huge = append(huge, one[8:]...)
	short := bytes.Clone(one)
	binary.BigEndian.PutUint32(short[4:], uint32(len(one)))
	for name, src := range map[string][]byte{
		"claims 2 GiB": huge, "compressed size past the end": short,
		"trailing byte": append(bytes.Clone(one), 0), "garbage": {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
	} {
		if _, err := Decode(make([]byte, len(want)), src); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
}

// TestCodec: the arrow-go codec decodes what Encode writes, and returns an
// error (no panic) for what it cannot.
func TestCodec(t *testing.T) {
	t.Parallel()
	want := sample(3000)
	var c Codec
	enc := c.Encode(make([]byte, c.CompressBound(int64(len(want)))), want)
	got, err := c.DecodeWithError(make([]byte, len(want)), enc)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("%d bytes, %v", len(got), err)
	}
	if _, err := c.DecodeWithError(make([]byte, 10), []byte{1, 2, 3}); err == nil {
		t.Error("garbage decoded")
	}
}

// FuzzDecode: no input panics, and a successful decode fills exactly the
// page's size.
func FuzzDecode(f *testing.F) {
	want := sample(700)
	f.Add(Encode(nil, want), uint16(len(want)))
	f.Add(bareBlock(f, want), uint16(len(want)))
	f.Add(Encode(Encode(nil, want[:300]), want[300:]), uint16(len(want)))
	f.Add([]byte{0, 0, 0, 5, 0, 0, 0, 1, 0}, uint16(5))
	f.Fuzz(func(t *testing.T, src []byte, size uint16) {
		dst := make([]byte, size)
		got, err := Decode(dst, src)
		if err == nil && len(got) != int(size) {
			t.Fatalf("decoded %d bytes into a page of %d", len(got), size)
		}
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("untyped error %v", err)
		}
		if _, err := (Codec{}).DecodeWithError(dst, src); err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("codec: untyped error %v", err)
		}
	})
}
