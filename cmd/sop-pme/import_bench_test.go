package main

import (
	"bufio"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/cmd/sop-pme/internal/formats"
	"github.com/sovm/sop-pme/writer"
)

// lineitemRows is the size of the benchmark's table: a TPC-H lineitem of
// scale factor 0.1 (about 75 MB of CSV).
const lineitemRows = 600_000

// lineitem returns a table shaped as TPC-H's lineitem (as tpchgen-cli
// writes it: int64 keys, DECIMAL(15,2), dates, short strings and a
// comment), of n rows in batches of 64 Ki, from a fixed seed.
func lineitem(n int) (*arrow.Schema, []arrow.RecordBatch) {
	dec := &arrow.Decimal128Type{Precision: 15, Scale: 2}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "l_orderkey", Type: arrow.PrimitiveTypes.Int64},
		{Name: "l_partkey", Type: arrow.PrimitiveTypes.Int64},
		{Name: "l_suppkey", Type: arrow.PrimitiveTypes.Int64},
		{Name: "l_linenumber", Type: arrow.PrimitiveTypes.Int32},
		{Name: "l_quantity", Type: dec},
		{Name: "l_extendedprice", Type: dec},
		{Name: "l_discount", Type: dec},
		{Name: "l_tax", Type: dec},
		{Name: "l_returnflag", Type: arrow.BinaryTypes.String},
		{Name: "l_linestatus", Type: arrow.BinaryTypes.String},
		{Name: "l_shipdate", Type: arrow.FixedWidthTypes.Date32},
		{Name: "l_commitdate", Type: arrow.FixedWidthTypes.Date32},
		{Name: "l_receiptdate", Type: arrow.FixedWidthTypes.Date32},
		{Name: "l_shipinstruct", Type: arrow.BinaryTypes.String},
		{Name: "l_shipmode", Type: arrow.BinaryTypes.String},
		{Name: "l_comment", Type: arrow.BinaryTypes.String},
	}, nil)
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"furiously", "carefully", "quickly", "slyly", "blithely", "final", "ironic", "regular", "express", "pending", "deposits", "requests", "accounts", "packages", "theodolites", "pinto", "beans", "foxes", "ideas", "dependencies"}
	instr := []string{"DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN"}
	modes := []string{"REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"}
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	var out []arrow.RecordBatch
	for i := range n {
		order := int64(i/4*8 + 1)
		b.Field(0).(*array.Int64Builder).Append(order)
		b.Field(1).(*array.Int64Builder).Append(rng.Int64N(200_000) + 1)
		b.Field(2).(*array.Int64Builder).Append(rng.Int64N(10_000) + 1)
		b.Field(3).(*array.Int32Builder).Append(int32(i%4 + 1))
		q := rng.Int64N(50) + 1
		b.Field(4).(*array.Decimal128Builder).Append(decimal128.FromI64(q * 100))
		b.Field(5).(*array.Decimal128Builder).Append(decimal128.FromI64(q * (90_000 + rng.Int64N(10_000_000))))
		b.Field(6).(*array.Decimal128Builder).Append(decimal128.FromI64(rng.Int64N(11)))
		b.Field(7).(*array.Decimal128Builder).Append(decimal128.FromI64(rng.Int64N(9)))
		b.Field(8).(*array.StringBuilder).Append([]string{"A", "N", "R"}[rng.IntN(3)])
		b.Field(9).(*array.StringBuilder).Append([]string{"F", "O"}[rng.IntN(2)])
		ship := arrow.Date32(8036 + rng.IntN(2526))
		b.Field(10).(*array.Date32Builder).Append(ship)
		b.Field(11).(*array.Date32Builder).Append(ship + arrow.Date32(rng.IntN(60)) - 30)
		b.Field(12).(*array.Date32Builder).Append(ship + arrow.Date32(rng.IntN(30)) + 1)
		b.Field(13).(*array.StringBuilder).Append(instr[rng.IntN(len(instr))])
		b.Field(14).(*array.StringBuilder).Append(modes[rng.IntN(len(modes))])
		c := words[rng.IntN(len(words))]
		for len(c) < 10+rng.IntN(34) {
			c += " " + words[rng.IntN(len(words))]
		}
		b.Field(15).(*array.StringBuilder).Append(c)
		if (i+1)%(1<<16) == 0 || i == n-1 {
			out = append(out, b.NewRecordBatch())
		}
	}
	return schema, out
}

