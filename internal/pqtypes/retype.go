package pqtypes

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// nativeExtension reports whether pqarrow reads a leaf of extension type
// ext itself: it converts binary-like storage through the extension, and
// fails on others (an extension over an integer). Apply leaves the others'
// storage in the manifest, and Record wraps the arrays it reads.
func nativeExtension(ext arrow.ExtensionType) bool {
	switch ext.StorageType().ID() {
	case arrow.BINARY, arrow.LARGE_BINARY, arrow.FIXED_SIZE_BINARY:
		return true
	}
	return false
}

// readType returns the type pqarrow is to read a target type in: the
// target, with every extension type that pqarrow does not read natively
// replaced by its storage type, and durations by int64 (pqarrow reads no
// durations).
func readType(t arrow.DataType) arrow.DataType {
	switch t := t.(type) {
	case *arrow.DurationType:
		return arrow.PrimitiveTypes.Int64
	case arrow.ExtensionType:
		if nativeExtension(t) {
			return t
		}
		return readType(t.StorageType())
	case *arrow.StructType:
		fs := make([]arrow.Field, t.NumFields())
		for i, f := range t.Fields() {
			f.Type = readType(f.Type)
			fs[i] = f
		}
		return arrow.StructOf(fs...)
	case *arrow.MapType:
		k, v := t.KeyField(), t.ItemField()
		k.Type, v.Type = readType(k.Type), readType(v.Type)
		m := arrow.MapOfFields(k, v)
		m.KeysSorted = t.KeysSorted
		return m
	case *arrow.ListType:
		e := t.ElemField()
		e.Type = readType(e.Type)
		return arrow.ListOfField(e)
	case *arrow.LargeListType:
		e := t.ElemField()
		e.Type = readType(e.Type)
		return arrow.LargeListOfField(e)
	case *arrow.FixedSizeListType:
		e := t.ElemField()
		e.Type = readType(e.Type)
		return arrow.FixedSizeListOfField(t.Len(), e)
	}
	return t
}

// Retype returns the type of a column read as got (a field of the
// manifest, or a projection of one: a struct with fewer fields) in the
// target types of want: the extension types pqarrow read as their storage
// restored. Fields are matched by name.
func Retype(want, got arrow.DataType) arrow.DataType {
	if arrow.TypeEqual(want, got) {
		return want
	}
	if _, raw := got.(*int96Raw); raw {
		if _, ok := want.(*arrow.TimestampType); ok {
			return want
		}
		return got
	}
	switch w := want.(type) {
	case *arrow.DurationType:
		if got.ID() == arrow.INT64 {
			return w
		}
		return got
	case *arrow.Date32Type: // ReadDates'
		if got.ID() == arrow.INT32 {
			return w
		}
		return got
	case *arrow.Decimal32Type: // ReadNarrow's
		if got.ID() == arrow.INT32 {
			return w
		}
		return got
	case *arrow.Decimal64Type:
		if got.ID() == arrow.INT64 {
			return w
		}
		return got
	case arrow.ExtensionType:
		if arrow.TypeEqual(w.StorageType(), got) || arrow.TypeEqual(readType(w.StorageType()), got) {
			return w
		}
		return got
	case *arrow.StructType:
		g, ok := got.(*arrow.StructType)
		if !ok {
			return got
		}
		fs := make([]arrow.Field, g.NumFields())
		for i, f := range g.Fields() {
			if wf, ok := w.FieldByName(f.Name); ok {
				f.Type = Retype(wf.Type, f.Type)
			}
			fs[i] = f
		}
		return arrow.StructOf(fs...)
	case *arrow.MapType:
		g, ok := got.(*arrow.MapType)
		if !ok {
			return got
		}
		k, v := g.KeyField(), g.ItemField()
		k.Type, v.Type = Retype(w.KeyType(), k.Type), Retype(w.ItemType(), v.Type)
		m := arrow.MapOfFields(k, v)
		m.KeysSorted = g.KeysSorted
		return m
	case arrow.ListLikeType:
		g, ok := got.(arrow.ListLikeType)
		if !ok || g.ID() != w.ID() {
			return got
		}
		e := g.ElemField()
		e.Type = Retype(w.Elem(), e.Type)
		switch g := g.(type) {
		case *arrow.ListType:
			return arrow.ListOfField(e)
		case *arrow.LargeListType:
			return arrow.LargeListOfField(e)
		case *arrow.FixedSizeListType:
			return arrow.FixedSizeListOfField(g.Len(), e)
		}
	}
	return got
}

