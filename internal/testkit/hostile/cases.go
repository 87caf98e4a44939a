package hostile

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/sovm/sop-pme/internal/thrift"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/writer"
)

// A Case is one hostile object: Build makes it, sealed under dek (the
// object verifies against its storage_id once imported, and every module
// opens under dek). Rule is the rule it breaks. Want is the error that
// reader.Open, or a full Scan drained to its end, must return (errors.Is
// matches it), or nil if the object must read: its hostile part is one the
// reader ignores or bounds. Check lists the requirements reader.Check
// reports the object fails besides reader.ReqRows, which it fails exactly
// when Want is not nil (the reader refuses the object, and Check agrees).
//
// Whatever the case, reader.Open, Scan and reader.Check return, without a
// panic and within the memory bound the reader documents.
type Case struct {
	Name  string
	Rule  string
	Want  error
	Check []reader.Requirement
	Build func(dek pme.DEK) ([]byte, error)
}

// Cases returns the hostile cases, each built from a small object the
// writer makes, so that they are reproducible (their bytes differ from run
// to run only by nonces, DEKs and key_refs).
func Cases() []Case {
	return append([]Case{
		// The Arrow schema the writer stores in the footer (ARROW:schema)
		// is untrusted: the reader derives the Arrow schema from the
		// Parquet schema, decodes the entry within bounds (never with
		// arrow-go's IPC reader), and takes from it only refinements
		// consistent with the Parquet types; a malformed or inconsistent
		// entry is ignored.
		{"arrow-schema-body-length", "ARROW:schema is decoded within bounds: its IPC message's bodyLength (here ~32 GiB) is never allocated", nil, nil,
			arrowSchema(func(msg []byte) []byte {
				// Grow the Message vtable by one entry: bodyLength now
				// reads 8 bytes of the table, 0x0000000800080004.
				binary.LittleEndian.PutUint16(msg[8+6:], 12)
				return msg
			})},
		{"arrow-schema-metadata-length", "a malformed ARROW:schema is ignored: its IPC metadata length prefix (here 2 GiB) is never allocated", nil, nil,
			arrowSchema(func(msg []byte) []byte {
				binary.LittleEndian.PutUint32(msg[4:], 0x7ffffff8)
				return msg
			})},
		{"arrow-schema-field-count", "a malformed ARROW:schema is ignored: its flatbuffer vector lengths are never trusted", nil, nil,
			arrowSchema(func(msg []byte) []byte {
				// The Schema's fields vector: 3 fields, then their offsets.
				i := bytes.Index(msg, []byte{3, 0, 0, 0, 0xf4, 0, 0, 0})
				if i < 0 {
					return nil
				}
				binary.LittleEndian.PutUint32(msg[i:], 0x7fffffff)
				return msg
			})},
		{"arrow-schema-garbage", "a malformed ARROW:schema is ignored: an entry that is not an IPC message does not stop the read", nil, nil,
			arrowSchema(func([]byte) []byte { return []byte("not an IPC message") })},
		{"arrow-schema-lies", "ARROW:schema refines only consistently: types that contradict the Parquet schema, and a dictionary whose 8-bit indices would overflow, do not retype the columns", nil, nil,
			func(dek pme.DEK) ([]byte, error) {
				o, err := Base("flat", 200)
				if err != nil {
					return nil, err
				}
				lie := arrow.NewSchema([]arrow.Field{
					{Name: "a", Type: arrow.BinaryTypes.LargeString, Metadata: fid(1)},
					{Name: "s", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}, Nullable: true, Metadata: fid(2)},
					{Name: "x", Type: &arrow.TimestampType{Unit: arrow.Second, TimeZone: "Mars/Olympus"}, Metadata: fid(3)},
				}, nil)
				o.SetKeyValue("ARROW:schema", []byte(base64.StdEncoding.EncodeToString(flight.SerializeSchema(lie, memory.DefaultAllocator))))
				return o.SealPadded(dek)
			}},

		// Page headers are validated in the reader's plaintext view before
		// arrow-go sees them.
		{"page-rows-disagree", "the data pages of a column chunk hold RowGroup.num_rows rows", reader.ErrFormat, nil,
			onePage(func(o *Object) error {
				// Column x (required) claims one value less.
				p := &o.Chunks[0][2].Pages[0]
				n, _ := p.Sub().I32(NumValues)
				p.Sub().Set(NumValues, thrift.I32(n-1))
				o.ColumnMeta(0, 2).Set(CMDNumValues, thrift.I64(int64(n-1)))
				return nil
			})},
		{"page-no-data-page-header", "a DATA_PAGE header carries data_page_header", reader.ErrFormat, nil,
			onePage(func(o *Object) error {
				o.Chunks[0][0].Pages[0].Header.Delete(PHDataPage)
				return nil
			})},
		{"page-no-dictionary-page-header", "a DICTIONARY_PAGE header carries dictionary_page_header", reader.ErrFormat, nil,
			dictPage(func(o *Object, c *Chunk) error {
				c.Pages[c.DictPage].Header.Delete(PHDictPage)
				return nil
			})},
		{"page-compressed-size", "compressed_page_size is the length of the page's body module plaintext", reader.ErrFormat, nil,
			onePage(func(o *Object) error {
				p := &o.Chunks[0][0].Pages[0]
				n, _ := p.Header.I32(PHCompressedSize)
				p.Header.Set(PHCompressedSize, thrift.I32(n+1))
				return nil
			})},
		{"page-uncompressed-size", "an UNCOMPRESSED page's uncompressed_page_size equals its compressed_page_size", reader.ErrFormat, nil,
			onePage(func(o *Object) error {
				o.Chunks[0][0].Pages[0].Header.Set(PHUncompressedSize, thrift.I32(pme.MaxPageSize))
				return nil
			})},
		{"page-size-negative", "page sizes are not negative", reader.ErrFormat, nil,
			onePage(func(o *Object) error {
				o.Chunks[0][1].Pages[0].Header.Set(PHUncompressedSize, thrift.I32(-5))
				return nil
			})},
		{"page-num-values-negative", "num_values is not negative", reader.ErrFormat, nil,
			onePage(func(o *Object) error {
				o.Chunks[0][1].Pages[0].Sub().Set(NumValues, thrift.I32(-1))
				return nil
			})},
		{"page-type-index", "a column chunk holds dictionary and data pages only", reader.ErrFormat, nil,
			onePage(func(o *Object) error {
				h := o.Chunks[0][0].Pages[0].Header
				h.Set(PHType, thrift.I32(PageIndex))
				return nil
			})},
		{"page-type-unknown", "PageHeader.type is a known page type", reader.ErrFormat, nil,
			onePage(func(o *Object) error {
				o.Chunks[0][0].Pages[0].Header.Set(PHType, thrift.I32(9))
				return nil
			})},
		{"page-header-garbage", "a page header module holds one PageHeader", reader.ErrFormat, nil,
			onePage(func(o *Object) error {
				o.Chunks[0][0].Pages[0].RawHeader = []byte("\x15\x00\x15\xff\xff\xff\xff\x0fgarbage")
				return nil
			})},
		{"page-header-trailing", "a page header module holds one PageHeader and nothing after it", reader.ErrFormat, nil,
			onePage(func(o *Object) error {
				p := &o.Chunks[0][0].Pages[0]
				p.RawHeader = append(p.Header.Append(nil), 0, 0, 0)
				return nil
			})},
		{"page-dictionary-twice", "a column chunk has at most one dictionary page, its first", reader.ErrFormat, nil,
			dictPage(func(o *Object, c *Chunk) error {
				c.Pages = append(c.Pages, c.Pages[c.DictPage])
				return nil
			})},
		{"chunk-half-page", "a column chunk is whole pages: a header module, then its body module", reader.ErrFormat, nil,
			onePage(func(o *Object) error {
				c := o.Chunks[0][0]
				c.Pages = append(c.Pages, Page{RawHeader: c.Pages[0].Header.Append(nil), NoBody: true})
				return nil
			})},

		{"page-nested-values-disagree", "a list column's levels give every row group's row count (only decoding them tells)", reader.ErrDecode, nil,
			func(dek pme.DEK) ([]byte, error) {
				// 198 rows: the last list has one element; dropping it
				// leaves the list column a row short of the others.
				o, err := Base("nested", 198, writer.WithDictionary(false), writer.WithCodec(writer.Uncompressed))
				if err != nil {
					return nil, err
				}
				c := o.Chunks[0][2] // l.list.element
				if len(c.Pages) != 1 {
					return nil, fmt.Errorf("hostile: list chunk of %d pages", len(c.Pages))
				}
				n, _ := c.Pages[0].Sub().I32(NumValues)
				c.Pages[0].Sub().Set(NumValues, thrift.I32(n-1))
				o.ColumnMeta(0, 2).Set(CMDNumValues, thrift.I64(int64(n-1)))
				return o.SealPadded(dek)
			}},
		{"row-group-columns-missing", "every row group has a column chunk for every leaf column", reader.ErrFormat, nil,
			onePage(func(o *Object) error {
				rgs, _ := o.RowGroups()
				cols, _ := rgs[0].List(RGColumns)
				cols.Items = cols.Items[:2]
				o.Chunks[0] = o.Chunks[0][:2]
				return nil
			})},
		{"row-group-rows-negative", "RowGroup.num_rows is not negative", reader.ErrFormat, nil,
			onePage(func(o *Object) error {
				rgs, _ := o.RowGroups()
				rgs[0].Set(RGNumRows, thrift.I64(-1))
				return nil
			})},

		// What a batch decodes to is bounded by the scan's memory limit,
		// whatever the pages say: these objects are well formed.
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

		// The schema's paths and the footer's tree are bounded by the
		// footer's size.
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
		// The decompressors take sizes from the compressed bytes, which the
		// producer writes: those bytes must bound what they decode to by
		// the page's uncompressed_page_size before arrow-go decodes them.
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
	}, append(append(valueCases(), rowsCases()...), idCases()...)...)
}

