package verify

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"testing"

	"lukechampine.com/blake3"

	"github.com/sovm/sop-pme/storageid"
)

// baoVectors is testdata/bao-16k-groups.json: n0's abao test vectors for
// 16 KiB chunk groups (the outboard and slice encodings carry an 8-byte size
// prefix, as lukechampine's bao writes them).
type baoVectors struct {
	Hash []struct {
		InputLen int    `json:"input_len"`
		BaoHash  string `json:"bao_hash"`
	} `json:"hash"`
	Encode []struct {
		InputLen     int    `json:"input_len"`
		OutputLen    int    `json:"output_len"`
		BaoHash      string `json:"bao_hash"`
		EncodedBlake string `json:"encoded_blake3"`
		Corruptions  []int  `json:"corruptions"`
	} `json:"encode"`
	Outboard []struct {
		InputLen            int    `json:"input_len"`
		OutputLen           int    `json:"output_len"`
		BaoHash             string `json:"bao_hash"`
		EncodedBlake        string `json:"encoded_blake3"`
		OutboardCorruptions []int  `json:"outboard_corruptions"`
		InputCorruptions    []int  `json:"input_corruptions"`
	} `json:"outboard"`
	Seek []struct {
		InputLen    int      `json:"input_len"`
		SeekOffsets []uint64 `json:"seek_offsets"`
	} `json:"seek"`
	Slice []struct {
		InputLen int    `json:"input_len"`
		BaoHash  string `json:"bao_hash"`
		Slices   []struct {
			Start       uint64 `json:"start"`
			Len         uint64 `json:"len"`
			OutputLen   int    `json:"output_len"`
			OutputBlake string `json:"output_blake3"`
			Corruptions []int  `json:"corruptions"`
		} `json:"slices"`
	} `json:"slice"`
}

func loadVectors(t *testing.T) *baoVectors {
	t.Helper()
	b, err := os.ReadFile("testdata/bao-16k-groups.json")
	if err != nil {
		t.Fatal(err)
	}
	var v baoVectors
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Hash) == 0 || len(v.Encode) == 0 || len(v.Outboard) == 0 || len(v.Slice) == 0 || len(v.Seek) == 0 {
		t.Fatal("vectors file has an empty section")
	}
	return &v
}

func mustID(t *testing.T, s string) storageid.ID {
	t.Helper()
	id, err := storageid.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func blake3Hex(b []byte) string {
	s := blake3.Sum256(b)
	return hex.EncodeToString(s[:])
}

func flip(b []byte, i int) []byte {
	c := bytes.Clone(b)
	c[i] ^= 1
	return c
}

func TestVectorsHash(t *testing.T) {
	t.Parallel()
	for _, v := range loadVectors(t).Hash {
		id, _ := encode(t, baoInput(v.InputLen))
		if id != mustID(t, v.BaoHash) {
			t.Errorf("len %d: root %s, want %s", v.InputLen, id, v.BaoHash)
		}
	}
}

func TestVectorsOutboard(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, v := range loadVectors(t).Outboard {
		in := baoInput(v.InputLen)
		id, ob := encode(t, in)
		if id != mustID(t, v.BaoHash) {
			t.Fatalf("len %d: root %s, want %s", v.InputLen, id, v.BaoHash)
		}
		prefixed := binary.LittleEndian.AppendUint64(nil, uint64(len(in)))
		prefixed = append(prefixed, ob...)
		if len(prefixed) != v.OutputLen || blake3Hex(prefixed) != v.EncodedBlake {
			t.Errorf("len %d: outboard (%d bytes) does not match the vector", v.InputLen, len(prefixed))
		}
		if err := Verify(ctx, &memSource{id: id, data: in, outboard: ob}, id); err != nil {
			t.Errorf("len %d: Verify: %v", v.InputLen, err)
		}
		for _, c := range v.OutboardCorruptions {
			src := &memSource{id: id, data: in, outboard: ob}
			if c < headerSize {
				// The outboard's size prefix is the size header of a slice.
				src.tamper = func(_, _ uint64, enc []byte) []byte { return flip(enc, c) }
			} else {
				src.outboard = flip(ob, c-headerSize)
			}
			if err := Verify(ctx, src, id); !errors.Is(err, ErrVerify) {
				t.Errorf("len %d: outboard corruption at %d: Verify = %v, want ErrVerify", v.InputLen, c, err)
			}
		}
		for _, c := range v.InputCorruptions {
			src := &memSource{id: id, data: flip(in, c), outboard: ob}
			if err := Verify(ctx, src, id); !errors.Is(err, ErrVerify) {
				t.Errorf("len %d: input corruption at %d: Verify = %v, want ErrVerify", v.InputLen, c, err)
			}
		}
	}
}

// TestVectorsEncode checks that a slice of a whole blob is its combined
// encoding, and that every corruption of it fails verification.
func TestVectorsEncode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, v := range loadVectors(t).Encode {
		in := baoInput(v.InputLen)
		id, ob := encode(t, in)
		if id != mustID(t, v.BaoHash) {
			t.Fatalf("len %d: root %s, want %s", v.InputLen, id, v.BaoHash)
		}
		enc := extract(t, in, ob, 0, tailOffset)
		if len(enc) != v.OutputLen || blake3Hex(enc) != v.EncodedBlake {
			t.Errorf("len %d: combined encoding (%d bytes) does not match the vector", v.InputLen, len(enc))
		}
		for _, c := range v.Corruptions {
			src := &memSource{id: id, data: in, outboard: ob,
				tamper: func(_, _ uint64, enc []byte) []byte { return flip(enc, c) }}
			if err := Verify(ctx, src, id); !errors.Is(err, ErrVerify) {
				t.Errorf("len %d: corruption at %d: Verify = %v, want ErrVerify", v.InputLen, c, err)
			}
		}
	}
}

