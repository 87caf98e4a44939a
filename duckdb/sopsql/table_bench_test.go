package sopsql

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/sovm/sop-pme/duckdb/internal/ducktest"
	"github.com/sovm/sop-pme/internal/testkit/benchdata"
	"github.com/sovm/sop-pme/writer"
)

// BenchmarkTable compares sop_scan over a table of 100 objects of 10,000
// rows (one row group each) with sop_scan over one object of the same
// 1,000,000 rows (8 row groups), at SET threads = 1: what a table costs
// beyond its rows (a footer to fetch, verify and decrypt per object, a
// reader and a plan per object). Each iteration runs both queries, in
// alternating order; the sub-benchmark reports the median, min and max
// wall-time ratio table/object, the median CPU-time ratio (steadier on a
// shared machine) and the median times. Run with
// GOMAXPROCS=1 -benchtime=Nx (N ≥ 5).
func BenchmarkTable(b *testing.B) {
	const objects, per = 100, 10_000
	rec := benchdata.Record(objects*per, 1)
	defer rec.Release()
	st := ducktest.NewStore(b)
	one := st.Write(b, rec.Schema(), []arrow.RecordBatch{rec}, writer.WithRowGroupRows(objects*per/8)).StorageID
	tbl := &Table{Schema: rec.Schema()}
	for i := range objects {
		part := rec.NewSlice(int64(i*per), int64((i+1)*per))
		id := st.Write(b, rec.Schema(), []arrow.RecordBatch{part}, writer.WithRowGroupRows(per)).StorageID
		part.Release()
		tbl.Objects = append(tbl.Objects, TableObject{ID: id, Rows: per})
	}
	// Without openDB's poison (which overwrites every buffer a scan frees,
	// and costs the table's 100 scans more than the object's 8).
	d, err := Open(context.Background(), st, st.Keys, WithThreads(1), WithTables(fakeTables{"t": tbl}))
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	db := d.SQL()
	for _, q := range benchQueries {
		b.Run(q.name, func(b *testing.B) {
			var cpu []float64
			run := func(from string) (time.Duration, [][]any) {
				c0, t0 := cpuTime(), time.Now()
				rows, err := queryErr(db, fmt.Sprintf(q.sql, from))
				if err != nil || len(rows) != 1 {
					b.Fatalf("%s: %v", from, err)
				}
				cpu = append(cpu, float64(cpuTime()-c0))
				return time.Since(t0), rows
			}
			var ratio, cpuRatio, tms, oms []float64
			i := 0
			for b.Loop() {
				var tw, ow time.Duration
				var tr, or [][]any
				if i%2 == 0 {
					tw, tr = run("sop_scan('t')")
					ow, or = run(sopScan(one))
					cpuRatio = append(cpuRatio, cpu[len(cpu)-2]/cpu[len(cpu)-1])
				} else {
					ow, or = run(sopScan(one))
					tw, tr = run("sop_scan('t')")
					cpuRatio = append(cpuRatio, cpu[len(cpu)-1]/cpu[len(cpu)-2])
				}
				if i == 0 {
					// The same rows, summed in other chunks: floats within
					// rounding.
					ducktest.CompareRows(b, "table vs object", nil, or, tr, func(want, got any) bool {
						if w, ok := want.(float64); ok {
							g, ok := got.(float64)
							return ok && math.Abs(w-g) <= 1e-9*math.Abs(w)
						}
						return ducktest.SameValue(want, got)
					})
				}
				i++
				ratio = append(ratio, float64(tw)/float64(ow))
				tms = append(tms, float64(tw)/1e6)
				oms = append(oms, float64(ow)/1e6)
			}
			b.ReportMetric(median(ratio), "ratio-median")
			b.ReportMetric(slices.Min(ratio), "ratio-min")
			b.ReportMetric(slices.Max(ratio), "ratio-max")
			b.ReportMetric(median(cpuRatio), "cpu-ratio-median")
			b.ReportMetric(median(tms), "table-ms")
			b.ReportMetric(median(oms), "object-ms")
		})
	}
}