// manyLeaves returns a Build of a flat object whose schema is n INT32
// columns and which has no row group.
func manyLeaves(n int) func(pme.DEK) ([]byte, error) {
	return func(dek pme.DEK) ([]byte, error) {
		o, err := Base("flat", 10)
		if err != nil {
			return nil, err
		}
		items := []thrift.Value{element("schema", n, -1, -1)}
		for i := range n {
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
	}
}

// fromRecord writes rec with the writer and opens the object.
func fromRecord(rec arrow.RecordBatch, opts ...writer.Option) (*Object, error) {
	defer rec.Release()
	obj, dek, err := Write(rec, opts...)
	if err != nil {
		return nil, err
	}
	return Open(obj, dek)
}

// constantRows returns n rows of a (int64, field ID 1), s (string, 2) and
// x (float64, 3), each column one value throughout.
func constantRows(n int) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64, Metadata: fid(1)},
		{Name: "s", Type: arrow.BinaryTypes.String, Metadata: fid(2)},
		{Name: "x", Type: arrow.PrimitiveTypes.Float64, Metadata: fid(3)},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for range n {
		b.Field(0).(*array.Int64Builder).Append(7)
		b.Field(1).(*array.StringBuilder).Append("s")
		b.Field(2).(*array.Float64Builder).Append(0.5)
	}
	return b.NewRecordBatch()
}

