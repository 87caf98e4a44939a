package reader

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/sovm/sop-pme/internal/pagebound/pagecheck"
	"github.com/sovm/sop-pme/pme"
)

// chunkInfo is what the footer says of one column chunk, against which its
// pages are checked before arrow-go decodes them.
type chunkInfo struct {
	rowGroup, column int
	rows             int64 // RowGroup.num_rows
	values           int64 // ColumnMetaData.num_values
	codec            compress.Compression
	repeated         bool // the column's max repetition level is > 0
	maxDef, maxRep   int16
	physical         parquet.Type
	typeLen          int // of a FIXED_LEN_BYTE_ARRAY
}

// checkPages checks the pages of a column chunk before arrow-go sees them,
// by the rules of package internal/pagebound/pagecheck (which the sealer applies to
// every page it seals, so that no object the writer publishes fails them).
// ct is the chunk's modules (each with its length prefix) and plain their
// plaintexts, back to back. The chunk must be whole pages, a header module
// then a body module each. The error matches ErrFormat, or ErrMemoryLimit
// for a page whose check needs more than limit bytes.
func checkPages(ct, plain []byte, info chunkInfo, limit int64) error {
	k := pagecheck.New(pagecheck.Chunk{
		RowGroup: info.rowGroup, Column: info.column, Rows: info.rows, Values: info.values, Codec: info.codec,
		MaxDef: info.maxDef, MaxRep: info.maxRep, Physical: info.physical, TypeLen: info.typeLen,
	}, limit)
	for page := 0; len(ct) > 0; page++ {
		var mods [2][]byte
		for i := range mods {
			if len(ct) == 0 {
				return fmt.Errorf("%w: row group %d column %d page %d: a page header module without its page", ErrFormat, info.rowGroup, info.column, page)
			}
			n := int(binary.LittleEndian.Uint32(ct)) - pme.NonceSize - pme.TagSize
			mods[i], plain = plain[:n], plain[n:]
			ct = ct[pme.Overhead+n:]
		}
		if err := k.Page(mods[0], mods[1]); err != nil {
			return pageError(err)
		}
	}
	return pageError(k.Done())
}

// pageError reports an error of the page checks as ErrFormat, or
// ErrMemoryLimit.
func pageError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, pagecheck.ErrMemoryLimit):
		return fmt.Errorf("%w: %w", ErrMemoryLimit, err)
	}
	return fmt.Errorf("%w: %w", ErrFormat, err)
}