// RetypeData returns data (of a type Retype took as got) in type t, which
// Retype returned: the same buffers, the types of t, but for INT96 values,
// converted to their timestamps (an error matching ErrInt96 if one does
// not fit). The result is a new reference.
func RetypeData(t arrow.DataType, data arrow.ArrayData) (out arrow.ArrayData, err error) {
	if arrow.TypeEqual(t, data.DataType()) {
		data.Retain()
		return data, nil
	}
	if _, raw := data.DataType().(*int96Raw); raw {
		if ts, ok := t.(*arrow.TimestampType); ok {
			return int96Data(ts, data)
		}
	}
	var children []arrow.ArrayData
	defer func() {
		for _, c := range children {
			c.Release()
		}
	}()
	retype := func(t arrow.DataType, c arrow.ArrayData) error {
		d, err := RetypeData(t, c)
		if err == nil {
			children = append(children, d)
		}
		return err
	}
	storage := t
	if ext, ok := t.(arrow.ExtensionType); ok {
		storage = ext.StorageType()
	}
	switch s := storage.(type) {
	case *arrow.StructType:
		for i, c := range data.Children() {
			if err := retype(s.Field(i).Type, c); err != nil {
				return nil, err
			}
		}
	case *arrow.MapType:
		if err := retype(s.Elem(), data.Children()[0]); err != nil {
			return nil, err
		}
	case arrow.ListLikeType:
		if err := retype(s.Elem(), data.Children()[0]); err != nil {
			return nil, err
		}
	default:
		for _, c := range data.Children() {
			c.Retain()
			children = append(children, c)
		}
	}
	return array.NewData(t, data.Len(), data.Buffers(), children, data.NullN(), data.Offset()), nil
}

// Record returns rec with its columns in the types of schema (from
// Retype), or rec itself, retained, if they are already.
func Record(schema *arrow.Schema, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	if schema.Equal(rec.Schema()) {
		rec.Retain()
		return rec, nil
	}
	cols := make([]arrow.Array, 0, rec.NumCols())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for i := range int(rec.NumCols()) {
		d, err := RetypeData(schema.Field(i).Type, rec.Column(i).Data())
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", schema.Field(i).Name, err)
		}
		cols = append(cols, array.MakeFromData(d))
		d.Release()
	}
	return array.NewRecordBatch(schema, cols, rec.NumRows()), nil
}

// A RecordReader reads the batches of a pqarrow record reader in the
// types of Apply (see Record).
type RecordReader struct {
	array.RecordReader
	schema *arrow.Schema
	cur    arrow.RecordBatch
	err    error
}

// NewRecordReader returns rr's batches in the types of fields, the fields
// Apply returned (rr may read a projection of them).
func NewRecordReader(rr array.RecordReader, fields []arrow.Field) *RecordReader {
	got := rr.Schema()
	out := make([]arrow.Field, got.NumFields())
	for i, f := range got.Fields() {
		for _, w := range fields {
			if w.Name == f.Name {
				f.Type = Retype(w.Type, f.Type)
				break
			}
		}
		out[i] = f
	}
	md := got.Metadata()
	return &RecordReader{RecordReader: rr, schema: arrow.NewSchema(out, &md)}
}

func (r *RecordReader) Schema() *arrow.Schema { return r.schema }

func (r *RecordReader) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if r.err != nil || !r.RecordReader.Next() {
		return false
	}
	r.cur, r.err = Record(r.schema, r.RecordReader.RecordBatch())
	return r.err == nil
}

func (r *RecordReader) RecordBatch() arrow.RecordBatch { return r.cur }

// Record returns the current batch.
//
// Deprecated: use RecordBatch.
func (r *RecordReader) Record() arrow.RecordBatch { return r.cur }

func (r *RecordReader) Err() error {
	if r.err != nil {
		return r.err
	}
	return r.RecordReader.Err()
}

func (r *RecordReader) Release() {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	r.RecordReader.Release()
}

// ScanSchema returns the schema of a scan whose record reader reads in
// got: each field in its type in want (the object's Arrow schema, or its
// narrow or dictionary variant, projected as got is), by Retype. The
// reader's scan and the writer's decode check both type their batches so.
func ScanSchema(want, got *arrow.Schema) *arrow.Schema {
	fields := make([]arrow.Field, got.NumFields())
	for i, f := range got.Fields() {
		if idx := want.FieldIndices(f.Name); len(idx) == 1 {
			f.Type = Retype(want.Field(idx[0]).Type, f.Type)
		}
		fields[i] = f
	}
	md := got.Metadata()
	return arrow.NewSchema(fields, &md)
}
