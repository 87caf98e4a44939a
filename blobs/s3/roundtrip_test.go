package s3_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
	"github.com/sovm/sop-pme/writer"
)

// keys is a map KeyResolver.
type keys map[storageid.ID]pme.DEK

func (k keys) ResolveDEK(_ context.Context, id storageid.ID) (pme.DEK, error) {
	d, ok := k[id]
	if !ok {
		return pme.DEK{}, fmt.Errorf("%w: %s", reader.ErrNoKey, id)
	}
	return d, nil
}

func fieldID(n int) arrow.Metadata {
	return arrow.NewMetadata([]string{writer.FieldIDKey}, []string{strconv.Itoa(n)})
}

// table returns rows rows of (n int64, sq int64, name string).
func table(rows int) (*arrow.Schema, arrow.RecordBatch) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "n", Type: arrow.PrimitiveTypes.Int64, Metadata: fieldID(1)},
		{Name: "sq", Type: arrow.PrimitiveTypes.Int64, Metadata: fieldID(2)},
		{Name: "name", Type: arrow.BinaryTypes.String, Metadata: fieldID(3)},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range int64(rows) {
		b.Field(0).(*array.Int64Builder).Append(i)
		b.Field(1).(*array.Int64Builder).Append(i * i % 1000003)
		b.Field(2).(*array.StringBuilder).Append("row-" + strconv.FormatInt(i*7919%100000, 10))
	}
	return schema, b.NewRecordBatch()
}

// scanSum reads every row of id and returns the row count and the sums
// of n and sq.
func scanSum(ctx context.Context, src verify.Source, id storageid.ID, k reader.KeyResolver) (rows, sumN, sumSq int64, err error) {
	r, err := reader.Open(ctx, src, id, k)
	if err != nil {
		return 0, 0, 0, err
	}
	rr, err := r.Scan(ctx)
	if err != nil {
		return 0, 0, 0, err
	}
	defer rr.Release()
	for rr.Next() {
		rec := rr.RecordBatch()
		rows += rec.NumRows()
		for _, v := range rec.Column(0).(*array.Int64).Int64Values() {
			sumN += v
		}
		for _, v := range rec.Column(1).(*array.Int64).Int64Values() {
			sumSq += v
		}
	}
	return rows, sumN, sumSq, rr.Err()
}

// TestWriterReaderRoundTrip writes a table with the writer into S3 and
// reads it back with the reader, through verified ranges.
func TestWriterReaderRoundTrip(t *testing.T) {
	srv := startServer(t)
	st := srv.open(t)
	ctx := context.Background()
	const rows = 300_000
	schema, rec := table(rows)
	defer rec.Release()
	rr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	if err != nil {
		t.Fatal(err)
	}
	obj, err := writer.WriteRecords(ctx, st, rr, writer.WithRowGroupRows(64_000))
	if err != nil {
		t.Fatal(err)
	}
	k := keys{obj.StorageID: obj.DEK}
	var wantN, wantSq int64
	for i := range int64(rows) {
		wantN += i
		wantSq += i * i % 1000003
	}
	n, sumN, sumSq, err := scanSum(ctx, srv.open(t), obj.StorageID, k)
	if err != nil {
		t.Fatal(err)
	}
	if n != rows || sumN != wantN || sumSq != wantSq {
		t.Fatalf("read %d rows, sums %d %d; want %d, %d %d", n, sumN, sumSq, rows, wantN, wantSq)
	}
	r, err := reader.Open(ctx, st, obj.StorageID, k)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Verify(ctx); err != nil {
		t.Fatal(err)
	}

	// The object's bytes on the server are ciphertext: no value of the
	// table appears in them.
	b, err := os.ReadFile(srv.path(obj.StorageID.String() + ".data"))
	if err != nil {
		t.Fatal(err)
	}
	if uint64(len(b)) != obj.Size {
		t.Fatalf("stored %d bytes, object is %d", len(b), obj.Size)
	}
	for _, s := range []string{"row-7919", "name"} {
		if bytes.Contains(b, []byte(s)) {
			t.Fatalf("the stored object holds %q in the clear", s)
		}
	}

	// A byte flipped on the server: the scan fails with ErrVerify.
	flipByte(t, srv.path(obj.StorageID.String()+".data"), int64(obj.Size/2))
	_, _, _, err = scanSum(ctx, srv.open(t), obj.StorageID, k)
	if !errors.Is(err, verify.ErrVerify) {
		t.Fatalf("scan of a damaged object = %v, want ErrVerify", err)
	}
	r, err = reader.Open(ctx, srv.open(t), obj.StorageID, k)
	if err == nil {
		err = r.Verify(ctx)
	}
	if !errors.Is(err, verify.ErrVerify) {
		t.Fatalf("Verify of a damaged object = %v, want ErrVerify", err)
	}
}
