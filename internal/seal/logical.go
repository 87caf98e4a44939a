package seal

import "github.com/sovm/sop-pme/internal/thrift"

// Parquet readers must ignore a logical type they do not know and read the
// column as its physical type (parquet-format, LogicalTypes.md: "readers
// ... should ignore" an unknown annotation, as pyarrow and DuckDB do).
// arrow-go instead refuses the whole schema ("invalid logical type") when a
// SchemaElement's logicalType union holds no member it knows: a member
// added to parquet.thrift after arrow-go v18.8, or a producer's own.
//
// An object keeps such an annotation as its producer wrote it (a sealed
// file's footer is the file's): pme's StripForReading leaves it out of what
// a decoder gets of an object's footer. Here, AppendSchema and the row
// group files of OnRowGroupFile leave out every logicalType with no known
// member, and DropUnknownLogicalTypes does the same to a footer read from a
// plaintext file, so that arrow-go reads the column by its converted type,
// if any, or its physical type.

// knownLogical reports whether id is a member of the LogicalType union that
// arrow-go v18.8 decodes: STRING (1) to TIMESTAMP (8), INTEGER (10) to
// GEOGRAPHY (18); 9 was never used. (pme's knownLogical is the same rule,
// for its view.)
func knownLogical(id int16) bool { return id >= 1 && id <= 18 && id != 9 }

// unknownLogicalValue reports whether v, a SchemaElement.logicalType, holds
// no member arrow-go knows.
func unknownLogicalValue(v *thrift.Value) bool {
	if v == nil || v.Type != thrift.TypeStruct || v.Struct == nil {
		return false
	}
	for _, f := range v.Struct.Fields {
		if knownLogical(f.ID) {
			return false
		}
	}
	return true
}

// withoutUnknownLogical returns elems, a FileMetaData.schema, with every
// element whose logicalType holds no member arrow-go knows replaced by a
// copy without it; the others, and elems, are not changed.
func withoutUnknownLogical(elems []thrift.Value) []thrift.Value {
	out, copied := elems, false
	for i, e := range elems {
		if e.Struct == nil || !unknownLogicalValue(e.Struct.Field(seLogicalType)) {
			continue
		}
		if !copied {
			out, copied = append([]thrift.Value(nil), elems...), true
		}
		c := &thrift.Struct{Fields: append([]thrift.Field(nil), e.Struct.Fields...)}
		c.Delete(seLogicalType)
		out[i] = thrift.StructValue(c)
	}
	return out
}

// DropUnknownLogicalTypes removes from the footer's schema every
// logicalType annotation whose union holds no member arrow-go knows, so
// that a decoder reads those columns by their converted or physical type,
// as Parquet readers must. It is for a footer read from a plaintext file
// (ReadPlainFooter) that a decoder reads next; the footer of an object
// keeps the annotations (pme.Footer.StripForReading leaves them out of what a decoder
// sees). It returns how many it removed.
func (f *Footer) DropUnknownLogicalTypes() int {
	elems, err := f.schemaElements()
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range elems {
		if e.Struct != nil && unknownLogicalValue(e.Struct.Field(seLogicalType)) {
			e.Struct.Delete(seLogicalType)
			n++
		}
	}
	return n
}
