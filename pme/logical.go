package pme

import "github.com/sovm/sop-pme/internal/thrift"

// Parquet readers must ignore a logical type they do not know and read the
// column as its physical type (parquet-format, LogicalTypes.md: "readers
// ... should ignore" an unknown annotation, as pyarrow and DuckDB do).
// arrow-go instead refuses the whole schema ("invalid logical type") when a
// SchemaElement's logicalType union holds no member it knows: a member
// added to parquet.thrift after arrow-go v18.8, or a producer's own. An
// object keeps such an annotation as its producer wrote it; StripForReading
// leaves it out of what a decoder gets, so that arrow-go reads the column
// by its converted type, if any, or its physical type.

// knownLogical reports whether id is a member of the LogicalType union that
// arrow-go v18.8 decodes: STRING (1) to TIMESTAMP (8), INTEGER (10) to
// GEOGRAPHY (18); 9 was never used.
func knownLogical(id int16) bool { return id >= 1 && id <= 18 && id != 9 }

// unknownLogicalAt reports whether path, from the FileMetaData down, ends
// at the logicalType of a schema element that holds no member arrow-go
// knows: what StripForReading drops.
func unknownLogicalAt(path []thrift.Node) bool {
	if len(path) != 4 || path[1].ID() != fmdSchema {
		return false
	}
	c := path[3]
	if c.ID() != seLogicalType || c.Type() != thrift.TypeStruct {
		return false
	}
	for m := range c.Children() {
		if knownLogical(m.ID()) {
			return false
		}
	}
	return true
}
