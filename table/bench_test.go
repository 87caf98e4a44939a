package table_test

import (
	"context"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/internal/testkit/benchdata"
	"github.com/sovm/sop-pme/internal/testkit/memstore"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/table"
)

const benchRows = 1_000_000

// benchTable holds the benchmarks' table, benchdata's million rows, as one
// object and as 100 objects of 10,000 rows, in one memory store.
type benchTable struct {
	st   *memstore.Store
	k    keys
	one  []storageid.ID
	many []storageid.ID
}

var bench struct {
	once sync.Once
	tb   *benchTable
}

// benchTableOf builds the table once for every benchmark of the run.
func benchTableOf(b *testing.B) *benchTable {
	bench.once.Do(func() { bench.tb = newBenchTable(b) })
	if bench.tb == nil {
		b.Fatal("the benchmark table was not built")
	}
	return bench.tb
}

func newBenchTable(t testing.TB) *benchTable {
	tb := &benchTable{st: memstore.New(), k: keys{}}
	rec := benchdata.Record(benchRows, 1)
	defer rec.Release()
	tb.one = append(tb.one, put(t, tb.st, tb.k, benchdata.Schema(), []arrow.RecordBatch{rec}).StorageID)
	const n = 100
	for i := range n {
		part := rec.NewSlice(int64(i*benchRows/n), int64((i+1)*benchRows/n))
		tb.many = append(tb.many, put(t, tb.st, tb.k, benchdata.Schema(), []arrow.RecordBatch{part}).StorageID)
		part.Release()
	}
	return tb
}

// BenchmarkTableScan reads every column of the million rows, as one object
// and as 100: the cost per object (an Open, a footer, a scan's start) over
// the same rows. Compare the ns/row of the two.
func BenchmarkTableScan(b *testing.B) {
	benchTableRun(b, nil)
}

// BenchmarkTableSum sums one float64 column (field ID 2) of the million
// rows, as one object and as 100.
func BenchmarkTableSum(b *testing.B) {
	benchTableRun(b, []table.Option{table.WithFields(2)})
}

func benchTableRun(b *testing.B, opts []table.Option) {
	tb := benchTableOf(b)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		ids  []storageid.ID
	}{{"objects=1", tb.one}, {"objects=100", tb.many}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu := cpuTime()
			for b.Loop() {
				rr, err := table.Scan(ctx, tb.st, tb.k, benchdata.Schema(), c.ids, opts...)
				if err != nil {
					b.Fatal(err)
				}
				var rows int64
				var sum float64
				for rr.Next() {
					rec := rr.RecordBatch()
					rows += rec.NumRows()
					if opts != nil {
						for _, v := range rec.Column(0).(*array.Float64).Float64Values() {
							sum += v
						}
					}
				}
				if err := rr.Err(); err != nil {
					b.Fatal(err)
				}
				rr.Release()
				if rows != benchRows {
					b.Fatalf("%d rows", rows)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchRows, "ns/row")
			// The process's CPU time: the figure to compare on a machine
			// that runs other work (the wall time then counts its waits).
			b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(b.N)/benchRows, "cpu-ns/row")
		})
	}
}

// BenchmarkTableOpen opens the 100 objects of 10,000 rows in turn, with
// reader.Open alone: the fixed cost of an object before its scan, in
// cpu-us/open.
func BenchmarkTableOpen(b *testing.B) {
	tb := benchTableOf(b)
	ctx := context.Background()
	b.ReportAllocs()
	cpu := cpuTime()
	n := 0
	for b.Loop() {
		for _, id := range tb.many {
			if _, err := reader.Open(ctx, tb.st, id, tb.k); err != nil {
				b.Fatal(err)
			}
			n++
		}
	}
	b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(n)/1e3, "cpu-us/open")
}

// BenchmarkTableDirSum sums the float64 column of the 100 objects of 10,000
// rows from a directory store, scan after scan: what a Dir's open files
// (blobs' held objects) save a table of many objects.
func BenchmarkTableDirSum(b *testing.B) {
	tb := benchTableOf(b)
	ctx := context.Background()
	d, err := blobs.CreateDir(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	ids := make([]storageid.ID, len(tb.many))
	rec := benchdata.Record(benchRows, 1)
	defer rec.Release()
	for i := range tb.many {
		part := rec.NewSlice(int64(i*benchRows/len(ids)), int64((i+1)*benchRows/len(ids)))
		ids[i] = put(b, d, tb.k, benchdata.Schema(), []arrow.RecordBatch{part}).StorageID
		part.Release()
	}
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		rr, err := table.Scan(ctx, d, tb.k, benchdata.Schema(), ids, table.WithFields(2))
		if err != nil {
			b.Fatal(err)
		}
		var rows int64
		for rr.Next() {
			rows += rr.RecordBatch().NumRows()
		}
		if err := rr.Err(); err != nil {
			b.Fatal(err)
		}
		rr.Release()
		if rows != benchRows {
			b.Fatalf("%d rows", rows)
		}
	}
	b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(b.N)/benchRows, "cpu-ns/row")
}
