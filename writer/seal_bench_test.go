package writer_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/writer"
)

// reencodeFile imports a plaintext Parquet file by re-encoding it: pqarrow
// reads its rows, and the writer writes them (with its defaults).
func reencodeFile(b *testing.B, st blobs.Store, plain []byte) writer.Object {
	pf, err := file.NewParquetReader(bytes.NewReader(plain))
	if err != nil {
		b.Fatal(err)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
	if err != nil {
		b.Fatal(err)
	}
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer rr.Release()
	obj, err := writer.WriteRecords(context.Background(), st, rr)
	if err != nil {
		b.Fatal(err)
	}
	return obj
}

func sealBytes(b *testing.B, st blobs.Store, plain []byte) writer.Object {
	obj, err := writer.SealFile(context.Background(), st, bytes.NewReader(plain), int64(len(plain)))
	if err != nil {
		b.Fatal(err)
	}
	return obj
}

// dropObject removes an object from a directory store, so that a benchmark
// does not fill the disk.
func dropObject(dir string, obj writer.Object) {
	os.Remove(filepath.Join(dir, obj.StorageID.String()+".data"))
	os.Remove(filepath.Join(dir, obj.StorageID.String()+".obao4"))
}

// BenchmarkSealFile seals the benchdata table (1,000,000 rows, zstd, as
// arrow-go writes it with the writer's defaults; about 33 MB) byte for
// byte with SealFile, and imports the same file by re-encoding it (pqarrow
// reads it, the writer writes it), into two stores: discardStore, which
// computes the storage_id and outboard as blobs.Dir does and writes
// nothing (sealing, hashing: the cost of the format), and blobs.Dir (the
// disk, and its fsyncs, too). MB/s are of the input file. The ratio
// sub-benchmarks run both in each iteration and report re-encoding's time
// over sealing's and sealing's MB/s. Sealing decodes every row group once,
// as the reader will, before it publishes (decodecheck.go), on every core
// (decodepool.go): it runs at about the speed of that decoding (about
// 110 MB/s a core here, where encryption
// and hashing alone ran at about 1.8 GB/s), and re-encoding, which decodes
// and encodes, takes 6 to 7 times as long (target ≥ 5).
func BenchmarkSealFile(b *testing.B) {
	schema, rec := benchTable(1_000_000, 1)
	defer rec.Release()
	var plain bytes.Buffer
	writePlaintext(b, schema, rec, &plain)
	in := plain.Bytes()
	size := int64(len(in))

	b.Run("seal/hash-store", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		for b.Loop() {
			sealBytes(b, discardStore{}, in)
		}
	})
	b.Run("seal/dir-store", func(b *testing.B) {
		dir := b.TempDir()
		st, err := blobs.CreateDir(dir)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(size)
		b.ReportAllocs()
		for b.Loop() {
			obj := sealBytes(b, st, in)
			b.StopTimer()
			dropObject(dir, obj)
			b.StartTimer()
		}
	})
	b.Run("reencode/hash-store", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		for b.Loop() {
			reencodeFile(b, discardStore{}, in)
		}
	})
	ratio := func(b *testing.B, st blobs.Store, dir string) {
		var seal, reenc time.Duration
		for b.Loop() {
			t0 := time.Now()
			o1 := sealBytes(b, st, in)
			t1 := time.Now()
			o2 := reencodeFile(b, st, in)
			seal += t1.Sub(t0)
			reenc += time.Since(t1)
			if dir != "" {
				b.StopTimer()
				dropObject(dir, o1)
				dropObject(dir, o2)
				b.StartTimer()
			}
		}
		b.ReportMetric(float64(reenc)/float64(seal), "reencode/seal")
		b.ReportMetric(float64(size)*float64(b.N)/1e6/seal.Seconds(), "seal-MB/s")
		b.ReportMetric(float64(size)*float64(b.N)/1e6/reenc.Seconds(), "reencode-MB/s")
	}
	b.Run("ratio/hash-store", func(b *testing.B) { ratio(b, discardStore{}, "") })
	b.Run("ratio/dir-store", func(b *testing.B) {
		dir := b.TempDir()
		st, err := blobs.CreateDir(dir)
		if err != nil {
			b.Fatal(err)
		}
		ratio(b, st, dir)
	})
}
