package writer

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/sovm/sop-pme/reader"
)

// What the reader's default scan needs to decode a batch, estimated from the
// rows the writer is given and the column chunks it encoded them into (see
// readableRowGroups). The decoder reads a batch's columns one after the
// other, so a batch's peak is what the columns before the last kept (their
// Arrow buffers, their levels and page buffers, which the column readers
// reuse) plus the peak of the last. For each leaf column:
//
//   - it keeps (retained) twice its Arrow bytes (values, offsets and
//     validity bitmaps, those of the fields above it included: builders
//     grow by doubling), costPerValue bytes per value for its definition
//     and repetition levels, and two decompressed pages (at most twice the
//     writer's page size, or the chunk);
//   - at its peak (need) it holds costFactor times its Arrow bytes and its
//     values in their Parquet physical width (what it decodes them into
//     first), and the levels and pages.
//
// Measured against arrow-go v18.8.0's decoder over every type of
// internal/testkit/testtables, the need is at least what decoding a batch of one
// column allocates through the scan's budget, by a margin of 1.1 to 4, and
// the sum over a batch's columns of what they keep, plus the largest
// difference of need and retained, at least what decoding a batch of all
// of them does (TestDecodeCostBound).
const (
	costFactor   = 3
	costPerValue = 4
)

// leafBytes is what a batch decodes to in one leaf column.
type leafBytes struct {
	arrow  int64 // Arrow buffer bytes: values, offsets, bitmaps
	values int64 // values (slots: nulls and list elements included)
}

// leafCost accumulates what rows decode to, by leaf column (in Parquet
// column order).
type leafCost []leafBytes

// add adds what arr (rows of a column, or of the field under a list)
// decodes to, to c from leaf on, plus anc Arrow bytes for each of its
// leaves (the offsets and bitmaps of the fields above it, which a
// projection of any leaf decodes); it returns the next leaf.
func (c leafCost) add(arr arrow.Array, leaf int, anc int64) int {
	n := int64(arr.Len())
	own := (n + 7) / 8 // the validity bitmap
	switch a := arr.(type) {
	case *array.Struct:
		for i := range a.NumField() {
			leaf = c.add(a.Field(i), leaf, anc+own)
		}
		return leaf
	case *array.FixedSizeList:
		k := int64(a.DataType().(*arrow.FixedSizeListType).Len())
		off := int64(a.Offset())
		child := array.NewSlice(a.ListValues(), off*k, (off+n)*k)
		defer child.Release()
		return c.add(child, leaf, anc+own)
	case array.ListLike:
		width := int64(4)
		if _, large := a.(*array.LargeList); large {
			width = 8
		}
		own += width * (n + 1)
		var start, end int64
		if n > 0 {
			start, _ = a.ValueOffsets(0)
			_, end = a.ValueOffsets(int(n - 1))
		}
		child := array.NewSlice(a.ListValues(), start, end)
		defer child.Release()
		return c.add(child, leaf, anc+own)
	case *array.Dictionary:
		c[leaf].arrow += anc + own + dictBytes(a)
		c[leaf].values += n
		return leaf + 1
	case array.ExtensionArray:
		return c.add(a.Storage(), leaf, anc)
	}
	c[leaf].arrow += anc + own + valueBytes(arr)
	c[leaf].values += n
	return leaf + 1
}

// valueBytes is the Arrow bytes of the values of arr, a leaf column.
func valueBytes(arr arrow.Array) int64 {
	n := int64(arr.Len())
	switch a := arr.(type) {
	case *array.Null:
		return 0
	case *array.Boolean:
		return (n + 7) / 8
	case *array.LargeString, *array.LargeBinary:
		return 8*(n+1) + binaryBytes(a.(array.BinaryLike))
	case array.BinaryLike:
		return 4*(n+1) + binaryBytes(a)
	}
	if fw, ok := arr.DataType().(arrow.FixedWidthDataType); ok {
		return n * int64(max(fw.BitWidth()/8, 1))
	}
	return 16 * n // a type the decoder reads otherwise: 16 bytes a value
}

// binaryBytes returns the bytes of the values of a, a string or binary
// array of any offset width.
func binaryBytes(a array.BinaryLike) int64 {
	n := a.Len()
	if n == 0 {
		return 0
	}
	return a.ValueOffset64(n-1) + int64(a.ValueLen(n-1)) - a.ValueOffset64(0)
}

// dictBytes is the Arrow bytes of the values of a, which the reader
// decodes to their dictionary's type (a Parquet schema holds no
// dictionary).
func dictBytes(a *array.Dictionary) int64 {
	n := int64(a.Len())
	switch d := a.Dictionary().(type) {
	case array.BinaryLike:
		var total int64
		for i := range a.Len() {
			if a.IsValid(i) {
				total += int64(d.ValueLen(a.GetValueIndex(i)))
			}
		}
		return 4*(n+1) + total
	default:
		if d.Len() == 0 {
			return 0
		}
		one := array.NewSlice(d, 0, 1)
		defer one.Release()
		return valueBytes(one) * n
	}
}