// nullFixed returns n rows of a (int32, field ID 1) and f
// (fixed_size_binary(16), 2, always null).
func nullFixed(n int) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int32, Metadata: fid(1)},
		{Name: "f", Type: &arrow.FixedSizeBinaryType{ByteWidth: 16}, Nullable: true, Metadata: fid(2)},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.Int32Builder).Append(int32(i))
		b.Field(1).AppendNull()
	}
	return b.NewRecordBatch()
}

// oneList returns one row of l (list<int64>, field ID 1; element 2) holding
// three null elements.
func oneList() arrow.RecordBatch {
	elem := arrow.Field{Name: "element", Type: arrow.PrimitiveTypes.Int64, Nullable: true, Metadata: fid(2)}
	schema := arrow.NewSchema([]arrow.Field{{Name: "l", Type: arrow.ListOfField(elem), Nullable: true, Metadata: fid(1)}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	lb := b.Field(0).(*array.ListBuilder)
	lb.Append(true)
	for range 3 {
		lb.ValueBuilder().AppendNull()
	}
	return b.NewRecordBatch()
}

// wideRow returns one row of n int32 columns, field IDs 1 to n.
func wideRow(n int) arrow.RecordBatch {
	fields := make([]arrow.Field, n)
	for i := range fields {
		fields[i] = arrow.Field{Name: fmt.Sprintf("c%d", i), Type: arrow.PrimitiveTypes.Int32, Metadata: fid(i + 1)}
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema(fields, nil))
	defer b.Release()
	for i := range n {
		b.Field(i).(*array.Int32Builder).Append(int32(i))
	}
	return b.NewRecordBatch()
}

// emptyStructs returns a list of n empty structs: one byte each.
func emptyStructs(n int) thrift.Value {
	items := make([]thrift.Value, n)
	for i := range items {
		items[i] = thrift.StructValue(thrift.NewStruct())
	}
	return thrift.ListOf(thrift.TypeStruct, items...)
}

func element(name string, children int, repetition int32, id int32) thrift.Value {
	s := thrift.NewStruct()
	s.Set(SEName, thrift.Binary([]byte(name)))
	if repetition >= 0 {
		s.Set(SERepetition, thrift.I32(repetition))
	}
	if children > 0 {
		s.Set(SENumChild, thrift.I32(int32(children)))
	}
	if id >= 0 {
		s.Set(SEFieldID, thrift.I32(id))
	}
	return thrift.StructValue(s)
}

func (o *Object) dropKeyValue(key string) {
	v := o.Footer.Field(FMDKeyValue)
	if v == nil || v.List == nil {
		return
	}
	items := v.List.Items[:0]
	for _, it := range v.List.Items {
		if k, _ := it.Struct.Binary(KVKey); string(k) != key {
			items = append(items, it)
		}
	}
	v.List.Items = items
}

// arrowSchema returns a Build that replaces the footer's ARROW:schema entry
// of a flat object by edit of its decoded IPC message.
func arrowSchema(edit func(msg []byte) []byte) func(pme.DEK) ([]byte, error) {
	return func(dek pme.DEK) ([]byte, error) {
		o, err := Base("flat", 200)
		if err != nil {
			return nil, err
		}
		v, ok := o.KeyValue("ARROW:schema")
		if !ok {
			return nil, errors.New("hostile: no ARROW:schema entry")
		}
		msg, err := base64.StdEncoding.DecodeString(string(v))
		if err != nil {
			return nil, err
		}
		if msg = edit(msg); msg == nil {
			return nil, errors.New("hostile: ARROW:schema has an unexpected layout")
		}
		o.SetKeyValue("ARROW:schema", []byte(base64.StdEncoding.EncodeToString(msg)))
		return o.SealPadded(dek)
	}
}

// onePage returns a Build that edits a flat object of one row group whose
// column chunks are one uncompressed PLAIN data page each.
func onePage(edit func(o *Object) error) func(pme.DEK) ([]byte, error) {
	return func(dek pme.DEK) ([]byte, error) {
		o, err := Base("flat", 200, writer.WithDictionary(false), writer.WithCodec(writer.Uncompressed))
		if err != nil {
			return nil, err
		}
		for _, c := range o.Chunks[0] {
			if len(c.Pages) != 1 {
				return nil, fmt.Errorf("hostile: base chunk of %d pages", len(c.Pages))
			}
		}
		if err := edit(o); err != nil {
			return nil, err
		}
		return o.SealPadded(dek)
	}
}

// codecPage returns a Build that replaces the body of the first page of a
// flat object's first column, compressed with codec, by edit's result,
// keeping its uncompressed_page_size.
func codecPage(codec writer.Codec, edit func(body []byte) []byte) func(pme.DEK) ([]byte, error) {
	return func(dek pme.DEK) ([]byte, error) {
		o, err := Base("flat", 200, writer.WithDictionary(false), writer.WithCodec(codec))
		if err != nil {
			return nil, err
		}
		p := &o.Chunks[0][0].Pages[0]
		if p.Type() != PageData {
			return nil, errors.New("hostile: the base column's first page is not a data page")
		}
		p.SetBody(edit(p.Body), -1)
		return o.SealPadded(dek)
	}
}

// dictPage returns a Build that edits the dictionary-encoded string column
// of a flat object.
func dictPage(edit func(o *Object, c *Chunk) error) func(pme.DEK) ([]byte, error) {
	return func(dek pme.DEK) ([]byte, error) {
		o, err := Base("flat", 200, writer.WithCodec(writer.Uncompressed))
		if err != nil {
			return nil, err
		}
		c := o.Chunks[0][1]
		if c.DictPage != 0 {
			return nil, errors.New("hostile: base string column has no dictionary page")
		}
		if err := edit(o, c); err != nil {
			return nil, err
		}
		return o.SealPadded(dek)
	}
}
