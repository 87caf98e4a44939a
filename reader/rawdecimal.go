package reader

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/sovm/sop-pme/internal/pqtypes"
)

// WithNarrowDecimals makes the scan return each top-level decimal column
// the object stores as INT32 (precision up to 9) or INT64 (precision up to
// 18), Parquet's usual forms, as arrow decimal32 or decimal64 of its
// precision and scale, over the integers decoded, instead of the
// decimal128 arrow-go widens every such value into (a second buffer of 16
// bytes a value, filled one value at a time). The values and nulls are
// the same; only the width differs. NarrowDecimalSchema gives the scan's
// types. A decimal in a list, struct or map, or stored in bytes, stays a
// decimal128. For a consumer that takes narrow decimals (package sopsql
// hands them to DuckDB, which keeps DECIMAL(15, 2) in an int64).
func WithNarrowDecimals() ScanOption {
	return func(c *scanConfig) error {
		c.narrow = true
		return nil
	}
}

// NarrowDecimalSchema returns the object's schema (Schema) with the types
// a scan WithNarrowDecimals returns: decimal32 or decimal64 for the
// top-level decimal columns stored as INT32 or INT64.
func (r *Reader) NarrowDecimalSchema() *arrow.Schema {
	return arrow.NewSchema(r.narrowFields(), &r.kv)
}

// narrowFields returns the object's fields in the types of a scan
// WithNarrowDecimals.
func (r *Reader) narrowFields() []arrow.Field {
	return pqtypes.NarrowDecimals(r.meta.Schema, r.schema.Fields())
}
