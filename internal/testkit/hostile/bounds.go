package hostile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"

	"github.com/sovm/sop-pme/internal/thrift"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/writer"
)

// What a batch decodes to is bounded by the scan's memory limit, whatever
// the pages say: these objects are well formed.
func batchCases() []Case {
	return []Case{
		{"dictionary-long-strings", "decoding one batch needs no more than the scan's memory limit (one 64 KiB string, 65,536 times)", reader.ErrMemoryLimit, nil,
			func(dek pme.DEK) ([]byte, error) {
				o, err := fromRecord(constantRows(1<<16), writer.WithCodec(writer.Uncompressed))
				if err != nil {
					return nil, err
				}
				c := o.Chunks[0][1] // s
				if c.DictPage != 0 {
					return nil, errors.New("hostile: s has no dictionary page")
				}
				body := binary.LittleEndian.AppendUint32(nil, 64<<10)
				body = append(body, bytes.Repeat([]byte{'s'}, 64<<10)...)
				c.Pages[0].SetBody(body, len(body))
				return o.SealPadded(dek)
			}},
		{"fixed-width-huge", "decoding one batch needs no more than the scan's memory limit (a run of nulls of a 1 MiB fixed-width type)", reader.ErrMemoryLimit, nil,
			func(dek pme.DEK) ([]byte, error) {
				o, err := fromRecord(nullFixed(1<<16), writer.WithCodec(writer.Uncompressed))
				if err != nil {
					return nil, err
				}
				o.Schema()[2].Set(SETypeLength, thrift.I32(1<<20))
				return o.SealPadded(dek)
			}},
		{"list-null-run", "decoding one batch needs no more than the scan's memory limit (one row of 2^30 null elements, in 10 bytes of levels)", reader.ErrMemoryLimit, nil,
			func(dek pme.DEK) ([]byte, error) {
				o, err := fromRecord(oneList(), writer.WithCodec(writer.Uncompressed), writer.WithDictionary(false))
				if err != nil {
					return nil, err
				}
				const n = 1 << 30
				// Repetition levels (bit width 1): one 0, then n-1 ones;
				// definition levels (bit width 2): n twos, a null element.
				rep := binary.AppendUvarint([]byte{0x02, 0x00}, (n-1)<<1)
				rep = append(rep, 0x01)
				def := binary.AppendUvarint(nil, n<<1)
				def = append(def, 0x02)
				body := binary.LittleEndian.AppendUint32(nil, uint32(len(rep)))
				body = append(body, rep...)
				body = binary.LittleEndian.AppendUint32(body, uint32(len(def)))
				body = append(body, def...)
				p := &o.Chunks[0][0].Pages[0]
				p.SetBody(body, len(body))
				p.Sub().Set(NumValues, thrift.I32(n))
				o.ColumnMeta(0, 0).Set(CMDNumValues, thrift.I64(n))
				return o.SealPadded(dek)
			}},
		{"many-columns", "a scan's column decoders fit its memory limit, whose default makes room for 64 KiB a leaf column, up to 4,096 of them (here 1,024)", nil, nil,
			func(dek pme.DEK) ([]byte, error) {
				o, err := fromRecord(wideRow(1024))
				if err != nil {
					return nil, err
				}
				return o.SealPadded(dek)
			}},
	}
}