// writeInputs writes the table as CSV, NDJSON and Parquet (snappy,
// decimals as INT64, row groups of 122,880 rows, as tpchgen-cli writes
// it) into dir, and returns their paths by format.
func writeInputs(b *testing.B, dir string, schema *arrow.Schema, recs []arrow.RecordBatch) map[formats.Format]string {
	paths := map[formats.Format]string{
		formats.CSV:     filepath.Join(dir, "lineitem.csv"),
		formats.NDJSON:  filepath.Join(dir, "lineitem.ndjson"),
		formats.Parquet: filepath.Join(dir, "lineitem.parquet"),
	}
	for _, f := range []formats.Format{formats.CSV, formats.NDJSON} {
		out, err := os.Create(paths[f])
		if err != nil {
			b.Fatal(err)
		}
		w := bufio.NewWriterSize(out, 1<<20)
		if f == formats.CSV {
			for i, fd := range schema.Fields() {
				if i > 0 {
					w.WriteByte(',')
				}
				w.WriteString(fd.Name)
			}
			w.WriteByte('\n')
		}
		for _, rec := range recs {
			for r := range int(rec.NumRows()) {
				if f == formats.NDJSON {
					w.WriteByte('{')
				}
				for c := range int(rec.NumCols()) {
					if c > 0 {
						w.WriteByte(',')
					}
					if f == formats.NDJSON {
						w.WriteString(strconv.Quote(schema.Field(c).Name))
						w.WriteByte(':')
					}
					switch col := rec.Column(c).(type) {
					case *array.Decimal128:
						// DECIMAL(15,2), positive
						v := int64(col.Value(r).LowBits())
						w.WriteString(strconv.FormatInt(v/100, 10))
						w.WriteByte('.')
						w.WriteByte(byte('0' + v%100/10))
						w.WriteByte(byte('0' + v%10))
					case *array.String, *array.Date32:
						v := col.ValueStr(r)
						if f == formats.NDJSON {
							v = strconv.Quote(v)
						}
						w.WriteString(v)
					default:
						w.WriteString(col.ValueStr(r))
					}
				}
				if f == formats.NDJSON {
					w.WriteByte('}')
				}
				w.WriteByte('\n')
			}
		}
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
		out.Close()
	}
	out, err := os.Create(paths[formats.Parquet])
	if err != nil {
		b.Fatal(err)
	}
	fw, err := pqarrow.NewFileWriter(schema, out, parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Snappy), parquet.WithMaxRowGroupLength(122_880),
		parquet.WithStoreDecimalAsInteger(true)), pqarrow.NewArrowWriterProperties())
	if err != nil {
		b.Fatal(err)
	}
	for _, rec := range recs {
		if err := fw.WriteBuffered(rec); err != nil {
			b.Fatal(err)
		}
	}
	if err := fw.Close(); err != nil {
		b.Fatal(err)
	}
	out.Close()
	return paths
}

// openImport opens path as import does (field IDs assigned), to re-encode.
func openImport(b testing.TB, path string) (*formats.Input, array.RecordReader) {
	in, err := formats.Open(context.Background(), path, formats.InputOptions{})
	if err != nil {
		b.Fatal(err)
	}
	schema, err := writer.AssignFieldIDs(in.Schema())
	if err != nil {
		b.Fatal(err)
	}
	return in, &reschemed{RecordReader: in, schema: schema}
}

// writeImport writes rr into st with import's re-encoding options, at its
// default parallelism.
func writeImport(b *testing.B, st *blobs.Dir, dir string, rr array.RecordReader) {
	obj, err := writer.WriteRecords(context.Background(), st, rr,
		writer.WithRowGroupRows(importRowGroupRows), writer.WithRowGroupBytes(importRowGroupBytes),
		writer.WithParallelism(defaultParallel()), writer.WithCodec(writer.Zstd))
	if err != nil {
		b.Fatal(err)
	}
	os.Remove(filepath.Join(dir, obj.StorageID.String()+".data"))
	os.Remove(filepath.Join(dir, obj.StorageID.String()+".obao4"))
}

// BenchmarkImport measures import's re-encoding of a TPC-H-like lineitem
// (lineitem: 600,000 rows) from CSV, NDJSON and Parquet (--reencode),
// against the writer alone encoding the same records (those the input
// reads into, held in memory), into a blobs.Dir, side by side in each
// iteration. It reports rows/s of both, the input's MB/s, and
// import/writer: the time of the import over the writer's (the target of
// issue 16: at most 2 for CSV and Parquet).
func BenchmarkImport(b *testing.B) {
	schema, recs := lineitem(lineitemRows)
	tmp := b.TempDir()
	paths := writeInputs(b, tmp, schema, recs)
	for _, r := range recs {
		r.Release()
	}
	for _, f := range []formats.Format{formats.CSV, formats.Parquet, formats.NDJSON} {
		b.Run(string(f), func(b *testing.B) {
			path := paths[f]
			fi, err := os.Stat(path)
			if err != nil {
				b.Fatal(err)
			}
			// The records the input reads into, in memory, for the writer.
			in, rr := openImport(b, path)
			var held []arrow.RecordBatch
			var rows int64
			for rr.Next() {
				rec := rr.RecordBatch()
				rec.Retain()
				held = append(held, rec)
				rows += rec.NumRows()
			}
			if err := rr.Err(); err != nil {
				b.Fatal(err)
			}
			sch := rr.Schema()
			in.Close()
			defer func() {
				for _, r := range held {
					r.Release()
				}
			}()
			dir := b.TempDir()
			st, err := blobs.CreateDir(dir)
			if err != nil {
				b.Fatal(err)
			}
			var tw, ti time.Duration
			for b.Loop() {
				t0 := time.Now()
				mem, err := array.NewRecordReader(sch, held)
				if err != nil {
					b.Fatal(err)
				}
				writeImport(b, st, dir, mem)
				t1 := time.Now()
				in, rr := openImport(b, path)
				writeImport(b, st, dir, rr)
				in.Close()
				tw += t1.Sub(t0)
				ti += time.Since(t1)
			}
			n := float64(b.N)
			b.ReportMetric(float64(rows)*n/tw.Seconds(), "writer-rows/s")
			b.ReportMetric(float64(rows)*n/ti.Seconds(), "import-rows/s")
			b.ReportMetric(float64(fi.Size())*n/1e6/ti.Seconds(), "import-MB/s")
			b.ReportMetric(float64(ti)/float64(tw), "import/writer")
		})
	}
}
