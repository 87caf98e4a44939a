package sopsql

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/sovm/sop-pme/duckdb/internal/ducktest"
	"github.com/sovm/sop-pme/internal/testkit/benchdata"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/writer"
)

// benchRows is the size of the benchmark table (benchdata: the writer
// benchmark's int64, float64, 16–24-byte string, timestamp and bool with
// 5 % nulls, zstd); SOP_PME_BENCH_ROWS overrides it.
func benchRows(b *testing.B) int {
	if s := os.Getenv("SOP_PME_BENCH_ROWS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("SOP_PME_BENCH_ROWS=%q", s)
		}
		return n
	}
	return 1 << 20
}

// benchQueries are the compared queries: aggregates over every column, and
// the sum of one column.
var benchQueries = []struct {
	name, sql string
}{
	{"full-scan", "SELECT sum(id)::BIGINT, sum(x), min(s), max(s), max(ts), count(*) FILTER (WHERE ok), count(ok) FROM %s"},
	{"sum-x", "SELECT sum(x) FROM %s"},
}

// cpuTime is the CPU time of the process so far (DuckDB's threads
// included).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkScan compares sop_scan with DuckDB 1.5.6 reading the same object
// natively with its DEK (read_parquet, encryption_config), at SET threads =
// 1 and 2, on the 1M-row benchmark table in 8 row groups. Each iteration
// runs both queries, in alternating order; the sub-benchmark reports the
// median, min and max over iterations of the wall-time ratio
// sop_scan/native, the median CPU-time ratio, and the median times (and,
// for context, DuckDB's time on a plaintext copy of the rows).
// Targets: ≤ 1.2 at equal threads. Run with -benchtime=Nx (N ≥ 5).
func BenchmarkScan(b *testing.B) {
	rows := benchRows(b)
	rec := benchdata.Record(rows, 1)
	defer rec.Release()
	st := ducktest.NewStore(b)
	id := st.Write(b, rec.Schema(), []arrow.RecordBatch{rec}, writer.WithRowGroupRows(int64(max(rows/8, 1)))).StorageID
	// For context, not for the ratios: DuckDB reading the same rows from
	// plaintext Parquet it wrote itself (zstd, the same row groups), which
	// shows what decryption costs DuckDB.
	plain := filepath.Join(b.TempDir(), "plain.parquet")
	ducktest.Exec(b, openNative(b, 0), fmt.Sprintf("COPY (SELECT * FROM %s) TO %s (COMPRESSION zstd, ROW_GROUP_SIZE %d)",
		nativeScan(st, id), ducktest.SQLString(plain), max(rows/8, 1)))
	plainScan := "read_parquet(" + ducktest.SQLString(plain) + ")"
	for _, q := range benchQueries {
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/threads=%d", q.name, threads), func(b *testing.B) {
				// sop_scan on a DB, DuckDB's own reads on a plain
				// database, each with threads threads.
				db, nativeDB := openDB(b, st, st, WithThreads(threads)), openNative(b, threads)
				run := func(db *sql.DB, from string) (time.Duration, time.Duration) {
					c0, t0 := cpuTime(), time.Now()
					rows, err := queryErr(db, fmt.Sprintf(q.sql, from))
					if err != nil || len(rows) != 1 {
						b.Fatalf("%s: %v", from, err)
					}
					return time.Since(t0), cpuTime() - c0
				}
				var wall, cpu, ours, native, plainMS []float64
				i := 0
				for b.Loop() {
					var sw, sc, nw, nc time.Duration
					if i%2 == 0 {
						sw, sc = run(db.SQL(), sopScan(id))
						nw, nc = run(nativeDB, nativeScan(st, id))
					} else {
						nw, nc = run(nativeDB, nativeScan(st, id))
						sw, sc = run(db.SQL(), sopScan(id))
					}
					pw, _ := run(nativeDB, plainScan)
					i++
					wall = append(wall, float64(sw)/float64(nw))
					cpu = append(cpu, float64(sc)/float64(nc))
					ours = append(ours, float64(sw)/1e6)
					native = append(native, float64(nw)/1e6)
					plainMS = append(plainMS, float64(pw)/1e6)
				}
				b.ReportMetric(median(wall), "ratio-median")
				b.ReportMetric(slices.Min(wall), "ratio-min")
				b.ReportMetric(slices.Max(wall), "ratio-max")
				b.ReportMetric(median(cpu), "cpu-ratio-median")
				b.ReportMetric(median(ours), "sop-ms")
				b.ReportMetric(median(native), "native-ms")
				b.ReportMetric(median(plainMS), "plaintext-ms")
			})
		}
	}
	b.Run("sum-x/bytes", func(b *testing.B) { benchBytes(b, st, id) })
}

// benchBytes checks, and reports, what a one-column sum fetches from the
// store: at most the column's chunks, the footer and 2 × 16 KiB per
// verified range (the partial groups at its ends), plus the range's proof
// (8 bytes of size and 64 bytes per tree level on each side).
func benchBytes(b *testing.B, st *ducktest.Store, id storageid.ID) {
	src := &counting{src: st}
	db := openDB(b, st, src)
	l := layoutOf(b, st, id)
	for b.Loop() {
		src.reset()
		ducktest.MustQuery(b, db.SQL(), "SELECT sum(x) FROM "+sopScan(id))
	}
	fetched, slices := src.bytes.Load(), src.slices.Load()
	need := l.need(1)
	bound := need + slices*sliceOverhead(l.size)
	b.ReportMetric(float64(fetched), "fetched-bytes")
	b.ReportMetric(float64(need), "chunks+footer-bytes")
	b.ReportMetric(float64(slices), "ranges")
	b.ReportMetric(float64(l.size), "object-bytes")
	if fetched > bound || fetched < need {
		b.Fatalf("fetched %d bytes in %d ranges; the column's chunks and the footer are %d bytes (bound %d)", fetched, slices, need, bound)
	}
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
