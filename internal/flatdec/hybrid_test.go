package flatdec

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// packHybrid encodes vals (each below 2^width) as one bit-packed run, the
// last group padded with zeros.
func packHybrid(vals []uint32, width int) []byte {
	groups := (len(vals) + 7) / 8
	out := binary.AppendUvarint(nil, uint64(groups)<<1|1)
	bits := make([]byte, groups*width)
	for i, v := range vals {
		for b := range width {
			if v>>b&1 == 1 {
				p := i*width + b
				bits[p/8] |= 1 << (p % 8)
			}
		}
	}
	return append(out, bits...)
}

// TestHybrid: bit-packed runs of every width decode to their values, read
// in pieces of any size, and RLE runs to theirs.
func TestHybrid(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	for width := 0; width <= 32; width++ {
		vals := make([]uint32, 1003)
		for i := range vals {
			if width > 0 {
				vals[i] = uint32(rng.Uint64() & (1<<width - 1))
			}
		}
		enc := packHybrid(vals, width)
		// An RLE run after it.
		enc = binary.AppendUvarint(enc, 5<<1)
		rv := uint32(0)
		if width > 0 {
			rv = uint32(1<<width - 1)
		}
		for i := range (width + 7) / 8 {
			enc = append(enc, byte(rv>>(8*i)))
		}
		want := append(slices.Clone(vals), make([]uint32, 1008-1003)...) // the padding of the last group
		for range 5 {
			want = append(want, rv)
		}
		for _, piece := range []int{1, 3, 8, 13, 64, 2000} {
			var h hybrid
			h.init(enc, width)
			got := make([]uint32, 0, len(want))
			for len(got) < len(want) {
				n := min(piece, len(want)-len(got))
				buf := make([]uint32, n)
				if err := h.read(buf); err != nil {
					t.Fatalf("width %d pieces of %d: %v", width, piece, err)
				}
				got = append(got, buf...)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("width %d pieces of %d: values differ", width, piece)
			}
			if err := h.read(make([]uint32, 1)); err == nil {
				t.Fatalf("width %d: a value past the end", width)
			}
		}
	}
}

func BenchmarkHybrid(b *testing.B) {
	for _, width := range []int{1, 4, 12, 20} {
		b.Run(fmt.Sprint(width), func(b *testing.B) {
			vals := make([]uint32, 1<<16)
			for i := range vals {
				vals[i] = uint32(i*7919) & (1<<width - 1)
			}
			enc := packHybrid(vals, width)
			out := make([]uint32, 1024)
			b.SetBytes(int64(len(vals)) * 4)
			for b.Loop() {
				var h hybrid
				h.init(enc, width)
				for range len(vals) / len(out) {
					if err := h.read(out); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
