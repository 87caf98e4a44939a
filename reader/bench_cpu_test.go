//go:build unix

package reader_test

import (
	"context"
	"syscall"
	"testing"

	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/internal/testkit/benchdata"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/writer"
)

// BenchmarkScanCross scans the object of the cross-engine benchmark
// (benchdata.CrossRecord, 2M rows, row groups of 122,880 rows, zstd) from a
// directory store: whole, one float64 column, and whole one row group at a
// time; Open included. Besides the time it reports the process's CPU time
// per scan (getrusage), which a loaded machine disturbs less than the
// time, and the cores that makes. Run it at the thread counts of interest:
//
//	GOMAXPROCS=1 go test -run '^$' -bench ScanCross -benchtime 8x ./reader
func BenchmarkScanCross(b *testing.B) {
	ctx := context.Background()
	rec := benchdata.CrossRecord(2_000_000, 1)
	defer rec.Release()
	st, err := blobs.CreateDir(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	w, err := writer.New(ctx, st, rec.Schema(), writer.WithRowGroupRows(122_880))
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		b.Fatal(err)
	}
	obj, err := w.Close(ctx)
	if err != nil {
		b.Fatal(err)
	}
	k := keys{obj.StorageID: obj.DEK}
	for _, bc := range []struct {
		name string
		opts []reader.ScanOption
	}{
		{"full", nil},
		{"sum", []reader.ScanOption{reader.WithFields(2)}},
		{"full-sequential", []reader.ScanOption{reader.WithParallelism(1)}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cpu0 := cpuTime()
			n := 0
			for b.Loop() {
				n++
				r, err := reader.Open(ctx, st, obj.StorageID, k)
				if err != nil {
					b.Fatal(err)
				}
				rr, err := r.Scan(ctx, bc.opts...)
				if err != nil {
					b.Fatal(err)
				}
				for rr.Next() {
				}
				if err := rr.Err(); err != nil {
					b.Fatal(err)
				}
				rr.Release()
			}
			cpu := cpuTime() - cpu0
			b.ReportMetric(float64(cpu)/float64(n)/1e6, "cpu-ms/op")
			b.ReportMetric(float64(cpu)/float64(b.Elapsed().Nanoseconds()), "cores")
		})
	}
}

// cpuTime returns the process's user and system CPU time, in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
