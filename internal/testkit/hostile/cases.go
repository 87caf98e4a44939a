package hostile

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
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
	return slices.Concat(arrowSchemaCases(), pageHeaderCases(), batchCases(), footerCases(), codecCases(),
		valueCases(), rowsCases(), idCases())
}

// The Arrow schema the writer stores in the footer (ARROW:schema) is
// untrusted: the reader derives the Arrow schema from the Parquet schema,
// decodes the entry within bounds (never with arrow-go's IPC reader), and
// takes from it only refinements consistent with the Parquet types; a
// malformed or inconsistent entry is ignored.
func arrowSchemaCases() []Case {
	return []Case{
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
	}
}

// Page headers are validated in the reader's plaintext view before arrow-go
// sees them.
func pageHeaderCases() []Case {
	return []Case{
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
	}
}
