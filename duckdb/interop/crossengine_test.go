package interop

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/duckdb/internal/ducktest"
	"github.com/sovm/sop-pme/internal/testkit/benchdata"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/writer"
)

// crossRowGroup is the row group of every engine in the cross-engine
// benchmark: DuckDB's default.
const crossRowGroup = 122_880

// BenchmarkCrossEngine runs sop-pme against DuckDB 1.5.6 on plaintext
// Parquet (what a user gives up by encrypting), against DuckDB's own
// encrypted Parquet, and against arrow-go on plaintext Parquet, on the
// table of issue 10 (benchdata.CrossRecord: 2,000,000 rows by default,
// SOP_PME_CROSS_ROWS to change it), zstd, row groups of 122,880 rows, at
// equal threads: the process's GOMAXPROCS, which go test's -cpu sets for
// the whole process, and DuckDB's SET threads to the same number.
//
//   - write: DuckDB COPY ... TO a Parquet file, plaintext and with
//     ENCRYPTION_CONFIG, from its own table; sop-pme's writer into the
//     directory store (fsync included) from an Arrow record; arrow-go
//     writing plaintext Parquet to memory.
//   - scan: aggregates over every column. DuckDB read_parquet of its
//     plaintext file and of its encrypted one (with the key); sop-pme's
//     verified reader, with its default parallelism (GOMAXPROCS) and with
//     WithParallelism(1); arrow-go streaming its plaintext file.
//   - sum: sum(x), the same four ways.
//
// Each thread count runs in a process of its own, started with GOMAXPROCS
// set to it (go test's -cpu sets GOMAXPROCS only after the first run of a
// benchmark, which then runs at the default): SOP_PME_CROSS_THREADS lists
// them (default "1,2"). Each iteration runs every job once, in the same
// order, so that the machine's load falls on all of them alike; the report
// gives each job's median and the ratios of the medians, and the sizes of
// the files. Run it alone on a quiet machine:
//
//	cd duckdb/interop && go test -run '^$' -bench CrossEngine -benchtime 5x -timeout 60m
func BenchmarkCrossEngine(b *testing.B) {
	if os.Getenv(crossChild) == "" {
		crossEngineChildren(b)
		return
	}
	rows := 2_000_000
	if s := os.Getenv("SOP_PME_CROSS_ROWS"); s != "" {
		var err error
		if rows, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	threads := runtime.GOMAXPROCS(0)
	if want := os.Getenv(crossChild); want != strconv.Itoa(threads) {
		b.Fatalf("GOMAXPROCS is %d in the process for %s threads", threads, want)
	}
	ctx := context.Background()
	dir := b.TempDir()
	rec := benchdata.CrossRecord(rows, 1)
	defer rec.Release()
	schema := rec.Schema()

	// The plaintext file: DuckDB's source table, and arrow-go's input.
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd), parquet.WithMaxRowGroupLength(crossRowGroup))
	writePlain := func(buf *bytes.Buffer) {
		buf.Reset()
		fw, err := pqarrow.NewFileWriter(schema, buf, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
		if err != nil {
			b.Fatal(err)
		}
		if err := fw.Write(rec); err != nil {
			b.Fatal(err)
		}
		if err := fw.Close(); err != nil {
			b.Fatal(err)
		}
	}
	var plain bytes.Buffer
	writePlain(&plain)
	plainPath := filepath.Join(dir, "plain.parquet")
	if err := os.WriteFile(plainPath, plain.Bytes(), 0o600); err != nil {
		b.Fatal(err)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // one connection: SET threads applies to every query
	exec := func(q string) {
		if _, err := db.Exec(q); err != nil {
			b.Fatalf("%s: %v", q, err)
		}
	}
	exec("SET force_mbedtls_unsafe = 'true'")
	exec("CREATE TABLE t AS SELECT * FROM read_parquet(" + ducktest.SQLString(plainPath) + ")")
	exec(fmt.Sprintf("SET threads = %d", threads))
	key := make([]byte, 32)
	rand.Read(key)
	exec("PRAGMA add_parquet_key('k', " + ducktest.SQLString(base64Std(key)) + ")")
	duckPlainPath := filepath.Join(dir, "duckdb-plain.parquet")
	duckPath := filepath.Join(dir, "duckdb.parquet")
	fromPlain := "read_parquet(" + ducktest.SQLString(duckPlainPath) + ")"
	from := "read_parquet(" + ducktest.SQLString(duckPath) + ", encryption_config = {footer_key: 'k'})"
	st, err := blobs.CreateDir(filepath.Join(dir, "store"))
	if err != nil {
		b.Fatal(err)
	}
	var obj writer.Object
	keys := ducktest.Keys{}

	duckQuery := func(q string) func() {
		return func() {
			rows, err := db.Query(q)
			if err != nil {
				b.Fatalf("%s: %v", q, err)
			}
			cols, _ := rows.Columns()
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			for rows.Next() {
				if err := rows.Scan(ptrs...); err != nil {
					b.Fatal(err)
				}
			}
			if err := rows.Err(); err != nil {
				b.Fatal(err)
			}
			rows.Close()
		}
	}
	sopWrite := func() {
		w, err := writer.New(ctx, st, schema, writer.WithRowGroupRows(crossRowGroup))
		if err != nil {
			b.Fatal(err)
		}
		if err := w.Write(rec); err != nil {
			b.Fatal(err)
		}
		if obj, err = w.Close(ctx); err != nil {
			b.Fatal(err)
		}
		keys[obj.StorageID] = obj.DEK
	}
	sopScan := func(par int, fields ...int32) func() {
		return func() {
			r, err := reader.Open(ctx, st, obj.StorageID, keys)
			if err != nil {
				b.Fatal(err)
			}
			var opts []reader.ScanOption
			if par > 0 {
				opts = append(opts, reader.WithParallelism(par))
			}
			if len(fields) > 0 {
				opts = append(opts, reader.WithFields(fields...))
			}
			rr, err := r.Scan(ctx, opts...)
			if err != nil {
				b.Fatal(err)
			}
			aggregate(b, rr)
		}
	}
	arrowScan := func(cols ...int) func() {
		return func() {
			pf, err := file.NewParquetReader(bytes.NewReader(plain.Bytes()))
			if err != nil {
				b.Fatal(err)
			}
			fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
			if err != nil {
				b.Fatal(err)
			}
			if len(cols) == 0 {
				cols = nil
			}
			rr, err := fr.GetRecordReader(ctx, cols, nil)
			if err != nil {
				b.Fatal(err)
			}
			aggregate(b, rr)
		}
	}
	all := "SELECT count(*), sum(id), sum(x), max(customer), max(ts), count(ok), sum(ok::INT), max(note) FROM "
	one := "SELECT sum(x) FROM "
	copyTo := func(path, opts string) string {
		return "COPY t TO " + ducktest.SQLString(path) + " (" + opts + "COMPRESSION zstd, ROW_GROUP_SIZE " + strconv.Itoa(crossRowGroup) + ")"
	}
	jobs := []struct {
		name string
		run  func()
	}{
		{"write/duckdb-plain", duckQuery(copyTo(duckPlainPath, ""))},
		{"write/duckdb-enc", duckQuery(copyTo(duckPath, "ENCRYPTION_CONFIG {footer_key: 'k'}, "))},
		{"write/arrow-go", func() { writePlain(&plain) }},
		{"write/sop", sopWrite},
		{"scan/duckdb-plain", duckQuery(all + fromPlain)},
		{"scan/duckdb-enc", duckQuery(all + from)},
		{"scan/arrow-go", arrowScan()},
		{"scan/sop", sopScan(0)},
		{"scan/sop-seq", sopScan(1)},
		{"sum/duckdb-plain", duckQuery(one + fromPlain)},
		{"sum/duckdb-enc", duckQuery(one + from)},
		{"sum/arrow-go", arrowScan(1)},
		{"sum/sop", sopScan(0, 2)},
		{"sum/sop-seq", sopScan(1, 2)},
	}
	times := map[string][]time.Duration{}
	for b.Loop() {
		for _, j := range jobs {
			runtime.GC()
			t0 := time.Now()
			j.run()
			times[j.name] = append(times[j.name], time.Since(t0))
		}
	}
	med := func(name string) float64 {
		d := slices.Clone(times[name])
		slices.Sort(d)
		return d[len(d)/2].Seconds()
	}
	duckInfo, err := os.Stat(duckPath)
	if err != nil {
		b.Fatal(err)
	}
	duckPlainInfo, err := os.Stat(duckPlainPath)
	if err != nil {
		b.Fatal(err)
	}
	var out strings.Builder
	fmt.Fprintf(&out, "\ncross-engine, %d rows, row groups of %d, zstd, %d thread(s) (GOMAXPROCS %d, DuckDB threads %d), %d iterations, medians (s):\n",
		rows, crossRowGroup, threads, runtime.GOMAXPROCS(0), threads, len(times["write/sop"]))
	fmt.Fprintf(&out, "| job | DuckDB plaintext | DuckDB encrypted | arrow-go plaintext | sop-pme | sop/DuckDB plaintext | sop/DuckDB encrypted | sop/arrow-go | sop-pme WithParallelism(1) | its sop/DuckDB plaintext |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, job := range []string{"write", "scan", "sum"} {
		p, e, a, s := med(job+"/duckdb-plain"), med(job+"/duckdb-enc"), med(job+"/arrow-go"), med(job+"/sop")
		seq := "| – | – |"
		if _, ok := times[job+"/sop-seq"]; ok {
			q := med(job + "/sop-seq")
			seq = fmt.Sprintf("| %.3f | %.2f |", q, q/p)
		}
		fmt.Fprintf(&out, "| %s | %.3f | %.3f | %.3f | %.3f | %.2f | %.2f | %.2f %s\n", job, p, e, a, s, s/p, s/e, s/a, seq)
		b.ReportMetric(s/p, job+"-sop/duckdb-plain")
		b.ReportMetric(s/e, job+"-sop/duckdb-enc")
	}
	fmt.Fprintf(&out, "sizes: DuckDB plaintext %d bytes, DuckDB encrypted %d bytes, sop-pme %d bytes (%.3f× DuckDB plaintext; unpadded %d), arrow-go plaintext %d bytes\n",
		duckPlainInfo.Size(), duckInfo.Size(), obj.Size, float64(obj.Size)/float64(duckPlainInfo.Size()), obj.UnpaddedSize, plain.Len())
	b.ReportMetric(float64(obj.Size)/float64(duckPlainInfo.Size()), "size-sop/duckdb-plain")
	b.Log(out.String())
}

// crossChild names the environment variable that holds, in the process
// BenchmarkCrossEngine starts for a thread count, that count.
const crossChild = "SOP_PME_CROSS_CHILD"

// crossEngineChildren runs BenchmarkCrossEngine once for each thread count
// of SOP_PME_CROSS_THREADS (default 1 and 2), in a process of its own with
// GOMAXPROCS set to it, and copies what it prints.
func crossEngineChildren(b *testing.B) {
	list := os.Getenv("SOP_PME_CROSS_THREADS")
	if list == "" {
		list = "1,2"
	}
	benchtime := "1x"
	if f := flag.Lookup("test.benchtime"); f != nil {
		benchtime = f.Value.String()
	}
	// The children run once, each for the iterations of -benchtime; b.N
	// does not apply here (go test calls this again with a larger b.N,
	// which is not run).
	if b.N > 1 {
		b.Skip("the runs per thread count happened with b.N = 1")
	}
	{
		for _, n := range strings.Split(list, ",") {
			if _, err := strconv.Atoi(n); err != nil {
				b.Fatalf("SOP_PME_CROSS_THREADS: %q", list)
			}
			cmd := exec.Command(os.Args[0], "-test.run", "^$", "-test.bench", "^BenchmarkCrossEngine$", "-test.benchtime", benchtime, "-test.timeout", "0")
			cmd.Env = append(os.Environ(), "GOMAXPROCS="+n, crossChild+"="+n)
			cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
			if err := cmd.Run(); err != nil {
				b.Fatalf("the run at %s threads: %v", n, err)
			}
		}
	}
}

// crossAggregates computes, over the columns a record has, what the
// DuckDB queries compute: sums of id and x, the greatest customer, ts and
// note, and the count and sum of ok.
type crossAggregates struct {
	rows, sumID, okCount, okSum int64
	sumX                        float64
	maxCustomer, maxNote        string
	maxTS                       arrow.Timestamp
}

// aggregate computes the aggregates over every record of rr, and releases
// it.
func aggregate(b *testing.B, rr array.RecordReader) {
	var agg crossAggregates
	for rr.Next() {
		agg.add(rr.RecordBatch())
	}
	if err := rr.Err(); err != nil {
		b.Fatal(err)
	}
	rr.Release()
}

func (a *crossAggregates) add(rec arrow.RecordBatch) {
	a.rows += rec.NumRows()
	for i, f := range rec.Schema().Fields() {
		col := rec.Column(i)
		switch f.Name {
		case "id":
			for _, v := range col.(*array.Int64).Int64Values() {
				a.sumID += v
			}
		case "x":
			for _, v := range col.(*array.Float64).Float64Values() {
				a.sumX += v
			}
		case "customer", "note":
			s := col.(*array.String)
			m := &a.maxCustomer
			if f.Name == "note" {
				m = &a.maxNote
			}
			for j := range s.Len() {
				if v := s.Value(j); v > *m {
					*m = v
				}
			}
		case "ts":
			for _, v := range col.(*array.Timestamp).TimestampValues() {
				a.maxTS = max(a.maxTS, v)
			}
		case "ok":
			bl := col.(*array.Boolean)
			for j := range bl.Len() {
				if bl.IsValid(j) {
					a.okCount++
					if bl.Value(j) {
						a.okSum++
					}
				}
			}
		}
	}
}