// The schema's paths and the footer's tree are bounded by the footer's size.
func footerCases() []Case {
	return []Case{
		{"schema-quadratic-paths", "the schema's field paths take at most 2 bytes per footer byte, plus 1 MiB", pme.ErrFormat, []reader.Requirement{reader.ReqFieldIDs},
			func(dek pme.DEK) ([]byte, error) {
				o, err := Base("flat", 10)
				if err != nil {
					return nil, err
				}
				const children = 16384
				items := []thrift.Value{
					element("schema", 1, 0, -1),
					element(strings.Repeat("g", 32<<10), children, 1, -1),
				}
				for i := range children {
					e := element("a", 0, 1, int32(i+1))
					e.Struct.Set(SEType, thrift.I32(1)) // INT32
					items = append(items, e)
				}
				o.Footer.Set(FMDSchema, thrift.ListOf(thrift.TypeStruct, items...))
				o.Footer.Set(FMDRowGroups, thrift.ListOf(thrift.TypeStruct))
				o.Footer.Set(FMDNumRows, thrift.I64(0))
				o.Chunks = nil
				o.dropKeyValue("ARROW:schema")
				return o.SealPadded(dek)
			}},
		{"schema-many-leaves", "a schema has at most 16,384 elements plus one per 96 footer bytes", pme.ErrFormat, []reader.Requirement{reader.ReqFieldIDs},
			manyLeaves(100000)},
		{"schema-leaves-at-limit", "a schema of as many elements as a footer may have opens within a small multiple of it; a scan of all its columns (more than 4,096) does not fit the default memory limit", reader.ErrMemoryLimit, nil,
			manyLeaves(18000)},
		{"footer-many-key-values", "a footer has at most 16,384 key-value entries plus one per 128 bytes", pme.ErrFormat, []reader.Requirement{reader.ReqPadEntry},
			func(dek pme.DEK) ([]byte, error) {
				o, err := Base("flat", 10)
				if err != nil {
					return nil, err
				}
				v := o.Footer.Field(FMDKeyValue)
				for i := range 300000 {
					v.List.Items = append(v.List.Items, thrift.StructValue(thrift.NewStruct(
						thrift.Field{ID: KVKey, Value: thrift.Binary([]byte{byte('a' + i%26)})})))
				}
				return o.SealPadded(dek)
			}},
		{"footer-empty-structs", "a footer holds at most one value per two bytes, beyond the first 64 Ki values", pme.ErrFormat, []reader.Requirement{reader.ReqModules},
			func(dek pme.DEK) ([]byte, error) {
				o, err := Base("flat", 10)
				if err != nil {
					return nil, err
				}
				o.Footer.Set(100, emptyStructs(1<<20))
				return o.SealPadded(dek)
			}},
	}
}

// The decompressors take sizes from the compressed bytes, which the producer
// writes: those bytes must bound what they decode to by the page's
// uncompressed_page_size before arrow-go decodes them.
func codecCases() []Case {
	return []Case{
		{"page-zstd-content-size", "a zstd page's frames state at most its uncompressed size (here 60 GiB in 20 bytes, which klauspost/compress allocates)", reader.ErrFormat, nil,
			codecPage(writer.Zstd, func(body []byte) []byte {
				b := binary.LittleEndian.AppendUint32(nil, 0xFD2FB528)
				b = append(b, 0xC0, 0x50) // an 8-byte content size, a 1 MiB window
				b = binary.LittleEndian.AppendUint64(b, 60<<30)
				h := uint32(3<<3 | 1) // one raw block of 3 bytes, the last
				return append(b, byte(h), byte(h>>8), byte(h>>16), 'a', 'b', 'c')
			})},
		{"page-zstd-no-content-size", "a zstd frame without a content size has blocks that decode to at most the page's size (here 4 GiB of RLE blocks in 128 KiB)", reader.ErrFormat, nil,
			codecPage(writer.Zstd, func(body []byte) []byte {
				b := binary.LittleEndian.AppendUint32(nil, 0xFD2FB528)
				b = append(b, 0x00, 0x50) // no content size, a 1 MiB window
				const blocks = 32 << 10
				for i := range blocks {
					h := uint32((128<<10)-1)<<3 | 1<<1 // RLE
					if i == blocks-1 {
						h |= 1
					}
					b = append(b, byte(h), byte(h>>8), byte(h>>16), 'x')
				}
				return b
			})},
		{"page-snappy-length", "a snappy page's decoded length is its uncompressed size (here 4 GiB, which the decoder allocates)", reader.ErrFormat, nil,
			codecPage(writer.Snappy, func(body []byte) []byte {
				_, k := binary.Uvarint(body)
				return append([]byte{0xff, 0xff, 0xff, 0xff, 0x0f}, body[k:]...)
			})},
		{"footer-values-at-limit", "a footer of one value per two bytes (empty structs and padding, in fields no reader knows) costs a small multiple of its size", nil, nil,
			func(dek pme.DEK) ([]byte, error) {
				o, err := Base("flat", 10)
				if err != nil {
					return nil, err
				}
				o.Footer.Set(100, emptyStructs(1<<19))
				o.Footer.Set(101, thrift.Binary(make([]byte, 1<<19)))
				return o.SealPadded(dek)
			}},
	}
}
