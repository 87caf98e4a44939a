package writer

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/sovm/sop-pme/internal/flatdec"
	"github.com/sovm/sop-pme/reader"
)

// decodeFlat is the part of decodeRowGroup's check that mirrors the
// reader's fast path. The reader's scan decodes a row group with package
// flatdec when every column it projects is one flatdec decodes (in the
// scan's type: flatdec.Leaf) and every such chunk's pages are of kinds it
// decodes (flatdec.New); else with arrow-go's record reader, every column
// it projects. So each chunk of row group 0 of the plaintext Parquet file
// f (of size bytes, footer md) that flatdec decodes, in sc's type (the
// scan's types of every column) and, for a string or binary chunk whose
// footer says it is dictionary-encoded throughout, as a dictionary too
// (WithDictionaries), is decoded here by flatdec, in batches of the
// reader's default size, each within limit bytes of mem; and decodeFlat
// reports whether some projection of the row group goes to arrow-go: a
// column flatdec does not decode, or a chunk whose pages it does not.
// Decimals need no second type: flatdec decodes INT32 and INT64 ones as
// decimal128 and narrow alike, and WithNarrowDecimals leaves
// FIXED_LEN_BYTE_ARRAY ones decimal128.
func decodeFlat(ctx context.Context, f io.ReaderAt, size int64, md *metadata.FileMetaData, sc *arrow.Schema, mem *limitedAlloc, limit int64) (arrowToo bool, err error) {
	if md.NumRowGroups() != 1 {
		return true, nil
	}
	rg := md.RowGroup(0)
	rows := rg.NumRows()
	ps := md.Schema
	var buf []byte
	defer func() { clear(buf) }()
	for j := range ps.NumColumns() {
		// The leaf's top-level field: a flat column beside nested ones
		// is read by flatdec when a scan projects it alone.
		col := ps.Column(j)
		i := ps.Root().FieldIndexByField(ps.ColumnRoot(j))
		if path := col.ColumnPath(); len(path) != 1 || i < 0 || i >= sc.NumFields() || path[0] != sc.Field(i).Name {
			arrowToo = true
			continue
		}
		c, err := flatdec.Leaf(col, sc.Field(i).Type)
		if err != nil {
			arrowToo = true
			continue
		}
		cc, err := rg.ColumnChunk(j)
		if err != nil {
			return false, fmt.Errorf("%w: column %d: %v", ErrPlaintextParquet, j, err)
		}
		c.Codec, c.Values = cc.Compression(), cc.NumValues()
		if c.Values != rows {
			arrowToo = true
			continue
		}
		start, n := cc.DataPageOffset(), cc.TotalCompressedSize()
		if off := cc.DictionaryPageOffset(); off > 0 {
			start = min(start, off)
		}
		if start < 4 || n <= 0 || start > size || n > size-start {
			return false, fmt.Errorf("%w: column %d's chunk [%d, +%d) is outside the file of %d bytes", ErrPlaintextParquet, j, start, n, size)
		}
		// One buffer for the chunks, each within the file's size,
		// cleared when it is done with (plaintext, as the sealer's
		// copies of pages are).
		if int64(cap(buf)) < n {
			clear(buf)
			buf = make([]byte, n)
		}
		chunk := buf[:n]
		if _, err := f.ReadAt(chunk, start); err != nil {
			return false, fmt.Errorf("%w: column %d: %v", ErrPlaintextParquet, j, err)
		}
		types := []arrow.DataType{c.Type}
		if id := c.Type.ID(); c.Physical == parquet.Types.ByteArray && (id == arrow.STRING || id == arrow.BINARY) && flatdec.DictionaryOnly(cc) {
			types = append(types, &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: c.Type})
		}
		// The page limit of the reader's scan with the default memory
		// limit and the fewest columns: the least it allows.
		pageLimit := int(min(reader.DefaultMemoryLimit(0, n), flatdec.MaxPageSize))
		for _, t := range types {
			c.Type = t
			ok, err := decodeChunk(ctx, c, chunk, mem, pageLimit, limit)
			if err != nil {
				return false, fmt.Errorf("column %d: %w", j, err)
			}
			arrowToo = arrowToo || !ok
		}
	}
	return arrowToo, nil
}

// decodeChunk decodes chunk, of column c, with flatdec in batches of
// decodeBatch values (flatdec's Skip: every page decoded and checked as
// the reader's Read will, no array made), each within limit bytes of mem;
// it returns false if flatdec does not decode its pages.
func decodeChunk(ctx context.Context, c flatdec.Column, chunk []byte, mem *limitedAlloc, pageLimit int, limit int64) (bool, error) {
	d, err := flatdec.New(c, chunk, mem, pageLimit)
	if errors.Is(err, flatdec.ErrUnsupported) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("%w: the rows do not decode: %v", ErrPlaintextParquet, err)
	}
	defer d.Release()
	for d.Left() > 0 {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		// Skip decodes as Read does, and fails where it would, without
		// making the arrays; what they would hold is held to the limit
		// as Read's allocations would be (a panic beyond it, which
		// decodeRowGroup recovers).
		mem.begin(limit)
		n, err := d.Skip(int(min(d.Left(), decodeBatch)))
		if err == nil {
			mem.grow(n)
		}
		mem.end()
		switch {
		case errors.Is(err, flatdec.ErrMemoryLimit):
			return false, fmt.Errorf("%w: %v", ErrNotSealable, err)
		case err != nil:
			return false, fmt.Errorf("%w: the rows do not decode: %v", ErrPlaintextParquet, err)
		}
	}
	return true, nil
}
