package writer_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/internal/testkit/benchdata"
	"github.com/sovm/sop-pme/writer"
)

// benchTable is the table the benchmarks share (package benchdata).
func benchTable(n int, seed uint64) (*arrow.Schema, arrow.RecordBatch) {
	return benchdata.Schema(), benchdata.Record(n, seed)
}

// plaintextProps are arrow-go's settings for the baseline: those the writer
// uses for its defaults.
func plaintextProps() *parquet.WriterProperties {
	return parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithMaxRowGroupLength(writer.DefaultRowGroupRows),
		parquet.WithDataPageSize(writer.DefaultDataPageSize),
		parquet.WithDataPageVersion(parquet.DataPageV1),
		parquet.WithDictionaryDefault(true),
		parquet.WithStats(true),
		parquet.WithPageIndexEnabled(false),
	)
}

func writePlaintext(b testing.TB, schema *arrow.Schema, rec arrow.RecordBatch, buf *bytes.Buffer) {
	buf.Reset()
	fw, err := pqarrow.NewFileWriter(schema, buf, plaintextProps(), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		b.Fatal(err)
	}
	if err := fw.WriteBuffered(rec); err != nil {
		b.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		b.Fatal(err)
	}
}

func writeSOP(b *testing.B, st blobs.Store, schema *arrow.Schema, rec arrow.RecordBatch) writer.Object {
	w, err := writer.New(context.Background(), st, schema)
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		b.Fatal(err)
	}
	obj, err := w.Close(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	return obj
}

// BenchmarkWrite compares, on 1,000,000 rows with zstd, the whole pipeline
// into the directory store (encode, seal, pad, hash, outboard, fsync,
// rename) with arrow-go writing the same plaintext Parquet to memory with
// the same settings. The "ratio" sub-benchmark runs both in each iteration
// and reports sop-pme's time over arrow-go's (target ≤ 1.10).
func BenchmarkWrite(b *testing.B) {
	schema, rec := benchTable(1_000_000, 1)
	defer rec.Release()
	arrowBytes := benchdata.ArrowBytes(rec)
	var plain bytes.Buffer
	b.Run("arrow-go-plaintext-to-memory", func(b *testing.B) {
		b.SetBytes(arrowBytes)
		b.ReportAllocs()
		for b.Loop() {
			writePlaintext(b, schema, rec, &plain)
		}
	})
	b.Run("sop-pme-to-dir-store", func(b *testing.B) {
		st, err := blobs.CreateDir(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(arrowBytes)
		b.ReportAllocs()
		for b.Loop() {
			writeSOP(b, st, schema, rec)
		}
	})
	b.Run("ratio", func(b *testing.B) {
		st, err := blobs.CreateDir(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		var base, ours time.Duration
		var obj writer.Object
		for b.Loop() {
			t0 := time.Now()
			writePlaintext(b, schema, rec, &plain)
			t1 := time.Now()
			obj = writeSOP(b, st, schema, rec)
			base += t1.Sub(t0)
			ours += time.Since(t1)
		}
		b.ReportMetric(float64(ours)/float64(base), "sop/arrow-go")
		b.ReportMetric(float64(obj.Size)/float64(plain.Len()), "size/plaintext-size")
	})
}

// BenchmarkWriteLarge writes an object of about 1 GiB (set SOP_PME_BENCH_MB
// to change it) from a record written again and again, in row groups closed
// by their 64 MiB byte limit, and reports the peak Go heap, sampled every
// 10 ms, against the writer's bound, (WithParallelism + 1) row groups + 64
// MiB: the heap in use (live and not yet
// collected) and the live heap as of the last GC. The input record itself
// (about 25 MiB) is part of both. Run it alone, with
// -benchtime 1x, under /usr/bin/time -v to see the peak RSS.
func BenchmarkWriteLarge(b *testing.B) {
	mb := int64(1024)
	if s := os.Getenv("SOP_PME_BENCH_MB"); s != "" {
		fmt.Sscan(s, &mb)
	}
	const rgBytes = 64 << 20
	schema, rec := benchTable(500_000, 2)
	defer rec.Release()
	for b.Loop() {
		st, err := blobs.CreateDir(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		var peak, peakLive atomic.Uint64
		live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			var ms runtime.MemStats
			t := time.NewTicker(10 * time.Millisecond)
			defer t.Stop()
			for {
				runtime.ReadMemStats(&ms)
				if ms.HeapInuse > peak.Load() {
					peak.Store(ms.HeapInuse)
				}
				metrics.Read(live)
				if v := live[0].Value.Uint64(); v > peakLive.Load() {
					peakLive.Store(v)
				}
				select {
				case <-stop:
					return
				case <-t.C:
				}
			}
		}()
		w, err := writer.New(context.Background(), st, schema, writer.WithCodec(writer.Uncompressed), writer.WithRowGroupBytes(rgBytes), writer.WithRowGroupRows(1<<30))
		if err != nil {
			b.Fatal(err)
		}
		written := int64(0)
		for written < mb<<20 {
			if err := w.Write(rec); err != nil {
				b.Fatal(err)
			}
			written += 20 << 20 // about 40 bytes a row, uncompressed
		}
		obj, err := w.Close(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		close(stop)
		wg.Wait()
		b.ReportMetric(float64(obj.Size)/(1<<20), "object-MiB")
		b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-inuse-MiB")
		b.ReportMetric(float64(peakLive.Load())/(1<<20), "peak-heap-live-MiB")
		par := runtime.GOMAXPROCS(0) // WithParallelism's default
		b.ReportMetric(float64(int64(par+1)*rgBytes+64<<20)/(1<<20), "heap-target-MiB")
	}
}
