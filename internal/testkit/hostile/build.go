package hostile

import (
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/sovm/sop-pme/internal/thrift"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/writer"
)

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
