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
// (but for extension types arrow-go cannot read, which pqtypes.ScanSchema and
// scanReader restore), and the fields of the object's Arrow schema.
func (r *Reader) fileReader(pf *file.Reader, props pqarrow.ArrowReadProperties, mem memory.Allocator) (*pqarrow.FileReader, []arrow.Field, error) {
	fr, err := pqarrow.NewFileReader(pf, props, mem)
	if err != nil {
		return nil, nil, err
	}
	fields, _ := pqtypes.Apply(r.meta.Schema, fr.Manifest, r.stored)
	return fr, fields, nil
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
