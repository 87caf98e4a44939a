package pqtypes

import (
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// pqarrow reads every decimal of precision up to 38 as a decimal128: an
// INT32 or INT64 column (Parquet's form for precisions up to 9 and 18) is
// widened value by value into a new 16-byte buffer. NarrowDecimals and
// ReadNarrow read such a column as the integers it holds (pqarrow hands
// over its decoded INT32 or INT64 buffer as they are), typed decimal32 or
// decimal64 of the column's precision and scale: the same values, and
// nulls, in the width Parquet stores them. Only top-level columns are
// narrowed; a decimal nested in a list, struct or map stays a decimal128.

// NarrowDecimals returns fields, the top-level fields Apply returned for
// sc, with each decimal column that sc stores as INT32 (precision up to 9)
// or INT64 (precision up to 18) typed decimal32 or decimal64 of its
// precision and scale. It returns fields itself if none is.
func NarrowDecimals(sc *schema.Schema, fields []arrow.Field) []arrow.Field {
	var out []arrow.Field
	root := sc.Root()
	for i, f := range fields {
		if i >= root.NumFields() {
			break
		}
		node, ok := root.Field(i).(*schema.PrimitiveNode)
		if !ok || node.RepetitionType() == parquet.Repetitions.Repeated {
			continue
		}
		var p, s int32
		switch dt := f.Type.(type) {
		case *arrow.Decimal128Type:
			p, s = dt.Precision, dt.Scale
		case *arrow.Decimal256Type:
			p, s = dt.Precision, dt.Scale
		default:
			continue
		}
		var narrow arrow.DataType
		switch {
		case node.PhysicalType() == parquet.Types.Int32 && p >= 1 && p <= 9:
			narrow = &arrow.Decimal32Type{Precision: p, Scale: s}
		case node.PhysicalType() == parquet.Types.Int64 && p >= 1 && p <= 18:
			narrow = &arrow.Decimal64Type{Precision: p, Scale: s}
		default:
			continue
		}
		if out == nil {
			out = slices.Clone(fields)
		}
		out[i].Type = narrow
	}
	if out == nil {
		return fields
	}
	return out
}

// ReadNarrow makes pqarrow read, in m (a manifest Apply corrected), each
// top-level column that fields (from NarrowDecimals) types decimal32 or
// decimal64 as int32 or int64; Retype and Record then type the arrays read
// as fields does, over the same buffers.
func ReadNarrow(m *pqarrow.SchemaManifest, fields []arrow.Field) {
	for i := range m.Fields {
		sf := &m.Fields[i]
		if i >= len(fields) || len(sf.Children) != 0 {
			continue
		}
		switch fields[i].Type.ID() {
		case arrow.DECIMAL32:
			sf.Field.Type = arrow.PrimitiveTypes.Int32
		case arrow.DECIMAL64:
			sf.Field.Type = arrow.PrimitiveTypes.Int64
		}
	}
}

// ReadDates makes pqarrow read, in m (a manifest Apply corrected), each
// top-level date32 column stored as INT32 (Parquet's DATE) as int32:
// pqarrow hands over its decoded buffer as it is, where for a date32 it
// copies each value into a new buffer of the same bits. Retype and Record
// then type the arrays read as date32 again, over the same buffers.
func ReadDates(sc *schema.Schema, m *pqarrow.SchemaManifest) {
	for i := range m.Fields {
		sf := &m.Fields[i]
		if len(sf.Children) != 0 || sf.Field.Type.ID() != arrow.DATE32 || sf.ColIndex < 0 || sf.ColIndex >= sc.NumColumns() {
			continue
		}
		if sc.Column(sf.ColIndex).PhysicalType() == parquet.Types.Int32 {
			sf.Field.Type = arrow.PrimitiveTypes.Int32
		}
	}
}
