package reader

import (
	"fmt"
	"math"
	"slices"

	"github.com/sovm/sop-pme/pme"
)

// What a scan may demand by default. A tiny object can claim billions of
// rows (a page of one RLE run of 2^31−1 dictionary indices takes a few
// bytes) or thousands of columns; these defaults bound what a scan spends on
// it unless its caller asks for more, and a writer refuses to publish an
// object whose default scan would fail (package writer), so that what it
// acknowledges can always be read back with them.
const (
	// DefaultBatchSize is the most rows of a record a scan returns, unless
	// WithBatchSize says otherwise.
	DefaultBatchSize = 1 << 16

	// DefaultMaxColumns is the most leaf columns whose decoders the
	// default memory limit makes room for (64 KiB each, so 256 MiB): a
	// scan of more needs WithMemoryLimit.
	DefaultMaxColumns = 4096

	// DefaultMinMaxValues is the least default WithMaxValues: 2^30 values,
	// about 15 s of decoding for a tiny object of RLE runs.
	DefaultMinMaxValues = 1 << 30

	// DefaultValuesPerByte is how many values per byte of the object the
	// default WithMaxValues allows above DefaultMinMaxValues. Writers put
	// at most a few hundred values in a byte of an object (a constant
	// column of 10M rows: 391 per byte, with arrow-go's pages and row
	// groups of 122,880 rows), so the default refuses no object they make.
	DefaultValuesPerByte = 4096
)

// DefaultMaxValues returns the default WithMaxValues of a scan of an object
// of size bytes: DefaultMinMaxValues, or DefaultValuesPerByte per byte of
// the object, whichever is larger.
func DefaultMaxValues(size int64) int64 {
	if size > math.MaxInt64/DefaultValuesPerByte {
		return math.MaxInt64
	}
	return max(DefaultMinMaxValues, DefaultValuesPerByte*size)
}

// DefaultMemoryLimit returns the default WithMemoryLimit of a scan of
// columns leaf columns whose column chunks, in the row group it decodes,
// take chunkBytes bytes (as their modules, in the object): 40 MiB, plus
// 64 KiB for the decoder of each leaf column if there are at most
// DefaultMaxColumns of them, plus 16 bytes per byte of those chunks.
func DefaultMemoryLimit(columns int, chunkBytes int64) int64 {
	n := int64(scanMemoryBase) + scanMemoryPerByte*chunkBytes
	if columns <= DefaultMaxColumns {
		n += columnCost * int64(columns)
	}
	return n
}

// WithMaxValues sets the most values a scan decodes: the values of the
// column chunks it reads, as their pages count them (a null, and each
// element of a list, is a value; checkPages makes the pages agree with the
// footer before anything is decoded), added up over the row groups and the
// leaf columns of the scan. A row group that would take the scan beyond the
// limit is not decoded: the record reader fails, before it returns any of
// its rows, with an error matching ErrValueLimit that names the limit. The
// default is DefaultMaxValues of the object's size; math.MaxInt64 lifts the
// limit. A caller's context bounds the scan's time as well: it is checked
// before every batch.
func WithMaxValues(n int64) ScanOption {
	return func(c *scanConfig) error {
		if n <= 0 {
			return fmt.Errorf("%w: max values %d", ErrOption, n)
		}
		c.maxValues = n
		return nil
	}
}

// valueBudget counts the values a scan has decided to decode.
type valueBudget struct {
	r     *Reader
	cols  []int // nil: every column
	limit int64
	spent int64
}

// take charges the values of row group rg's projected chunks, or fails if
// they would take the scan beyond its limit.
func (v *valueBudget) take(rg int) error {
	var n int64
	for j, c := range v.r.grid[rg] {
		if v.cols != nil && !slices.Contains(v.cols, j) {
			continue
		}
		n += v.r.info[c.Off].values
	}
	if n > v.limit-v.spent {
		return fmt.Errorf("%w: row group %d holds %d values, and the scan has decoded %d; the limit is %d values (WithMaxValues)", ErrValueLimit, rg, n, v.spent, v.limit)
	}
	v.spent += n
	return nil
}

// uniqueIDs refuses a schema in which two fields share a field ID: a
// projection by that ID (WithFields) would be ambiguous. Fields without an
// ID (files of writers that write none) are not compared.
func uniqueIDs(fields []pme.Field) error {
	seen := make(map[int32]string, len(fields))
	for _, f := range fields {
		if !f.HasID {
			continue
		}
		if other, dup := seen[f.ID]; dup {
			return fmt.Errorf("%w: %s and %s share field ID %d", ErrField, other, f.Path, f.ID)
		}
		seen[f.ID] = f.Path
	}
	return nil
}
