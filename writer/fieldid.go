package writer

import (
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/sovm/sop-pme/padme"
)

// FieldIDKey is the Arrow field metadata key that carries a field's Parquet
// field ID, as arrow-go's pqarrow reads and writes it.
const FieldIDKey = "PARQUET:field_id"

// checkSchema enforces Section 11.2 before anything is written: every field,
// at every depth, carries a field ID that parses as a non-negative int32 and
// is unique in the schema. arrow-go silently drops negative or unparsable
// IDs, so they are refused here. It also refuses schema metadata keys
// reserved for padding (Section 11.8).
func checkSchema(s *arrow.Schema) error {
	if s == nil || s.NumFields() == 0 {
		return ErrSchema
	}
	md := s.Metadata()
	for _, k := range md.Keys() {
		if padme.IsReserved(k) {
			return fmt.Errorf("%w: schema metadata key %q", ErrReservedKey, k)
		}
	}
	seen := make(map[int32]string)
	for _, f := range s.Fields() {
		if err := checkField(f, f.Name, seen); err != nil {
			return err
		}
	}
	return nil
}

func checkField(f arrow.Field, path string, seen map[int32]string) error {
	v, ok := f.Metadata.GetValue(FieldIDKey)
	if !ok {
		return fmt.Errorf("%w: %s has none", ErrFieldID, path)
	}
	id, err := strconv.ParseInt(v, 10, 32)
	if err != nil || id < 0 {
		return fmt.Errorf("%w: %s has %q", ErrFieldID, path, v)
	}
	if other, dup := seen[int32(id)]; dup {
		return fmt.Errorf("%w: %s and %s share %d", ErrFieldID, other, path, id)
	}
	seen[int32(id)] = path
	return checkChildren(f.Type, path, seen)
}

func checkChildren(t arrow.DataType, path string, seen map[int32]string) error {
	switch t := t.(type) {
	case *arrow.MapType:
		// The repeated key_value group between a map and its key and value
		// is synthetic and never gets an ID.
		if err := checkField(t.KeyField(), path+".key", seen); err != nil {
			return err
		}
		return checkField(t.ItemField(), path+".value", seen)
	case arrow.ListLikeType:
		// The repeated "list" group is synthetic; the element field has an ID.
		return checkField(t.ElemField(), path+".element", seen)
	case *arrow.StructType:
		for _, c := range t.Fields() {
			if err := checkField(c, path+"."+c.Name, seen); err != nil {
				return err
			}
		}
	case arrow.ExtensionType:
		return checkChildren(t.StorageType(), path, seen)
	}
	return nil
}
