package reader_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/sovm/sop-pme/internal/testkit/testtables"
	"github.com/sovm/sop-pme/reader"
)

// dictObject seals testtables.DictionaryFile: flag, mode and comment (which
// falls back to plain pages) and n, in row groups of 4,000 rows.
func dictObject(t *testing.T, rows int) ([]byte, *reader.Reader) {
	t.Helper()
	raw, err := testtables.DictionaryFile(rows, 4000)
	if err != nil {
		t.Fatal(err)
	}
	return raw, sealBytes(t, raw)
}

// TestDictionaries: WithDictionaries reads the string and binary columns
// whose chunks are dictionary-encoded throughout as dictionary arrays of
// the values and nulls the default scan reads, leaves a column that falls
// back to plain pages a string (and so says DictionarySchema); read as a
// dictionary anyway, the fallback column has the same values too.
func TestDictionaries(t *testing.T) {
	t.Parallel()
	const rows = 10000
	raw, r := dictObject(t, rows)
	// The comment column does fall back: a dictionary page, and plain
	// data pages, in every row group.
	pf, err := file.NewParquetReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	for rg := range pf.NumRowGroups() {
		cc, err := pf.MetaData().RowGroup(rg).ColumnChunk(2)
		if err != nil {
			t.Fatal(err)
		}
		plain := false
		for _, s := range cc.EncodingStats() {
			plain = plain || s.Encoding == parquet.Encodings.Plain && s.PageType != 2
		}
		if !cc.HasDictionaryPage() || !plain {
			t.Fatalf("row group %d: comment chunk has dictionary page %v, plain data pages %v; want both", rg, cc.HasDictionaryPage(), plain)
		}
	}
	pf.Close()

	ds := r.DictionarySchema(r.Schema().Fields())
	dict := func(dt arrow.DataType) arrow.DataType {
		return &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: dt}
	}
	want := []arrow.DataType{dict(arrow.BinaryTypes.String), dict(arrow.BinaryTypes.Binary), arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64}
	for i, dt := range want {
		if !arrow.TypeEqual(ds.Field(i).Type, dt) {
			t.Errorf("DictionarySchema field %d: %s, want %s", i, ds.Field(i).Type, dt)
		}
	}
	plain := readAll(t, r)
	for name, opts := range map[string][]reader.ScanOption{
		"dictionaries":     {reader.WithDictionaries(), reader.WithBatchSize(700)},
		"any dictionaries": {reader.WithAnyDictionaries(), reader.WithBatchSize(999)},
		"projected":        {reader.WithDictionaries(), reader.WithFields(3, 1)},
	} {
		got := readAll(t, r, opts...)
		for c, g := range got {
			if g.Len() != rows {
				t.Fatalf("%s: column %d: %d rows, want %d", name, c, g.Len(), rows)
			}
			isDict := g.DataType().ID() == arrow.DICTIONARY
			field := c
			if len(got) == 2 {
				field = 2 * c
			}
			wantDict := field < 2 || name == "any dictionaries" && field == 2
			if isDict != wantDict {
				t.Errorf("%s: column %d is %s", name, c, g.DataType())
			}
			for i := range rows {
				if gv, pv := cell(g, i), cell(plain[field], i); gv != pv {
					t.Fatalf("%s: column %d row %d: %q, want %q", name, c, i, gv, pv)
				}
			}
		}
	}
}

// cell returns row i of arr as text, "<null>" for a null, a dictionary's
// row as its value.
func cell(arr arrow.Array, i int) string {
	if arr.IsNull(i) {
		return "<null>"
	}
	switch a := arr.(type) {
	case *array.Dictionary:
		return cell(a.Dictionary(), a.GetValueIndex(i))
	case *array.String:
		return "s:" + a.Value(i)
	case *array.Binary:
		return fmt.Sprintf("b:%x", a.Value(i))
	}
	return arr.ValueStr(i)
}