// physicalWidth returns the width of a value of the leaf column in its
// Parquet physical type, as the decoder decodes it before it builds the
// Arrow values (0 for BYTE_ARRAY, whose values the Arrow bytes count).
func physicalWidth(c *schema.Column) int64 {
	switch c.PhysicalType() {
	case parquet.Types.Boolean:
		return 1
	case parquet.Types.Int32, parquet.Types.Float:
		return 4
	case parquet.Types.Int64, parquet.Types.Double:
		return 8
	case parquet.Types.Int96:
		return 12
	case parquet.Types.FixedLenByteArray:
		return int64(c.TypeLength())
	}
	return 0
}

// estimate returns what decoding b takes at its peak (need) and keeps
// after (retained), for a leaf of physical width width whose chunk
// decompresses to uncompressed bytes, with pages of pageSize bytes.
func (b leafBytes) estimate(width, uncompressed, pageSize int64) (need, retained int64) {
	kept := costPerValue*b.values + 2*min(uncompressed, 2*pageSize)
	return costFactor*(b.arrow+width*b.values) + kept, 2*b.arrow + kept
}

// readableRowGroups checks that the reader's default scan can decode every
// batch of the row groups meta describes, which hold recs (rows of at most
// maxRows rows each, in order). A batch is reader.DefaultBatchSize rows of a
// row group, from its start; its default memory limit is
// reader.DefaultMemoryLimit of the column chunks (which their plaintext
// sizes here bound from below) and the columns it reads. It returns 0 if
// every batch fits whatever the projection, or else fewer rows a row group
// should hold, or an error matching ErrReaderLimit if a single row does not
// fit.
func readableRowGroups(recs []arrow.RecordBatch, meta *metadata.FileMetaData, maxRows, pageSize int64) (int64, error) {
	if len(recs) == 0 {
		return 0, nil
	}
	base := reader.DefaultMemoryLimit(0, 0)
	perByte := reader.DefaultMemoryLimit(0, 1) - base
	var start int64 // the first row of the row group
	for g := range meta.NumRowGroups() {
		end := start + meta.RowGroup(g).NumRows()
		for w := start; w < end; w += reader.DefaultBatchSize {
			wend := min(w+reader.DefaultBatchSize, end)
			costs, err := batchCosts(recs, meta, g, w, wend, pageSize)
			if err != nil {
				return 0, err
			}
			// Whatever columns a scan projects, its limit is base plus
			// perByte per byte of their chunks; what the batch takes
			// beyond that is at most the excess of what each keeps,
			// plus the largest rise to a peak.
			var excess, rise int64
			for _, c := range costs {
				excess += max(0, c.retained-perByte*c.chunk)
				rise = max(rise, c.need-c.retained)
			}
			if excess+rise <= base {
				continue
			}
			rows := wend - w
			if rows == 1 {
				return 0, fmt.Errorf("%w: row %d would take about %d bytes to decode, beyond the %d bytes the default read allows besides 16 per byte of the compressed column chunks", ErrReaderLimit, w, excess+rise, base)
			}
			return max(1, min(rows, maxRows)*base/(excess+rise)), nil
		}
		start = end
	}
	return 0, nil
}

// batchCost is what decoding a batch takes in one leaf column (see
// leafBytes.estimate), and the size of the column chunk it is read from.
type batchCost struct {
	need, retained, chunk int64
}

// batchCosts returns, by leaf column, what decoding rows [from, to) of
// recs (rows of row group g of meta) takes.
func batchCosts(recs []arrow.RecordBatch, meta *metadata.FileMetaData, g int, from, to, pageSize int64) ([]batchCost, error) {
	leaves := meta.Schema.NumColumns()
	cost := make(leafCost, leaves)
	var at int64 // the first row of r
	for _, r := range recs {
		if lo, hi := max(from, at), min(to, at+r.NumRows()); lo < hi {
			for i, col := range r.Columns() {
				part := array.NewSlice(col, lo-at, hi-at)
				cost.add(part, leafOf(r.Schema(), i), 0)
				part.Release()
			}
		}
		at += r.NumRows()
	}
	rg := meta.RowGroup(g)
	out := make([]batchCost, leaves)
	for j := range leaves {
		cc, err := rg.ColumnChunk(j)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrEncode, err)
		}
		out[j].chunk = cc.TotalCompressedSize()
		out[j].need, out[j].retained = cost[j].estimate(physicalWidth(meta.Schema.Column(j)), cc.TotalUncompressedSize(), pageSize)
	}
	return out, nil
}

// leafOf returns the first leaf column of field i of s.
func leafOf(s *arrow.Schema, i int) int {
	leaf := 0
	for _, f := range s.Fields()[:i] {
		leaf += numLeaves(f.Type)
	}
	return leaf
}

// numLeaves returns the leaf columns of a field of type t in Parquet.
func numLeaves(t arrow.DataType) int {
	switch t := t.(type) {
	case *arrow.StructType:
		n := 0
		for _, f := range t.Fields() {
			n += numLeaves(f.Type)
		}
		return n
	case *arrow.MapType:
		return numLeaves(t.KeyType()) + numLeaves(t.ItemType())
	case arrow.ListLikeType:
		return numLeaves(t.Elem())
	case arrow.ExtensionType:
		return numLeaves(t.StorageType())
	}
	return 1
}
