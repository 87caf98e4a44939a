package reader_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/sovm/sop-pme/internal/pqtypes"
	"github.com/sovm/sop-pme/internal/testkit/testtables"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/writer"
)

// sealBytes seals a plaintext Parquet file byte for byte and opens it.
func sealBytes(t *testing.T, b []byte) *reader.Reader {
	t.Helper()
	ctx := context.Background()
	st := newMemStore()
	obj, err := writer.SealFile(ctx, st, bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	r, err := reader.Open(ctx, st, obj.StorageID, keys{obj.StorageID: obj.DEK})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestSealedTimestamps: a sealed file's INT96 column
// and legacy TIMESTAMP_MICROS column read as timestamps without a time
// zone (DuckDB's TIMESTAMP, not TIMESTAMP WITH TIME ZONE); INT96 values
// outside the nanosecond range (9999-12-31 and 200,000 BC, as Spark
// writes them) read at microseconds; a file with a value outside the
// microsecond range is refused by SealFile, which decodes what it seals.
func TestSealedTimestamps(t *testing.T) {
	t.Parallel()
	const day = 86_400_000_000
	vals := []parquet.Int96{
		testtables.Int96(testtables.Int96Epoch+19_000, 0),
		testtables.Int96(testtables.Int96Epoch+2_932_896, 0), // 9999-12-31
		{},
		testtables.Int96(testtables.Int96Epoch-73_769_900, 0), // about 200,000 BC
	}
	r := sealBytes(t, testtables.Timestamps(vals))
	for _, f := range r.Schema().Fields() {
		if !arrow.TypeEqual(f.Type, &arrow.TimestampType{Unit: arrow.Microsecond}) {
			t.Errorf("%s: %v, want timestamp[us] without a time zone", f.Name, f.Type)
		}
	}
	cols := readAll(t, r)
	got := cols[0].(*array.Timestamp)
	for i, w := range []int64{19_000 * day, 2_932_896 * day, 0, -73_769_900 * day} {
		if i != 2 && int64(got.Value(i)) != w || i == 2 && !got.IsNull(2) {
			t.Errorf("row %d: %v", i, got.ValueStr(i))
		}
	}
	for _, c := range cols {
		c.Release()
	}

	// A value beyond the µs range is one no read could return: SealFile
	// decodes each row group as the reader will, and refuses the file
	// rather than publish an object whose scan fails.
	far := testtables.Timestamps(append(vals, testtables.Int96(testtables.Int96Epoch-110_000_000, 0)))
	_, err := writer.SealFile(context.Background(), newMemStore(), bytes.NewReader(far), int64(len(far)))
	if !errors.Is(err, writer.ErrPlaintextParquet) || !errors.Is(err, pqtypes.ErrInt96) {
		t.Errorf("sealing a value beyond the µs range: %v", err)
	}
}

// TestSealedGeospatial (as in parquet-testing's data/geospatial): a sealed
// file's GEOMETRY and GEOGRAPHY columns read as the GeoArrow type that keeps
// their logical type (package pqtypes), not as plain binary, with their
// bytes.
func TestSealedGeospatial(t *testing.T) {
	t.Parallel()
	r := sealBytes(t, testtables.Geospatial())
	for _, f := range r.Schema().Fields() {
		if _, ok := f.Type.(*pqtypes.GeoType); !ok {
			t.Errorf("%s: %v, want %s", f.Name, f.Type, pqtypes.GeoName)
		}
	}
	cols := readAll(t, r)
	for _, c := range cols {
		g, ok := c.(array.ExtensionArray)
		if !ok || g.Len() != 2 || !g.IsNull(1) || len(g.Storage().(*array.Binary).Value(0)) != 21 {
			t.Errorf("%v", c)
		}
		c.Release()
	}
}
