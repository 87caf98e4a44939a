//go:build tpch

package reader_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/writer"
)

// TestFlatScanLineitem (go test -tags tpch; make tpch generates the file):
// TPC-H sf1 lineitem as tpchgen-cli writes it (parquet-rs), sealed byte
// for byte, scans to the same values by the fast path as by arrow-go's
// decoder, its decimals as decimal128 (the default) or narrow
// (WithNarrowDecimals), with and without WithDictionaries, and
// every row group goes by the fast path.
func TestFlatScanLineitem(t *testing.T) {
	home, _ := os.UserHomeDir()
	path := filepath.Join(home, ".cache", "sop-pme", "tpch-data", "tpchgen-4.0.0-sf1", "lineitem.parquet")
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("%v (make tpch generates it)", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := blobs.CreateDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	obj, err := writer.SealFile(ctx, st, f, fi.Size(), writer.WithAssignFieldIDs())
	if err != nil {
		t.Fatal(err)
	}
	r, err := reader.Open(ctx, st, obj.StorageID, keys{obj.StorageID: obj.DEK})
	if err != nil {
		t.Fatal(err)
	}
	for name, opts := range map[string][]reader.ScanOption{
		"default":     {reader.WithParallelism(2)},
		"narrow":      {reader.WithNarrowDecimals(), reader.WithParallelism(1)},
		"narrow+dict": {reader.WithNarrowDecimals(), reader.WithDictionaries(), reader.WithParallelism(2)},
	} {
		before := reader.FlatRowGroups(r)
		fast, err := r.Scan(ctx, opts...)
		if err != nil {
			t.Fatal(err)
		}
		slow, err := r.Scan(ctx, append(opts, reader.WithArrowDecoder())...)
		if err != nil {
			t.Fatal(err)
		}
		rows := compareScans(t, name, fast, slow)
		fast.Release()
		slow.Release()
		if n := reader.FlatRowGroups(r) - before; n != int64(r.NumRowGroups()) {
			t.Errorf("%s: %d of %d row groups by the fast path", name, n, r.NumRowGroups())
		}
		if rows != 6_001_215 {
			t.Errorf("%s: %d rows", name, rows)
		}
	}
}

// cursor walks the rows of a record reader's batches.
type cursor struct {
	rr  array.RecordReader
	rec arrow.RecordBatch
	off int64
}

func (c *cursor) next() bool {
	for c.rec == nil || c.off >= c.rec.NumRows() {
		if !c.rr.Next() {
			return false
		}
		c.rec, c.off = c.rr.RecordBatch(), 0
	}
	return true
}

// compareScans compares the values of two scans of one object, whatever
// their batches, and returns their rows.
func compareScans(t *testing.T, name string, a, b array.RecordReader) int64 {
	t.Helper()
	ca, cb := &cursor{rr: a}, &cursor{rr: b}
	var rows int64
	for {
		oka, okb := ca.next(), cb.next()
		if oka != okb {
			t.Fatalf("%s: one scan ends at row %d, the other does not (%v, %v)", name, rows, a.Err(), b.Err())
		}
		if !oka {
			break
		}
		k := min(ca.rec.NumRows()-ca.off, cb.rec.NumRows()-cb.off)
		for i := range int(ca.rec.NumCols()) {
			sa := array.NewSlice(ca.rec.Column(i), ca.off, ca.off+k)
			sb := array.NewSlice(cb.rec.Column(i), cb.off, cb.off+k)
			pa, pb := plainArray(t, sa), plainArray(t, sb)
			if !array.Equal(pa, pb) {
				t.Fatalf("%s: column %s differs in rows [%d, %d)", name, ca.rec.Schema().Field(i).Name, rows, rows+k)
			}
			sa.Release()
			sb.Release()
			pa.Release()
			pb.Release()
		}
		ca.off += k
		cb.off += k
		rows += k
	}
	if a.Err() != nil || b.Err() != nil {
		t.Fatalf("%s: %v, %v", name, a.Err(), b.Err())
	}
	return rows
}
