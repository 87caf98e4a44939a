package interop

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"os"
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

// BenchmarkCrossEngine runs sop-pme against DuckDB 1.5.6's own encrypted
// Parquet, at equal threads, and against arrow-go on plaintext Parquet, on
// the table of issue 10 (benchdata.CrossRecord: 2,000,000 rows by default,
// SOP_PME_CROSS_ROWS to change it), zstd, row groups of 122,880 rows:
//
//   - write: DuckDB COPY ... (ENCRYPTION_CONFIG ...) from its own table,
//     with SET threads = 1 and 2; sop-pme's writer into the directory store
//     (fsync included) from an Arrow record, with GOMAXPROCS 1 and 2;
//     arrow-go writing plaintext Parquet to memory.
//   - full scan: aggregates over every column. DuckDB read_parquet with the
//     key; sop-pme's verified reader; arrow-go streaming the plaintext.
//   - one column: sum(x), the same three ways.
//
// Each iteration runs every job once, in the same order, so that the
// machine's load falls on all of them alike; the report gives each job's
// median and the ratios of the medians, and the sizes of the files. Run it
// alone on a quiet machine:
//
//	cd duckdb/interop && go test -run '^$' -bench CrossEngine -benchtime 5x -timeout 60m
func BenchmarkCrossEngine(b *testing.B) {
	rows := 2_000_000
	if s := os.Getenv("SOP_PME_CROSS_ROWS"); s != "" {
		var err error
		if rows, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	procs := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(procs)
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
	key := make([]byte, 32)
	rand.Read(key)
	exec("PRAGMA add_parquet_key('k', " + ducktest.SQLString(base64Std(key)) + ")")
	duckPath := filepath.Join(dir, "duckdb.parquet")
	from := "read_parquet(" + ducktest.SQLString(duckPath) + ", encryption_config = {footer_key: 'k'})"
	st, err := blobs.CreateDir(filepath.Join(dir, "store"))
	if err != nil {
		b.Fatal(err)
	}
	var obj writer.Object
	keys := ducktest.Keys{}

	duckQuery := func(q string, threads int) func() {
		return func() {
			exec(fmt.Sprintf("SET threads = %d", threads))
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
	withProcs := func(n int, f func()) func() {
		return func() {
			runtime.GOMAXPROCS(n)
			defer runtime.GOMAXPROCS(procs)
			f()
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
	sopScan := func(fields ...int32) func() {
		return func() {
			r, err := reader.Open(ctx, st, obj.StorageID, keys)
			if err != nil {
				b.Fatal(err)
			}
			var opts []reader.ScanOption
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
	all := "SELECT count(*), sum(id), sum(x), max(customer), max(ts), count(ok), sum(ok::INT), max(note) FROM " + from
	one := "SELECT sum(x) FROM " + from
	copyTo := "COPY t TO " + ducktest.SQLString(duckPath) + " (ENCRYPTION_CONFIG {footer_key: 'k'}, COMPRESSION zstd, ROW_GROUP_SIZE " + strconv.Itoa(crossRowGroup) + ")"
	jobs := []struct {
		name string
		run  func()
	}{
		{"write/duckdb-t1", duckQuery(copyTo, 1)},
		{"write/duckdb-t2", duckQuery(copyTo, 2)},
		{"write/arrow-go", func() { writePlain(&plain) }},
		{"write/sop-t1", withProcs(1, sopWrite)},
		{"write/sop-t2", withProcs(2, sopWrite)},
		{"scan/duckdb-t1", duckQuery(all, 1)},
		{"scan/duckdb-t2", duckQuery(all, 2)},
		{"scan/arrow-go", arrowScan()},
		{"scan/sop-t1", withProcs(1, sopScan())},
		{"scan/sop-t2", withProcs(2, sopScan())},
		{"sum/duckdb-t1", duckQuery(one, 1)},
		{"sum/duckdb-t2", duckQuery(one, 2)},
		{"sum/arrow-go", arrowScan(1)},
		{"sum/sop-t1", withProcs(1, sopScan(2))},
		{"sum/sop-t2", withProcs(2, sopScan(2))},
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
	var out strings.Builder
	fmt.Fprintf(&out, "\ncross-engine, %d rows, row groups of %d, zstd, %d iterations, medians (s):\n", rows, crossRowGroup, len(times["write/sop-t1"]))
	fmt.Fprintf(&out, "| job | DuckDB t1 | DuckDB t2 | arrow-go plaintext | sop-pme t1 | sop-pme t2 | sop/DuckDB t1 | sop/DuckDB t2 | sop t2/arrow-go |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, job := range []string{"write", "scan", "sum"} {
		d1, d2, a := med(job+"/duckdb-t1"), med(job+"/duckdb-t2"), med(job+"/arrow-go")
		s1, s2 := med(job+"/sop-t1"), med(job+"/sop-t2")
		fmt.Fprintf(&out, "| %s | %.3f | %.3f | %.3f | %.3f | %.3f | %.2f | %.2f | %.2f |\n", job, d1, d2, a, s1, s2, s1/d1, s2/d2, s2/a)
		b.ReportMetric(s1/d1, job+"-sop/duckdb-t1")
		b.ReportMetric(s2/d2, job+"-sop/duckdb-t2")
	}
	fmt.Fprintf(&out, "sizes: DuckDB %d bytes, sop-pme %d bytes (%.3f× DuckDB; unpadded %d), arrow-go plaintext %d bytes\n",
		duckInfo.Size(), obj.Size, float64(obj.Size)/float64(duckInfo.Size()), obj.UnpaddedSize, plain.Len())
	b.ReportMetric(float64(obj.Size)/float64(duckInfo.Size()), "size-sop/duckdb")
	b.Log(out.String())
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
