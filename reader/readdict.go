package reader

import (
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/sovm/sop-pme/internal/flatdec"
)

// WithDictionaries makes the scan return each top-level string or binary
// column whose column chunks are all dictionary-encoded (see
// DictionarySchema) as an Arrow dictionary array (int32 indices into the
// chunk's dictionary), instead of the string array arrow-go otherwise
// builds by copying each value out of the dictionary, one at a time. The
// values and nulls are the same; only the encoding differs. A chunk that
// falls back from dictionary to plain pages midway (a writer's dictionary
// page size limit) still reads, its plain values added to the dictionary.
// For a consumer that takes dictionaries (package sopsql writes each
// distinct string once per DuckDB vector).
//
// Which columns are read so is decided from the footer's page encoding
// statistics: a decoding choice, never an answer (Section 11.10). A footer
// that misstates them changes the speed of the scan, not its values.
func WithDictionaries() ScanOption {
	return func(c *scanConfig) error {
		c.dict = true
		return nil
	}
}

// DictionarySchema returns the schema of a scan WithDictionaries: fields
// (the object's fields, or NarrowDecimalSchema's) with each top-level
// string or binary column typed dictionary<int32, its type> when, in
// every row group, its chunk has a dictionary page and the footer's page
// encoding statistics list only dictionary-encoded data pages (or, in a
// footer without them, the chunk's encodings are a dictionary encoding
// and level encodings only, as DuckDB writes them).
func (r *Reader) DictionarySchema(fields []arrow.Field) *arrow.Schema {
	return arrow.NewSchema(r.dictFields(fields, false), &r.kv)
}

// dictFields returns fields with the columns WithDictionaries reads as
// dictionaries so typed; fields itself if there is none. With anyPage
// (for tests), every column whose chunks have a dictionary page is, plain
// data pages or not.
func (r *Reader) dictFields(fields []arrow.Field, anyPage bool) []arrow.Field {
	var out []arrow.Field
	sc := r.meta.Schema
	for j := range sc.NumColumns() {
		node, ok := sc.ColumnRoot(j).(*schema.PrimitiveNode)
		if !ok || node.PhysicalType() != parquet.Types.ByteArray || node.RepetitionType() == parquet.Repetitions.Repeated {
			continue
		}
		i := sc.Root().FieldIndexByField(node)
		if i < 0 || i >= len(fields) || !r.allDictionary(j, anyPage) {
			continue
		}
		switch fields[i].Type.ID() {
		case arrow.STRING, arrow.BINARY:
		default:
			continue
		}
		if out == nil {
			out = slices.Clone(fields)
		}
		out[i].Type = &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: fields[i].Type}
	}
	if out == nil {
		return fields
	}
	return out
}

// allDictionary reports whether the footer says that every chunk of leaf
// column col has a dictionary page and dictionary-encoded data pages only
// (with anyPage, a dictionary page): worked out once for every column, on
// first use.
func (r *Reader) allDictionary(col int, anyPage bool) bool {
	if anyPage {
		return r.dictionaryEncoded(col, true)
	}
	cols := r.dictCols()
	return col >= 0 && col < len(cols) && cols[col]
}

// dictionaryColumns returns, for each leaf column, allDictionary's answer.
func (r *Reader) dictionaryColumns() []bool {
	cols := make([]bool, r.meta.Schema.NumColumns())
	for j := range cols {
		cols[j] = r.dictionaryEncoded(j, false)
	}
	return cols
}

// dictionaryEncoded works allDictionary's answer out from the footer.
func (r *Reader) dictionaryEncoded(col int, anyPage bool) bool {
	if r.nrg == 0 {
		return false
	}
	for rg := range r.nrg {
		cc, err := r.meta.RowGroup(rg).ColumnChunk(col)
		if err != nil || !cc.HasDictionaryPage() {
			return false
		}
		if !anyPage && !flatdec.DictionaryOnly(cc) {
			return false
		}
	}
	return true
}

// readDict makes pqarrow read, in m, each top-level column that fields
// (from dictFields) types as a dictionary as one.
func readDict(m *pqarrow.SchemaManifest, fields []arrow.Field) {
	for i := range m.Fields {
		sf := &m.Fields[i]
		if i >= len(fields) || len(sf.Children) != 0 || sf.Field.Type.ID() == arrow.DICTIONARY {
			continue
		}
		if dt, ok := fields[i].Type.(*arrow.DictionaryType); ok && arrow.TypeEqual(dt.ValueType, sf.Field.Type) {
			sf.Field.Type = &arrow.DictionaryType{IndexType: dt.IndexType, ValueType: dt.ValueType}
		}
	}
}
