package writer

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/sovm/sop-pme/internal/seal"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/reader"
)

// The writer never publishes an object its own reader refuses (DESIGN's
// invariant; Section 11.8's rule that a writer that cannot meet its target
// must not publish has the same spirit). It checks what it can before it
// stages anything (checkSchemaShape, on the schema; for SealFile the
// plaintext footer's schema is bounded by pme.Footer.Fields), what the
// rows decode to as each row group is encoded (readableRowGroups), and,
// once the footer is final, runs on it the reader's own checks
// (checkReadable). Each refusal matches ErrReaderLimit.

// checkSchemaShape refuses a Parquet schema that the reader refuses
// whatever the footer: nested deeper than pme.MaxSchemaDepth, or with more
// leaf columns than the default scan makes room for.
func checkSchemaShape(s *schema.Schema) error {
	if d := schemaDepth(s.Root(), 0); d > pme.MaxSchemaDepth {
		return fmt.Errorf("%w: the Parquet schema nests %d levels deep; the reader takes at most %d", ErrReaderLimit, d, pme.MaxSchemaDepth)
	}
	if n := s.NumColumns(); n > reader.DefaultMaxColumns {
		return fmt.Errorf("%w: %d leaf columns; the reader's default scan decodes at most %d at once", ErrReaderLimit, n, reader.DefaultMaxColumns)
	}
	return nil
}

// schemaDepth returns the depth of the deepest node under n, which is at
// depth d (the root at 0), in schema elements.
func schemaDepth(n schema.Node, d int) int {
	g, ok := n.(*schema.GroupNode)
	if !ok {
		return d
	}
	deepest := d
	for i := range g.NumFields() {
		deepest = max(deepest, schemaDepth(g.Field(i), d+1))
	}
	return deepest
}

// checkReadable runs on the final footer of an object of size bytes, whose
// footer region (FileCryptoMetaData and the footer module) takes region
// bytes, what reader.Open runs on it before it reads a page, and checks
// what a default scan counts before it decodes: the footer decodes within
// the reader's limits (pme.ParseFooter), its schema's depth, elements and
// paths and its key-value entries are within pme's bounds, the region
// within pme.MaxFooterRegion, arrow-go decodes the footer and derives an
// Arrow schema from it as the reader has it do, the leaf columns fit
// reader.DefaultMaxColumns and the values reader.DefaultMaxValues.
func checkReadable(footer *seal.Footer, region int, size uint64) error {
	if limit := pme.MaxFooterRegion(int64(size)); int64(region) > limit {
		return fmt.Errorf("%w: a footer region of %d bytes in an object of %d; the reader takes at most %d", ErrReaderLimit, region, size, limit)
	}
	plain := footer.Append(nil)
	defer clear(plain)
	f, err := pme.ParseFooter(plain)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrReaderLimit, detail(err))
	}
	if _, err := f.Fields(); err != nil {
		return fmt.Errorf("%w: %s", ErrReaderLimit, detail(err))
	}
	f.StripForReading()
	if _, err := f.KeyValues(); err != nil {
		return fmt.Errorf("%w: %s", ErrReaderLimit, detail(err))
	}
	stripped := f.Append(nil)
	defer clear(stripped)
	meta, err := decodeFooter(stripped)
	if err != nil {
		return fmt.Errorf("%w: the footer does not decode as the reader decodes it: %v", ErrReaderLimit, err)
	}
	if err := checkSchemaShape(meta.Schema); err != nil {
		return err
	}
	if _, err := pqarrow.FromParquet(meta.Schema, &pqarrow.ArrowReadProperties{}, meta.KeyValueMetadata()); err != nil {
		return fmt.Errorf("%w: no Arrow schema derives from the footer: %v", ErrReaderLimit, err)
	}
	var values int64
	for i := range meta.NumRowGroups() {
		rg := meta.RowGroup(i)
		for j := range rg.NumColumns() {
			cc, err := rg.ColumnChunk(j)
			if err != nil {
				return fmt.Errorf("%w: row group %d column %d: %v", ErrReaderLimit, i, j, err)
			}
			values += cc.NumValues()
		}
	}
	if limit := reader.DefaultMaxValues(int64(size)); values > limit {
		return fmt.Errorf("%w: %d values in an object of %d bytes; the reader's default scan decodes at most %d (smaller row groups spread them over more bytes)", ErrReaderLimit, values, size, limit)
	}
	return nil
}

// detail returns the text of err, a refusal of pme's footer bounds,
// without the "not an encrypted-footer PME file" of pme.ErrFormat, which
// says nothing here.
func detail(err error) string {
	return strings.TrimPrefix(err.Error(), pme.ErrFormat.Error()+": ")
}

// decodeFooter decodes a FileMetaData with arrow-go, as the reader does; a
// panic of the decoder is an error.
func decodeFooter(b []byte) (meta *metadata.FileMetaData, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("decoder panicked: %v", p)
		}
	}()
	return metadata.NewFileMetaData(b, nil)
}
