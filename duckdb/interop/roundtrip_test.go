package interop

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/sovm/sop-pme/duckdb/internal/ducktest"
	"github.com/sovm/sop-pme/internal/testkit/testtables"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/writer"
)

// TestRoundTrip writes the type coverage table with our writer under every
// combination of codec, dictionary and row-group split (and data page V2
// where the writer allows it), reads each object back with our reader from
// the store, and compares what it returns with the Arrow arrays written:
// the exact Arrow schema, then every column with array.Equal (bit-exact for
// floats); also each row group alone, each field projected by its field ID,
// and small record batches. writeObject checks that reader.Check reports
// every object conformant.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	const rows = 5000
	schema := testtables.AllTypes()
	rec := testtables.Record(schema, rows, 21)
	defer rec.Release()
	st := ducktest.NewStore(t)
	ctx := context.Background()

	type tc struct {
		name string
		opts []writer.Option
		recs []arrow.RecordBatch // the input, as written; rec if nil
		rgs  int                 // row groups expected
	}
	var cases []tc
	for _, codec := range []writer.Codec{writer.Zstd, writer.Snappy, writer.Uncompressed} {
		for _, dict := range []bool{true, false} {
			for _, split := range []bool{false, true} {
				opts := []writer.Option{writer.WithCodec(codec), writer.WithDictionary(dict)}
				c := tc{name: fmt.Sprintf("codec=%v/dictionary=%v/row-groups=1", codec, dict), opts: opts, rgs: 1}
				if split {
					// 3 row groups (2100, 2100, 800 rows) of several pages.
					c.name = fmt.Sprintf("codec=%v/dictionary=%v/row-groups=3", codec, dict)
					c.opts = append(opts, writer.WithRowGroupRows(2100), writer.WithDataPageSize(64))
					c.rgs = 3
				}
				cases = append(cases, c)
			}
		}
	}
	cases = append(cases, tc{name: "page=v2/row-groups=3", rgs: 3,
		opts: []writer.Option{writer.WithCodec(writer.Uncompressed), writer.WithDataPageVersion(writer.DataPageV2), writer.WithRowGroupRows(2100), writer.WithDataPageSize(64)}})
	var parts []arrow.RecordBatch
	for off := int64(0); off < rows; off += 700 {
		part := rec.NewSlice(off, min(off+700, rows))
		defer part.Release()
		parts = append(parts, part)
	}
	// The writer counts a row group's bytes as its pages close (see
	// TestRowGroupBytesLimit), so small pages make the limit effective.
	cases = append(cases, tc{name: "input=8-records/row-group-bytes", recs: parts, rgs: -1,
		opts: []writer.Option{writer.WithRowGroupBytes(48 << 10), writer.WithDataPageSize(4 << 10)}})

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			recs := c.recs
			if recs == nil {
				recs = []arrow.RecordBatch{rec}
			}
			obj := writeObject(t, st, schema, recs, c.opts...)
			r := openReader(t, st, obj.StorageID, obj.DEK)
			if !r.Schema().Equal(schema) || !r.Schema().Metadata().Equal(schema.Metadata()) {
				t.Fatalf("reader schema:\n%v\nwritten:\n%v", r.Schema(), schema)
			}
			for i, f := range r.Schema().Fields() {
				if !f.Equal(schema.Field(i)) || !f.Metadata.Equal(schema.Field(i).Metadata) {
					t.Errorf("field %d: read %v (%v), written %v (%v)", i, f, f.Metadata, schema.Field(i), schema.Field(i).Metadata)
				}
			}
			switch {
			case c.rgs > 0 && r.NumRowGroups() != c.rgs:
				t.Errorf("%d row groups, want %d", r.NumRowGroups(), c.rgs)
			case c.rgs < 0 && r.NumRowGroups() < 2:
				t.Errorf("%d row groups, want several", r.NumRowGroups())
			}

			got := mustScan(t, r)
			defer got.Release()
			compareRecords(t, rec, got)

			// Each row group alone, in turn.
			var off int64
			for i := range r.NumRowGroups() {
				part := mustScan(t, r, reader.WithRowGroups(i))
				want := rec.NewSlice(off, off+part.NumRows())
				compareRecords(t, want, part)
				off += part.NumRows()
				want.Release()
				part.Release()
			}
			if off != rows {
				t.Errorf("the row groups hold %d rows, want %d", off, rows)
			}

			// Each field alone, by field ID.
			for _, f := range schema.Fields() {
				part := mustScan(t, r, reader.WithFields(fieldID(t, schema, f.Name)))
				want := project(rec, f.Name)
				compareRecords(t, want, part)
				want.Release()
				part.Release()
			}

			// Small batches.
			small := mustScan(t, r, reader.WithBatchSize(333))
			defer small.Release()
			compareRecords(t, rec, small)

			if r.Verified() {
				t.Errorf("Verified after scans; only Verify verifies (Section 11.10)")
			}
			if err := r.Verify(ctx); err != nil || !r.Verified() {
				t.Errorf("Verify: %v, Verified %v", err, r.Verified())
			}
		})
	}
}

// TestRowGroupBytesLimit checks what WithRowGroupBytes promises: a row group
// closes once it has about that many encoded bytes ("It bounds the writer's
// memory: about twice this size is buffered"). The table is written as 8
// records of 625 rows (about 1 MB encoded in all) with a 48 KiB limit and
// the default data page size, so it must make several row groups.
//
// It fails today: the writer measures a row group with arrow-go's
// RowGroupTotalCompressedBytes, which counts only closed pages, and with the
// default 1 MiB data pages no page of this table closes before the end, so
// the whole table (about 1 MB encoded, 20 times the limit) becomes one row
// group. Memory held per row group is then bounded by the byte limit plus
// one open page per leaf column (columns × DefaultDataPageSize), not by twice
// the limit.
func TestRowGroupBytesLimit(t *testing.T) {
	t.Parallel()
	const rows, limit = 5000, 48 << 10
	schema := testtables.AllTypes()
	rec := testtables.Record(schema, rows, 22)
	defer rec.Release()
	var parts []arrow.RecordBatch
	for off := int64(0); off < rows; off += 625 {
		part := rec.NewSlice(off, off+625)
		defer part.Release()
		parts = append(parts, part)
	}
	st := ducktest.NewStore(t)
	obj := writeObject(t, st, schema, parts, writer.WithRowGroupBytes(limit))
	lay := inspect(t, obj)
	perRG := make([]int64, lay.rowGroups)
	for _, c := range lay.chunks {
		perRG[c.rowGroup] += c.span.Len
	}
	t.Logf("%d-byte object, %d row groups of %v module bytes", obj.Size, lay.rowGroups, perRG)
	if lay.rowGroups < 2 {
		t.Errorf("WithRowGroupBytes(%d): one row group of %d bytes", limit, perRG[0])
	}
}
