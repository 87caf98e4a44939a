package hostile

import (
	"encoding/binary"
	"errors"
	"math/bits"
	"slices"

	"github.com/sovm/sop-pme/internal/thrift"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/writer"
)

// valueCases are pages whose values make arrow-go's decoders size plain Go
// allocations, outside the scan's memory limit, from what the page says
// (found by an audit of arrow-go v18.8.0; see the reader's values.go).
// Their pages are tiny; on a reader without the checks they allocate
// 256 MiB to 48 GiB.
func valueCases() []Case {
	return []Case{
		{"page-delta-block-size", "a DELTA_BINARY_PACKED block holds at most 65,536 values (here 2^27 in one miniblock, from a 10-byte page)", reader.ErrFormat, nil,
			valuePage("flat", 0, 5, 200, func() []byte {
				b := dbpHeader(nil, 1<<27, 1, 200, 0)
				return append(zigzag(b, 0), 0) // min delta 0, bit width 0
			})},
		{"page-delta-length-values", "a DELTA_LENGTH_BYTE_ARRAY page holds at most 2^22 values (here 2^26 empty map keys in 1 KiB)", reader.ErrFormat, nil,
			valuePage("nested", 3, 6, 1<<26, func() []byte {
				const n, block = 1 << 26, 1 << 16
				b := levelRun(nil, n, 0) // repetition levels: a row of n keys
				b = levelRun(b, n, 2)    // definition levels: all present
				b = dbpHeader(b, block, 1, n, 0)
				for range (n - 1 + block - 1) / block {
					b = append(zigzag(b, 0), 0) // lengths 0
				}
				return b
			})},
		{"page-delta-byte-array-arena", "a DELTA_BYTE_ARRAY page's strings add up to at most the scan's memory limit (here 200 strings of 512 KiB, 100 MiB, in 512 KiB)", reader.ErrMemoryLimit, nil,
			valuePage("flat", 1, 7, 200, func() []byte {
				const n, size = 200, 512 << 10
				prefix, suffix := make([]int64, n), make([]int64, n)
				suffix[0] = size // 512 KiB, then that and one more byte, each
				for i := 1; i < n; i++ {
					prefix[i], suffix[i] = size, 1
				}
				b := levelRun(nil, n, 1)
				b = append(b, dbpEncode(prefix)...)
				b = append(b, dbpEncode(suffix)...)
				return append(b, make([]byte, size+n-1)...)
			})},
		{"dictionary-num-values", "a dictionary page holds at most the values its size holds at the type's smallest width (here 2^31−1 strings in 40 bytes)", reader.ErrFormat, nil,
			dictPage(func(o *Object, c *Chunk) error {
				c.Pages[0].Sub().Set(NumValues, thrift.I32(1<<31-1))
				// An index far into the claimed dictionary.
				dp := &c.Pages[c.DataPage]
				b := levelRun(nil, 200, 1)
				b = append(b, 31) // bit width
				b = binary.AppendUvarint(b, 200<<1)
				b = binary.LittleEndian.AppendUint32(b, 1<<25)
				dp.Sub().Set(NumValues, thrift.I32(200))
				dp.SetBody(b, len(b))
				return nil
			})},
	}
}

// valuePage returns a Build of a base object ("flat" or "nested"),
// uncompressed and without dictionaries, whose column col's only page holds
// n values of encoding enc in the body body returns; the column chunk
// counts n values.
func valuePage(kind string, col int, enc, n int32, body func() []byte) func(pme.DEK) ([]byte, error) {
	return func(dek pme.DEK) ([]byte, error) {
		o, err := Base(kind, 200, writer.WithDictionary(false), writer.WithCodec(writer.Uncompressed))
		if err != nil {
			return nil, err
		}
		p := &o.Chunks[0][col].Pages[0]
		if len(o.Chunks[0][col].Pages) != 1 || p.Type() != PageData {
			return nil, errors.New("hostile: the base column is not one data page")
		}
		b := body()
		p.Sub().Set(Encoding, thrift.I32(enc))
		p.Sub().Set(NumValues, thrift.I32(n))
		p.SetBody(b, len(b))
		o.ColumnMeta(0, col).Set(CMDNumValues, thrift.I64(int64(n)))
		return o.SealPadded(dek)
	}
}

// dbpHeader appends a DELTA_BINARY_PACKED header.
func dbpHeader(b []byte, block, mini, total uint64, first int64) []byte {
	b = binary.AppendUvarint(b, block)
	b = binary.AppendUvarint(b, mini)
	b = binary.AppendUvarint(b, total)
	return zigzag(b, first)
}

func zigzag(b []byte, v int64) []byte {
	return binary.AppendUvarint(b, uint64(v<<1)^uint64(v>>63))
}

// levelRun appends a V1 page's RLE levels: one run of n levels of v (a
// bit width of at most 8).
func levelRun(b []byte, n uint64, v byte) []byte {
	run := binary.AppendUvarint(nil, n<<1)
	run = append(run, v)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(run)))
	return append(b, run...)
}

// dbpEncode encodes values as DELTA_BINARY_PACKED, in blocks of 128 values
// and 4 miniblocks, as arrow-go writes it.
func dbpEncode(values []int64) []byte {
	const block, minis, per = 128, 4, 32
	b := dbpHeader(nil, block, minis, uint64(len(values)), values[0])
	deltas := make([]int64, len(values)-1)
	for i := range deltas {
		deltas[i] = values[i+1] - values[i]
	}
	for len(deltas) > 0 {
		d := deltas[:min(block, len(deltas))]
		deltas = deltas[len(d):]
		minDelta := slices.Min(d)
		b = zigzag(b, minDelta)
		var widths [minis]int
		for m := range minis {
			for _, v := range d[min(m*per, len(d)):min((m+1)*per, len(d))] {
				widths[m] = max(widths[m], bits.Len64(uint64(v-minDelta)))
			}
			b = append(b, byte(widths[m]))
		}
		for m := range minis {
			if m*per >= len(d) {
				break // no values: no body
			}
			var acc uint64
			var nbits int
			for i := range per {
				var v uint64
				if k := m*per + i; k < len(d) {
					v = uint64(d[k] - minDelta)
				}
				for w := 0; w < widths[m]; w++ {
					acc |= (v >> w & 1) << nbits
					if nbits++; nbits == 8 {
						b, acc, nbits = append(b, byte(acc)), 0, 0
					}
				}
			}
		}
	}
	return b
}