func TestVectorsSlice(t *testing.T) {
	t.Parallel()
	for _, v := range loadVectors(t).Slice {
		in := baoInput(v.InputLen)
		id, ob := encode(t, in)
		if id != mustID(t, v.BaoHash) {
			t.Fatalf("len %d: root %s, want %s", v.InputLen, id, v.BaoHash)
		}
		for _, s := range v.Slices {
			// abao selects the group holding start for a zero length; a
			// Source range is never empty.
			n := max(s.Len, 1)
			enc := extract(t, in, ob, s.Start, n)
			if len(enc) != s.OutputLen || blake3Hex(enc) != s.OutputBlake {
				t.Errorf("len %d slice [%d,+%d): encoding (%d bytes) does not match the vector", v.InputLen, s.Start, s.Len, len(enc))
				continue
			}
			want := in[min(s.Start, uint64(len(in))):min(s.Start+n, uint64(len(in)))]
			for _, known := range []int64{-1, int64(len(in))} {
				dst := make([]byte, n)
				size, err := decodeSlice(bytes.NewReader(enc), id, known, false, s.Start, dst)
				if err != nil || size != uint64(len(in)) || !bytes.Equal(dst[:len(want)], want) {
					t.Errorf("len %d slice [%d,+%d): decode: size %d, %v", v.InputLen, s.Start, s.Len, size, err)
				}
				for _, c := range s.Corruptions {
					for i := range dst {
						dst[i] = 0xAA
					}
					_, err := decodeSlice(bytes.NewReader(flip(enc, c)), id, known, false, s.Start, dst)
					if !errors.Is(err, ErrVerify) && !(known >= 0 && errors.Is(err, ErrSize)) {
						t.Errorf("len %d slice [%d,+%d) corrupt at %d (known size %d): %v", v.InputLen, s.Start, s.Len, c, known, err)
					}
					if !isZero(dst) {
						t.Errorf("len %d slice [%d,+%d) corrupt at %d: destination not cleared", v.InputLen, s.Start, s.Len, c)
					}
				}
			}
		}
	}
}

func TestVectorsSeek(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, v := range loadVectors(t).Seek {
		in := baoInput(v.InputLen)
		src := newMemSource(t, in)
		r, err := NewReader(ctx, src, src.id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Size() != int64(len(in)) {
			t.Fatalf("Size %d, want %d", r.Size(), len(in))
		}
		for _, off := range v.SeekOffsets {
			buf := make([]byte, 3000)
			n, err := r.ReadAt(buf, int64(off))
			want := in[min(off, uint64(len(in))):min(off+3000, uint64(len(in)))]
			if !bytes.Equal(buf[:n], want) || (n < len(buf)) != (err == io.EOF) || (err != nil && err != io.EOF) {
				t.Errorf("len %d: ReadAt(%d) = %d, %v", v.InputLen, off, n, err)
			}
		}
	}
}
