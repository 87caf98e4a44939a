package hostile

import (
	"encoding/binary"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/sovm/sop-pme/internal/thrift"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/writer"
)

// ClaimedRows is the rows a page of the claimed-rows cases claims: a
// page's num_values is an i32.
const ClaimedRows = 1<<31 - 1

// ClaimedPages is how many such pages the claimed-rows cases hold.
const ClaimedPages = 4

// rowsCases are objects of about a kilobyte whose pages are each one RLE
// run that claims ClaimedRows rows: well formed, and far more work than
// their bytes. Decoding them all takes minutes (8.6 × 10^9 rows in 121 s,
// measured before scans checked their context), so the reader must stop
// them: its default WithMaxValues refuses them before any row is decoded,
// and a caller's deadline ends a scan that lifts the limit between two
// batches. A constant column of millions of rows is such a run too (DuckDB
// and arrow-go write them), so the reader cannot refuse them on their ratio
// of rows to bytes.
func rowsCases() []Case {
	return []Case{
		{"claimed-rows", "a scan decodes at most its WithMaxValues values (by default 2^30, or 4,096 per byte of the object): here 4 pages of one RLE run of 2^31−1 dictionary indices each, 8.6 × 10^9 rows in about a kilobyte", reader.ErrValueLimit, nil,
			claimedRows(false)},
		{"claimed-rows-nulls", "a scan decodes at most its WithMaxValues values: here 4 pages of one RLE run of 2^31−1 null definition levels each", reader.ErrValueLimit, nil,
			claimedRows(true)},
	}
}

// claimedRows returns a Build of a one-column object (a, int64, field ID
// 1) of one row group whose chunk is a dictionary page of one value and
// ClaimedPages data pages of ClaimedRows rows each: dictionary indices all
// 0 in one RLE run or, if nulls, an optional column whose definition
// levels are one RLE run of 0s (every row null).
func claimedRows(nulls bool) func(pme.DEK) ([]byte, error) {
	return func(dek pme.DEK) ([]byte, error) {
		schema := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: nulls, Metadata: fid(1)}}, nil)
		b := array.NewInt64Builder(memory.DefaultAllocator)
		defer b.Release()
		for range 2048 {
			b.Append(7)
		}
		col := b.NewArray()
		defer col.Release()
		rec := array.NewRecordBatch(schema, []arrow.Array{col}, int64(col.Len()))
		o, err := fromRecord(rec, writer.WithCodec(writer.Uncompressed))
		if err != nil {
			return nil, err
		}
		c := o.Chunks[0][0]
		if len(c.Pages) != 2 || c.DictPage != 0 || c.DataPage != 1 {
			return nil, fmt.Errorf("hostile: the base column is %d pages, dictionary %d, data %d", len(c.Pages), c.DictPage, c.DataPage)
		}
		var body []byte
		if nulls {
			// Definition levels (bit width 1): one run of 0s.
			body = levelRun(nil, ClaimedRows, 0)
		} else {
			// Dictionary indices: bit width 1, one RLE run of 0s.
			body = binary.AppendUvarint([]byte{1}, ClaimedRows<<1)
			body = append(body, 0)
		}
		hdr := c.Pages[1].Header.Append(nil)
		pages := []Page{c.Pages[0]}
		for range ClaimedPages {
			h, err := thrift.DecodeExact(hdr, thrift.Limits{})
			if err != nil {
				return nil, err
			}
			p := Page{Header: h}
			p.SetBody(body, len(body))
			p.Sub().Set(NumValues, thrift.I32(ClaimedRows))
			pages = append(pages, p)
		}
		c.Pages = pages
		const total = ClaimedPages * ClaimedRows
		o.ColumnMeta(0, 0).Set(CMDNumValues, thrift.I64(total))
		rgs, err := o.RowGroups()
		if err != nil {
			return nil, err
		}
		rgs[0].Set(RGNumRows, thrift.I64(total))
		o.Footer.Set(FMDNumRows, thrift.I64(total))
		o.dropKeyValue("ARROW:schema")
		return o.SealPadded(dek)
	}
}
