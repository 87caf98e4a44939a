package formats

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Arrow IPC input from pyarrow (26 and later) and Polars uses the view
// types (string_view, binary_view, list_view, large_list_view), which
// arrow-go cannot write to Parquet ("not implemented: support for
// STRING_VIEW"). Import reads them in the forms Parquet holds, with the
// same values: a string view as a string, a binary view as a binary, a
// list view as a list (a large one as a large list), nested ones too.

// unviewType returns dt with every view type replaced by its Parquet-
// writable form, and whether it had any.
func unviewType(dt arrow.DataType) (arrow.DataType, bool) {
	switch t := dt.(type) {
	case *arrow.StringViewType:
		return arrow.BinaryTypes.String, true
	case *arrow.BinaryViewType:
		return arrow.BinaryTypes.Binary, true
	case *arrow.ListViewType:
		e, _ := unviewField(t.ElemField())
		return arrow.ListOfField(e), true
	case *arrow.LargeListViewType:
		e, _ := unviewField(t.ElemField())
		return arrow.LargeListOfField(e), true
	case *arrow.MapType:
		k, kc := unviewField(t.KeyField())
		v, vc := unviewField(t.ItemField())
		if !kc && !vc {
			return dt, false
		}
		m := arrow.MapOfFields(k, v)
		m.KeysSorted = t.KeysSorted
		return m, true
	case *arrow.ListType:
		e, c := unviewField(t.ElemField())
		return arrow.ListOfField(e), c
	case *arrow.LargeListType:
		e, c := unviewField(t.ElemField())
		return arrow.LargeListOfField(e), c
	case *arrow.FixedSizeListType:
		e, c := unviewField(t.ElemField())
		return arrow.FixedSizeListOfField(t.Len(), e), c
	case *arrow.StructType:
		fs := make([]arrow.Field, t.NumFields())
		any := false
		for i, f := range t.Fields() {
			var c bool
			fs[i], c = unviewField(f)
			any = any || c
		}
		if !any {
			return dt, false
		}
		return arrow.StructOf(fs...), true
	case *arrow.DictionaryType:
		v, c := unviewType(t.ValueType)
		return &arrow.DictionaryType{IndexType: t.IndexType, ValueType: v, Ordered: t.Ordered}, c
	}
	return dt, false
}

func unviewField(f arrow.Field) (arrow.Field, bool) {
	var c bool
	f.Type, c = unviewType(f.Type)
	return f, c
}

// unviewSchema returns schema without view types, or nil if it has none.
func unviewSchema(schema *arrow.Schema) *arrow.Schema {
	fs := make([]arrow.Field, schema.NumFields())
	any := false
	for i, f := range schema.Fields() {
		var c bool
		fs[i], c = unviewField(f)
		any = any || c
	}
	if !any {
		return nil
	}
	md := schema.Metadata()
	return arrow.NewSchema(fs, &md)
}

