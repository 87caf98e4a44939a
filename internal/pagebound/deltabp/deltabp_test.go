package deltabp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/sovm/sop-pme/internal/thrift"
)

// firstPage writes rec (one required column) with arrow-go in encoding,
// uncompressed, in one page, and returns that page's body.
func firstPage(t testing.TB, rec arrow.RecordBatch, enc parquet.Encoding) []byte {
	t.Helper()
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithDictionaryDefault(false), parquet.WithEncoding(enc),
		parquet.WithCompression(compress.Codecs.Uncompressed), parquet.WithDataPageSize(64<<20))
	w, err := pqarrow.NewFileWriter(rec.Schema(), &buf, props, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	hdr, n, err := thrift.Decode(b[4:], thrift.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	size, err := hdr.I32(3)
	if err != nil {
		t.Fatal(err)
	}
	return b[4+n : 4+n+int(size)]
}

// TestWalkArrowGo: the values of arrow-go's DELTA_BINARY_PACKED pages
// (sequences, random values of every width, the extremes that wrap) are
// those written, and the stream's length is the page's.
func TestWalkArrowGo(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	for name, gen := range map[string]func(i int) int64{
		"sequence": func(i int) int64 { return int64(i) },
		"random":   func(int) int64 { return int64(rng.Uint64()) >> rng.IntN(64) },
		"extremes": func(i int) int64 { return []int64{math.MinInt64, math.MaxInt64, 0, -1}[i%4] },
		"constant": func(int) int64 { return 42 },
	} {
		for _, n := range []int{1, 2, 129, 5000} {
			want := make([]int64, n)
			b := array.NewInt64Builder(memory.DefaultAllocator)
			for i := range want {
				want[i] = gen(i)
				b.Append(want[i])
			}
			col := b.NewArray()
			b.Release()
			schema := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)
			rec := array.NewRecordBatch(schema, []arrow.Array{col}, int64(n))
			page := firstPage(t, rec, parquet.Encodings.DeltaBinaryPacked)
			rec.Release()
			col.Release()
			var got []int64
			h, used, err := Walk(page, int64(n), func(v int64) { got = append(got, v) })
			if err != nil {
				t.Fatalf("%s/%d: %v", name, n, err)
			}
			if h.Total != int64(n) || used != len(page) || len(got) != n {
				t.Fatalf("%s/%d: %d values of %d, %d bytes of %d", name, n, len(got), h.Total, used, len(page))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("%s/%d: value %d is %d, want %d", name, n, i, got[i], want[i])
				}
			}
		}
	}
}

// TestWalkDeltaByteArray: the two streams of arrow-go's DELTA_BYTE_ARRAY
// pages are the prefix and suffix lengths of the strings written.
func TestWalkDeltaByteArray(t *testing.T) {
	t.Parallel()
	words := []string{"apple", "applesauce", "apply", "banana", "band", "", "bandana", "x"}
	b := array.NewStringBuilder(memory.DefaultAllocator)
	for i := range 1000 {
		b.Append(words[i%len(words)])
	}
	col := b.NewArray()
	b.Release()
	defer col.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	rec := array.NewRecordBatch(schema, []arrow.Array{col}, int64(col.Len()))
	defer rec.Release()
	page := firstPage(t, rec, parquet.Encodings.DeltaByteArray)
	var prefixes, suffixes []int64
	_, n, err := Walk(page, 1000, func(v int64) { prefixes = append(prefixes, v) })
	if err != nil {
		t.Fatal(err)
	}
	_, m, err := Walk(page[n:], 1000, func(v int64) { suffixes = append(suffixes, v) })
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	prev := ""
	for i := range 1000 {
		w := words[i%len(words)]
		p := 0
		for p < len(prev) && p < len(w) && prev[p] == w[p] {
			p++
		}
		if prefixes[i] != int64(p) || suffixes[i] != int64(len(w)-p) {
			t.Fatalf("value %d: prefix %d suffix %d, want %d and %d", i, prefixes[i], suffixes[i], p, len(w)-p)
		}
		total += suffixes[i]
		prev = w
	}
	if rest := len(page) - n - m; int64(rest) != total {
		t.Fatalf("%d bytes of suffixes after the streams, want %d", rest, total)
	}
}

// TestRefused: malformed or oversized streams, and more values than
// expected, are refused with ErrFormat.
func TestRefused(t *testing.T) {
	t.Parallel()
	hdr := func(block, mini, total uint64, first int64) []byte {
		b := binary.AppendUvarint(nil, block)
		b = binary.AppendUvarint(b, mini)
		b = binary.AppendUvarint(b, total)
		return binary.AppendUvarint(b, uint64(first<<1)^uint64(first>>63))
	}
	for name, b := range map[string][]byte{
		"empty":                  nil,
		"block of 2^27":          append(hdr(1<<27, 1, 200, 0), 0, 0),
		"block not of 128":       append(hdr(100, 1, 2, 0), 0, 0),
		"no miniblocks":          append(hdr(128, 0, 2, 0), 0, 0),
		"miniblock not of 32":    append(hdr(128, 8, 2, 0), 0, 0),
		"truncated miniblock":    append(hdr(128, 4, 10, 0), 0, 8, 0, 0, 0, 1),
		"width over 64":          append(hdr(128, 4, 10, 0), 0, 65, 0, 0, 0),
		"more values than asked": append(hdr(128, 4, 1<<20, 0), 0, 0, 0, 0, 0),
		"truncated header":       {0x80},
		"missing bit widths":     append(hdr(128, 4, 10, 0), 0, 0),
	} {
		if _, _, err := Walk(b, 1000, func(int64) {}); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: %v; want ErrFormat", name, err)
		}
	}
}
