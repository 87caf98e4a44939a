package reader

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/sovm/sop-pme/internal/arrowfb"
	"github.com/sovm/sop-pme/internal/pqtypes"
	"github.com/sovm/sop-pme/pme"
)

// The Arrow types of an object (see the package doc): arrow-go derives
// them from the Parquet schema alone (the footer it is given has no
// ARROW:schema), package pqtypes corrects them by Parquet's rules and
// refines them by the producer's ARROW:schema, decoded by arrowfb within
// bounds, wherever that is consistent with the Parquet schema. A stored
// schema that is malformed or inconsistent is ignored, with no error: the
// object reads in its Parquet types.

// storedSchema decodes the ARROW:schema entry among kvs, or returns nil if
// there is none or it is malformed.
func storedSchema(kvs []pme.KeyValue) *arrowfb.Schema {
	for _, kv := range kvs {
		if kv.Key != pme.ArrowSchemaKey {
			continue
		}
		s, err := arrowfb.DecodeSchemaEntry(kv.Value)
		if err != nil {
			return nil
		}
		return s
	}
	return nil
}

// fileReader returns arrow-go's reader of pf, in the object's Arrow types
// (but for extension types arrow-go cannot read, which scanSchema and
// scanReader restore), and the fields of the object's Arrow schema.
func (r *Reader) fileReader(pf *file.Reader, props pqarrow.ArrowReadProperties, mem memory.Allocator) (*pqarrow.FileReader, []arrow.Field, error) {
	fr, err := pqarrow.NewFileReader(pf, props, mem)
	if err != nil {
		return nil, nil, err
	}
	fields, _ := pqtypes.Apply(r.meta.Schema, fr.Manifest, r.stored)
	return fr, fields, nil
}

// scanSchema returns the schema of a scan whose record reader reads in
// got: each field in its type in want, the object's schema or
// NarrowDecimalSchema (projected as got is).
func scanSchema(want, got *arrow.Schema) *arrow.Schema {
	fields := make([]arrow.Field, got.NumFields())
	for i, f := range got.Fields() {
		if idx := want.FieldIndices(f.Name); len(idx) == 1 {
			f.Type = pqtypes.Retype(want.Field(idx[0]).Type, f.Type)
		}
		fields[i] = f
	}
	md := got.Metadata()
	return arrow.NewSchema(fields, &md)
}

// retype makes the current batch of arrow-go's record reader the scan's:
// the same arrays, with the extension types arrow-go read as their
// storage restored and INT96 values converted (see pqtypes.Record).
func (s *scanReader) retype() error {
	out, err := pqtypes.Record(s.schema, s.rr.RecordBatch())
	if err != nil {
		return fmt.Errorf("%w: %w", ErrDecode, err)
	}
	s.out = out
	return nil
}