// unview returns arr (of a type unviewType changes) in the type t that
// unviewType returned for it. Views are copied into the new layouts;
// other arrays keep their buffers.
func unview(mem memory.Allocator, t arrow.DataType, arr arrow.Array) (arrow.Array, error) {
	if arrow.TypeEqual(t, arr.DataType()) {
		arr.Retain()
		return arr, nil
	}
	switch a := arr.(type) {
	case *array.StringView:
		b := array.NewStringBuilder(mem)
		defer b.Release()
		b.Reserve(a.Len())
		for i := range a.Len() {
			if a.IsNull(i) {
				b.AppendNull()
			} else {
				b.Append(a.Value(i))
			}
		}
		return b.NewArray(), nil
	case *array.BinaryView:
		b := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
		defer b.Release()
		b.Reserve(a.Len())
		for i := range a.Len() {
			if a.IsNull(i) {
				b.AppendNull()
			} else {
				b.Append(a.Value(i))
			}
		}
		return b.NewArray(), nil
	case array.VarLenListLike:
		// A list view's lists may lie anywhere in its values, in any
		// order: each is copied, in order, into the values of a list.
		if a.DataType().ID() != arrow.LIST_VIEW && a.DataType().ID() != arrow.LARGE_LIST_VIEW {
			break
		}
		elem := t.(arrow.ListLikeType).Elem()
		values, err := unview(mem, elem, a.ListValues())
		if err != nil {
			return nil, err
		}
		defer values.Release()
		parts := make([]arrow.Array, 0, a.Len())
		defer func() {
			for _, p := range parts {
				p.Release()
			}
		}()
		offsets := make([]int64, a.Len()+1)
		for i := range a.Len() {
			start, end := a.ValueOffsets(i)
			if !a.IsNull(i) && end > start {
				if start < 0 || end > int64(values.Len()) {
					return nil, fmt.Errorf("%w: a list view's list [%d, %d) beyond its %d values", ErrFormat, start, end, values.Len())
				}
				parts = append(parts, array.NewSlice(values, start, end))
				offsets[i+1] = offsets[i] + end - start
			} else {
				offsets[i+1] = offsets[i]
			}
		}
		var child arrow.Array
		if len(parts) == 0 {
			child = array.MakeArrayOfNull(mem, elem, 0)
		} else {
			var err error
			if child, err = array.Concatenate(parts, mem); err != nil {
				return nil, err
			}
		}
		defer child.Release()
		var offBuf *memory.Buffer
		if t.ID() == arrow.LARGE_LIST {
			offBuf = memory.NewBufferBytes(arrow.Int64Traits.CastToBytes(offsets))
		} else {
			o32 := make([]int32, len(offsets))
			for i, o := range offsets {
				if o > 1<<31-1 {
					return nil, fmt.Errorf("%w: a list view of more than 2^31 values", ErrFormat)
				}
				o32[i] = int32(o)
			}
			offBuf = memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(o32))
		}
		data := array.NewData(t, a.Len(), []*memory.Buffer{validity(a), offBuf}, []arrow.ArrayData{child.Data()}, a.NullN(), 0)
		defer data.Release()
		return array.MakeFromData(data), nil
	case *array.Dictionary:
		d, err := unview(mem, t.(*arrow.DictionaryType).ValueType, a.Dictionary())
		if err != nil {
			return nil, err
		}
		defer d.Release()
		return array.NewDictionaryArray(t, a.Indices(), d), nil
	}
	// A struct, list or map whose children have views: the same buffers,
	// children unviewed.
	data := arr.Data()
	var kids []arrow.ArrayData
	defer func() {
		for _, k := range kids {
			k.Release()
		}
	}()
	childType := func(i int) arrow.DataType {
		switch ct := t.(type) {
		case *arrow.StructType:
			return ct.Field(i).Type
		case arrow.ListLikeType:
			return ct.ElemField().Type
		}
		return nil
	}
	for i, c := range data.Children() {
		ct := childType(i)
		if ct == nil {
			return nil, fmt.Errorf("%w: cannot convert %s to %s", ErrFormat, arr.DataType(), t)
		}
		ca := array.MakeFromData(c)
		u, err := unview(mem, ct, ca)
		ca.Release()
		if err != nil {
			return nil, err
		}
		kids = append(kids, u.Data())
		u.Data().Retain()
		u.Release()
	}
	out := array.NewData(t, data.Len(), data.Buffers(), kids, data.NullN(), data.Offset())
	defer out.Release()
	return array.MakeFromData(out), nil
}

// validity returns a's validity bitmap, rebased to offset 0.
func validity(a arrow.Array) *memory.Buffer {
	if a.NullN() == 0 {
		return nil
	}
	bits := make([]byte, (a.Len()+7)/8)
	for i := range a.Len() {
		if a.IsValid(i) {
			bits[i/8] |= 1 << (i % 8)
		}
	}
	return memory.NewBufferBytes(bits)
}

// unviewReader reads the batches of an Arrow IPC input without view
// types.
type unviewReader struct {
	array.RecordReader
	name   string
	schema *arrow.Schema
	mem    memory.Allocator
	cur    arrow.RecordBatch
	err    error
}

// unviewed returns rr, or a reader of its batches without view types.
func unviewed(rr array.RecordReader, mem memory.Allocator, name string) array.RecordReader {
	s := unviewSchema(rr.Schema())
	if s == nil {
		return rr
	}
	return &unviewReader{RecordReader: rr, name: name, schema: s, mem: mem}
}

func (u *unviewReader) Schema() *arrow.Schema { return u.schema }

func (u *unviewReader) Next() (ok bool) {
	defer func() {
		if p := recover(); p != nil {
			u.err, ok = fmt.Errorf("%w: %s: a view that does not convert: %v", ErrFormat, u.name, p), false
		}
	}()
	if u.cur != nil {
		u.cur.Release()
		u.cur = nil
	}
	if u.err != nil || !u.RecordReader.Next() {
		return false
	}
	rec := u.RecordReader.RecordBatch()
	cols := make([]arrow.Array, 0, rec.NumCols())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for i := range int(rec.NumCols()) {
		c, err := unview(u.mem, u.schema.Field(i).Type, rec.Column(i))
		if err != nil {
			u.err = fmt.Errorf("%s: column %s: %w", u.name, u.schema.Field(i).Name, err)
			return false
		}
		cols = append(cols, c)
	}
	u.cur = array.NewRecordBatch(u.schema, cols, rec.NumRows())
	return true
}

func (u *unviewReader) RecordBatch() arrow.RecordBatch { return u.cur }

// Record returns the current batch.
//
// Deprecated: use RecordBatch.
func (u *unviewReader) Record() arrow.RecordBatch { return u.cur }

func (u *unviewReader) Err() error {
	if u.err != nil {
		return u.err
	}
	return u.RecordReader.Err()
}

func (u *unviewReader) Release() {
	if u.cur != nil {
		u.cur.Release()
		u.cur = nil
	}
	u.RecordReader.Release()
}
