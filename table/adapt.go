package table

import (
	"fmt"
	"reflect"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// An Adapter reads the records of one object at a table's schema. Columns
// are matched by field ID at every depth (SOP-PME-1 Section 11.2): a struct
// child by child, a list by its element, a map by its key and value. A column
// the object lacks reads as nulls of the table's type; a renamed one takes the
// table's name; a promoted one (int8, int16 and int32 to a wider signed
// integer, an unsigned integer to a wider one, float32 to float64, a decimal
// to one of greater or equal precision and the same scale, whatever its
// width) is widened; an identical one is reused without a copy. A column the
// table declares not nullable cannot be missing. Any other difference is a
// *ColumnError matching ErrSchema: a narrowing, another type, a list whose
// element has another field ID, and the dictionary arrays of
// reader.WithDictionaries unless the table's type is that dictionary type.
//
// An Adapter is safe for concurrent use.
type Adapter struct {
	target, source *arrow.Schema
	mem            memory.Allocator
	// cols[i] is the source's top-level field for the target's field i, or
	// -1 if the source lacks it.
	cols   []int
	fields []int32
}

// NewAdapter returns an Adapter from source, one object's schema as
// reader.Reader.Schema returns it, to target, the table's schema. Both must
// carry field IDs at every depth (Section 11.2). A column the source holds at
// a type the target's cannot be read as is a *ColumnError matching ErrSchema.
// Only WithAllocator, for the arrays the Adapter makes, applies among opts.
func NewAdapter(target, source *arrow.Schema, opts ...Option) (*Adapter, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if target == nil || source == nil {
		return nil, fmt.Errorf("%w: nil schema", ErrSchema)
	}
	a := &Adapter{target: target, source: source, mem: cfg.mem, cols: make([]int, target.NumFields())}
	byID := map[int32]int{}
	for j, f := range source.Fields() {
		id, ok := FieldID(f)
		if !ok {
			return nil, &ColumnError{Column: f.Name, Err: fmt.Errorf("%w: the object's column has no field ID", ErrSchema)}
		}
		byID[id] = j
	}
	seen := map[int32]bool{}
	for i, f := range target.Fields() {
		id, ok := FieldID(f)
		if !ok {
			return nil, &ColumnError{Column: f.Name, Err: fmt.Errorf("%w: the table's column has no field ID", ErrSchema)}
		}
		if seen[id] {
			return nil, &ColumnError{Column: f.Name, Err: fmt.Errorf("%w: the table has two columns with field ID %d", ErrSchema, id)}
		}
		seen[id] = true
		j, ok := byID[id]
		if !ok {
			if !f.Nullable {
				return nil, missingRequired(f.Name)
			}
			a.cols[i] = -1
			continue
		}
		if err := compatible(f.Name, f.Type, source.Field(j)); err != nil {
			return nil, err
		}
		a.cols[i] = j
		a.fields = append(a.fields, id)
	}
	if len(a.fields) == 0 && source.NumFields() > 0 {
		// The object holds none of the columns wanted, but its rows still
		// count: the count comes from a column materialised, never from
		// the footer (Section 11.10). Read the narrowest one.
		j := cheapest(source)
		id, _ := FieldID(source.Field(j))
		a.fields = []int32{id}
	}
	return a, nil
}

// Schema returns the schema of the records Adapt returns: the target.
func (a *Adapter) Schema() *arrow.Schema { return a.target }

// Fields returns the top-level field IDs to project the object's scan to
// (reader.WithFields): the columns of the source the target needs or, if it
// needs none, one column of the source, the narrowest, whose rows the records
// count (Section 11.10: never the footer's row count).
func (a *Adapter) Fields() []int32 { return a.fields }

// cheapest returns the index of a top-level field of s that is cheapest to
// decode: a fixed-width one of the fewest bits, else the first.
func cheapest(s *arrow.Schema) int {
	best, bits := 0, int(^uint(0)>>1)
	for j, f := range s.Fields() {
		if fw, ok := f.Type.(arrow.FixedWidthDataType); ok && fw.BitWidth() < bits {
			best, bits = j, fw.BitWidth()
		}
	}
	return best
}

// Adapt returns rec, a record of the source's columns (all of them, or those
// of a scan projected to Fields, in the source's order), as a record of
// the target's schema. The caller releases it; rec is not released. Arrays
// whose types are identical are shared with rec, not copied.
func (a *Adapter) Adapt(rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	n := int(rec.NumRows())
	// The record's columns by the source's top-level index.
	at := make(map[int]int, rec.NumCols())
	for k, f := range rec.Schema().Fields() {
		j := -1
		if id, ok := FieldID(f); ok {
			if js := a.source.FieldIndices(f.Name); len(js) > 0 {
				for _, c := range js {
					if cid, _ := FieldID(a.source.Field(c)); cid == id {
						j = c
					}
				}
			}
			if j < 0 {
				for c, sf := range a.source.Fields() {
					if cid, _ := FieldID(sf); cid == id {
						j = c
						break
					}
				}
			}
		} else if js := a.source.FieldIndices(f.Name); len(js) == 1 {
			j = js[0]
		}
		if j >= 0 {
			at[j] = k
		}
	}
	cols := make([]arrow.Array, len(a.cols))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i, tf := range a.target.Fields() {
		j := a.cols[i]
		if j < 0 {
			cols[i] = array.MakeArrayOfNull(a.mem, tf.Type, n)
			continue
		}
		k, ok := at[j]
		if !ok {
			return nil, &ColumnError{Column: tf.Name, Err: fmt.Errorf("%w: the record lacks the object's column %q", ErrSchema, a.source.Field(j).Name)}
		}
		d, err := a.adapt(tf.Name, tf.Type, a.source.Field(j), rec.Column(k).Data())
		if err != nil {
			return nil, err
		}
		cols[i] = array.MakeFromData(d)
		d.Release()
	}
	return array.NewRecordBatch(a.target, cols, int64(n)), nil
}

// missingRequired reports a column the table declares not nullable and an
// object lacks: it cannot read as nulls. (Iceberg adds only optional
// columns.)
func missingRequired(path string) error {
	return &ColumnError{Column: path, Err: fmt.Errorf("%w: the table's column is not nullable and the object lacks it", ErrSchema)}
}

func mismatch(path string, tt, st arrow.DataType) error {
	return &ColumnError{Column: path, Err: fmt.Errorf("%w: the object holds %s, the table %s", ErrSchema, st, tt)}
}

// compatible checks, on the schemas alone, that a column of type st (sf's)
// reads as tt: what adapt does on data, without data, so that NewAdapter
// fails before anything is read.
func compatible(path string, tt arrow.DataType, sf arrow.Field) error {
	st := sf.Type
	if arrow.TypeEqual(tt, st, arrow.CheckMetadata()) {
		return nil
	}
	switch t := tt.(type) {
	case *arrow.StructType:
		s, ok := st.(*arrow.StructType)
		if !ok {
			return mismatch(path, tt, st)
		}
		for _, c := range t.Fields() {
			id, ok := FieldID(c)
			if !ok {
				return &ColumnError{Column: path + "." + c.Name, Err: fmt.Errorf("%w: the table's field has no field ID", ErrSchema)}
			}
			if j := childByID(s.Fields(), id); j >= 0 {
				if err := compatible(path+"."+c.Name, c.Type, s.Field(j)); err != nil {
					return err
				}
			} else if !c.Nullable {
				return missingRequired(path + "." + c.Name)
			}
		}
		return nil
	case arrow.ListLikeType:
		s, ok := st.(arrow.ListLikeType)
		if !ok || reflect.TypeOf(tt) != reflect.TypeOf(st) {
			return mismatch(path, tt, st)
		}
		if err := sameElement(path, t, s); err != nil {
			return err
		}
		return compatible(path+"."+t.ElemField().Name, t.ElemField().Type, s.ElemField())
	}
	if leafWidens(tt, st) {
		return nil
	}
	return mismatch(path, tt, st)
}

// sameElement checks that two lists (or maps) have the same element: the
// same field ID, and for a map the same key ID, since a key cannot be
// missing.
func sameElement(path string, t, s arrow.ListLikeType) error {
	if f, ok := t.(*arrow.FixedSizeListType); ok && f.Len() != s.(*arrow.FixedSizeListType).Len() {
		return mismatch(path, t, s)
	}
	tid, tok := FieldID(t.ElemField())
	sid, sok := FieldID(s.ElemField())
	if tok != sok || tid != sid {
		return &ColumnError{Column: path, Err: fmt.Errorf("%w: the object's element has another field ID", ErrSchema)}
	}
	if tm, ok := t.(*arrow.MapType); ok {
		sm := s.(*arrow.MapType)
		tk, _ := FieldID(tm.KeyField())
		sk, ok := FieldID(sm.KeyField())
		if !ok || tk != sk {
			return &ColumnError{Column: path, Err: fmt.Errorf("%w: the object's map key has another field ID", ErrSchema)}
		}
	}
	return nil
}

func childByID(fs []arrow.Field, id int32) int {
	for j, f := range fs {
		if cid, ok := FieldID(f); ok && cid == id {
			return j
		}
	}
	return -1
}

// adapt returns d, data of the source field sf (whose type gives the field
// IDs of d's children), as data of type tt. The caller releases the result.
func (a *Adapter) adapt(path string, tt arrow.DataType, sf arrow.Field, d arrow.ArrayData) (arrow.ArrayData, error) {
	st := d.DataType()
	if arrow.TypeEqual(tt, st, arrow.CheckMetadata()) {
		d.Retain()
		return d, nil
	}
	switch t := tt.(type) {
	case *arrow.StructType:
		s, ok := st.(*arrow.StructType)
		if !ok {
			return nil, mismatch(path, tt, st)
		}
		ids := Children(sf.Type)
		if len(ids) != s.NumFields() {
			ids = s.Fields()
		}
		children := make([]arrow.ArrayData, t.NumFields())
		defer func() {
			for _, c := range children {
				if c != nil {
					c.Release()
				}
			}
		}()
		// The children keep the struct's offset: they are at least as
		// long as offset+length, and a child made here is that long.
		for i, c := range t.Fields() {
			id, ok := FieldID(c)
			if !ok {
				return nil, &ColumnError{Column: path + "." + c.Name, Err: fmt.Errorf("%w: the table's field has no field ID", ErrSchema)}
			}
			j := childByID(ids, id)
			if j < 0 && !c.Nullable {
				return nil, missingRequired(path + "." + c.Name)
			}
			if j < 0 {
				nulls := array.MakeArrayOfNull(a.mem, c.Type, d.Offset()+d.Len())
				children[i] = nulls.Data()
				children[i].Retain()
				nulls.Release()
				continue
			}
			var err error
			if children[i], err = a.adapt(path+"."+c.Name, c.Type, ids[j], d.Children()[j]); err != nil {
				return nil, err
			}
		}
		return array.NewData(tt, d.Len(), d.Buffers()[:1], children, d.NullN(), d.Offset()), nil
	case arrow.ListLikeType:
		s, ok := st.(arrow.ListLikeType)
		if !ok || reflect.TypeOf(tt) != reflect.TypeOf(st) {
			return nil, mismatch(path, tt, st)
		}
		// The element's field IDs are the source schema's: the record's
		// types need not carry them.
		sl := s
		if l, ok := sf.Type.(arrow.ListLikeType); ok && reflect.TypeOf(l) == reflect.TypeOf(st) {
			sl = l
		}
		if err := sameElement(path, t, sl); err != nil {
			return nil, err
		}
		se := sl.ElemField()
		te := t.ElemField()
		child, err := a.adapt(path+"."+te.Name, te.Type, se, d.Children()[0])
		if err != nil {
			return nil, err
		}
		defer child.Release()
		return array.NewData(tt, d.Len(), d.Buffers(), []arrow.ArrayData{child}, d.NullN(), d.Offset()), nil
	}
	if arrow.TypeEqual(tt, st) {
		d.Retain()
		return d, nil
	}
	return a.widen(path, tt, d)
}

// Integer ranks for promotion: an integer reads as a wider one of the same
// signedness, or an unsigned one as a wider signed one.
var intRank = map[arrow.Type]struct {
	bits   int
	signed bool
}{
	arrow.INT8: {8, true}, arrow.INT16: {16, true}, arrow.INT32: {32, true}, arrow.INT64: {64, true},
	arrow.UINT8: {8, false}, arrow.UINT16: {16, false}, arrow.UINT32: {32, false}, arrow.UINT64: {64, false},
}

// leafWidens reports whether a leaf of type st reads as tt: the promotions of
// Iceberg's schema evolution and their obvious kin.
func leafWidens(tt, st arrow.DataType) bool {
	if arrow.TypeEqual(tt, st) {
		return true
	}
	if ti, ok := intRank[tt.ID()]; ok {
		si, ok := intRank[st.ID()]
		return ok && ti.bits > si.bits && (ti.signed == si.signed || (ti.signed && !si.signed))
	}
	if tt.ID() == arrow.FLOAT64 {
		return st.ID() == arrow.FLOAT32 || st.ID() == arrow.FLOAT16
	}
	if tt.ID() == arrow.FLOAT32 {
		return st.ID() == arrow.FLOAT16
	}
	td, ok := tt.(arrow.DecimalType)
	if !ok {
		return false
	}
	sd, ok := st.(arrow.DecimalType)
	return ok && td.GetScale() == sd.GetScale() && td.GetPrecision() >= sd.GetPrecision() &&
		td.BitWidth() >= sd.BitWidth()
}

// widen converts leaf data d to the wider type tt (leafWidens).
func (a *Adapter) widen(path string, tt arrow.DataType, d arrow.ArrayData) (arrow.ArrayData, error) {
	st := d.DataType()
	if !leafWidens(tt, st) {
		return nil, mismatch(path, tt, st)
	}
	mem := a.mem
	if tw, sw := tt.(arrow.FixedWidthDataType).BitWidth(), st.(arrow.FixedWidthDataType).BitWidth(); tw == sw && arrow.IsDecimal(tt.ID()) {
		// A decimal of greater precision, the same width and scale: the
		// same integers.
		return array.NewData(tt, d.Len(), d.Buffers(), nil, d.NullN(), d.Offset()), nil
	}
	switch st.ID() {
	case arrow.INT8:
		return widenInt[int8](mem, tt, d), nil
	case arrow.INT16:
		return widenInt[int16](mem, tt, d), nil
	case arrow.INT32:
		return widenInt[int32](mem, tt, d), nil
	case arrow.UINT8:
		return widenInt[uint8](mem, tt, d), nil
	case arrow.UINT16:
		return widenInt[uint16](mem, tt, d), nil
	case arrow.UINT32:
		return widenInt[uint32](mem, tt, d), nil
	case arrow.FLOAT32:
		if tt.ID() == arrow.FLOAT64 {
			return convert(mem, tt, d, func(v float32) float64 { return float64(v) }), nil
		}
	case arrow.FLOAT16:
		// Rare enough to go through a generic array.
		return widenHalf(mem, tt, d), nil
	case arrow.DECIMAL32:
		return widenDecimal[int32](mem, tt, d), nil
	case arrow.DECIMAL64:
		return widenDecimal[int64](mem, tt, d), nil
	case arrow.DECIMAL128:
		if tt.ID() == arrow.DECIMAL256 {
			return convert(mem, tt, d, decimal256.FromDecimal128), nil
		}
	}
	return nil, mismatch(path, tt, st)
}

type integer interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

func widenInt[S integer](mem memory.Allocator, tt arrow.DataType, d arrow.ArrayData) arrow.ArrayData {
	switch tt.ID() {
	case arrow.INT16:
		return convert(mem, tt, d, func(v S) int16 { return int16(v) })
	case arrow.INT32:
		return convert(mem, tt, d, func(v S) int32 { return int32(v) })
	case arrow.INT64:
		return convert(mem, tt, d, func(v S) int64 { return int64(v) })
	case arrow.UINT16:
		return convert(mem, tt, d, func(v S) uint16 { return uint16(v) })
	case arrow.UINT32:
		return convert(mem, tt, d, func(v S) uint32 { return uint32(v) })
	default: // UINT64
		return convert(mem, tt, d, func(v S) uint64 { return uint64(v) })
	}
}

func widenDecimal[S int32 | int64](mem memory.Allocator, tt arrow.DataType, d arrow.ArrayData) arrow.ArrayData {
	switch tt.ID() {
	case arrow.DECIMAL64:
		return convert(mem, tt, d, func(v S) int64 { return int64(v) })
	case arrow.DECIMAL128:
		return convert(mem, tt, d, func(v S) decimal128.Num { return decimal128.FromI64(int64(v)) })
	default: // DECIMAL256
		return convert(mem, tt, d, func(v S) decimal256.Num { return decimal256.FromI64(int64(v)) })
	}
}

func widenHalf(mem memory.Allocator, tt arrow.DataType, d arrow.ArrayData) arrow.ArrayData {
	src := array.NewFloat16Data(d)
	defer src.Release()
	vals := src.Values()
	if tt.ID() == arrow.FLOAT32 {
		return convertValues(mem, tt, d, len(vals), func(i int) float32 { return vals[i].Float32() })
	}
	return convertValues(mem, tt, d, len(vals), func(i int) float64 { return float64(vals[i].Float32()) })
}

// values returns the fixed-width values of d's buffer 1, from its offset.
func values[S any](d arrow.ArrayData) []S {
	b := d.Buffers()[1]
	if b == nil || d.Len() == 0 {
		return nil
	}
	var z S
	bs := b.Bytes()
	all := unsafe.Slice((*S)(unsafe.Pointer(unsafe.SliceData(bs))), len(bs)/int(unsafe.Sizeof(z)))
	return all[d.Offset() : d.Offset()+d.Len()]
}

// convert returns d's values, each converted by f, as data of type tt, with
// d's nulls.
func convert[S, T any](mem memory.Allocator, tt arrow.DataType, d arrow.ArrayData, f func(S) T) arrow.ArrayData {
	src := values[S](d)
	return convertValues(mem, tt, d, len(src), func(i int) T { return f(src[i]) })
}

func convertValues[T any](mem memory.Allocator, tt arrow.DataType, d arrow.ArrayData, n int, f func(int) T) arrow.ArrayData {
	var z T
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(d.Len() * int(unsafe.Sizeof(z)))
	if d.Len() > 0 {
		bs := buf.Bytes()
		dst := unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(bs))), d.Len())
		for i := range n {
			dst[i] = f(i)
		}
	}
	defer buf.Release()
	valid := validity(mem, d)
	if valid != nil {
		defer valid.Release()
	}
	return array.NewData(tt, d.Len(), []*memory.Buffer{valid, buf}, nil, d.NullN(), 0)
}

// validity returns d's validity bitmap from offset 0: its own buffer
// (retained) when d starts at 0, else a copy.
func validity(mem memory.Allocator, d arrow.ArrayData) *memory.Buffer {
	b := d.Buffers()[0]
	if b == nil || d.NullN() == 0 {
		return nil
	}
	if d.Offset() == 0 {
		b.Retain()
		return b
	}
	out := memory.NewResizableBuffer(mem)
	out.Resize(int(bitutil.BytesForBits(int64(d.Len()))))
	bitutil.CopyBitmap(b.Bytes(), d.Offset(), d.Len(), out.Bytes(), 0)
	return out
}
