package s3_test

import (
	"context"
	"encoding/binary"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/blobs/s3"
	"github.com/sovm/sop-pme/verify"
	"github.com/sovm/sop-pme/writer"
)

// benchStores returns a blobs.Dir and an S3 store on a local versitygw,
// each in a temporary directory of the same file system, and the server.
func benchStores(b *testing.B) (map[string]interface {
	blobs.Store
	verify.Source
}, *server) {
	srv := startServer(b)
	dir, err := blobs.CreateDir(filepath.Join(b.TempDir(), "store"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { dir.Close() })
	return map[string]interface {
		blobs.Store
		verify.Source
	}{"dir": dir, "s3": srv.open(b), "s3-signed": srv.open(b, s3.WithSignedPayload())}, srv
}

// BenchmarkImport imports objects of 4 MiB and 48 MiB (Create, Write in
// 1 MiB pieces, Commit), each iteration new bytes, into blobs.Dir and
// into S3 (versitygw on 127.0.0.1, posix backend), with the default
// unsigned payloads and with WithSignedPayload. It reports the CPU time of
// this process and of versitygw a import: on a machine of few cores the
// server's CPU competes with the importer's.
func BenchmarkImport(b *testing.B) {
	ctx := context.Background()
	stores, srv := benchStores(b)
	for _, size := range []int{4 << 20, 48 << 20} {
		data := randBytes(size, 1)
		for _, name := range []string{"dir", "s3", "s3-signed"} {
			st := stores[name]
			b.Run(name+"/"+itoa(size>>20)+"MiB", func(b *testing.B) {
				b.SetBytes(int64(size))
				salt := uint64(time.Now().UnixNano()) // new bytes in every run
				cpu0, srv0 := cpuTime(), srv.CPUTime()
				for b.Loop() {
					salt++
					binary.LittleEndian.PutUint64(data, salt)
					p, err := st.Create(ctx)
					if err != nil {
						b.Fatal(err)
					}
					for rest := data; len(rest) > 0; rest = rest[min(len(rest), 1<<20):] {
						if _, err := p.Write(rest[:min(len(rest), 1<<20)]); err != nil {
							b.Fatal(err)
						}
					}
					if _, err := p.Commit(ctx); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64((cpuTime()-cpu0).Milliseconds())/float64(b.N), "cpu-ms/op")
				b.ReportMetric(float64((srv.CPUTime()-srv0).Milliseconds())/float64(b.N), "server-cpu-ms/op")
			})
		}
	}
}

// BenchmarkScan scans every row of an object of 1M rows (three columns,
// 16 row groups) through the verified reader, from blobs.Dir and from S3
// through a counting proxy on 127.0.0.1 (large_test.go), with and without
// 20 ms added to every request, with the store's plan (Plan: 8 data GETs
// kept in flight ahead) and without it (as before Plan, one range a
// worker at a time). It reports the requests of a scan and the most
// requests, and data GETs, in flight at once, counted at the proxy.
func BenchmarkScan(b *testing.B) {
	ctx := context.Background()
	schema, rec := table(1_000_000)
	defer rec.Release()
	srv := startServer(b)
	dir, err := blobs.CreateDir(filepath.Join(b.TempDir(), "store"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { dir.Close() })
	var objs []writer.Object // in dir, in S3 (each its own DEK)
	k := keys{}
	for _, st := range []blobs.Store{dir, srv.open(b)} {
		rr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
		if err != nil {
			b.Fatal(err)
		}
		obj, err := writer.WriteRecords(ctx, st, rr, writer.WithRowGroupRows(64_000))
		if err != nil {
			b.Fatal(err)
		}
		objs = append(objs, obj)
		k[obj.StorageID] = obj.DEK
	}
	px := startProxy(b, srv.endpoint)
	viaProxy, err := s3.Open(ctx, storeURL(px.url), creds())
	if err != nil {
		b.Fatal(err)
	}
	for _, v := range []struct {
		name  string
		src   verify.Source
		delay time.Duration
		plan  bool
	}{
		{"dir", dir, 0, true},
		{"s3", viaProxy, 0, true},
		{"s3-noplan", viaProxy, 0, false},
		{"s3-20ms", viaProxy, 20 * time.Millisecond, true},
		{"s3-20ms-noplan", viaProxy, 20 * time.Millisecond, false},
	} {
		b.Run(v.name, func(b *testing.B) {
			defer s3.SetPlan(v.plan, 8)()
			px.delay.Store(int64(v.delay))
			defer px.delay.Store(0)
			px.maxInFlight.Store(0)
			px.maxDataInFlight.Store(0)
			obj := objs[1]
			if v.name == "dir" {
				obj = objs[0]
			}
			b.SetBytes(int64(obj.Size))
			before := px.counts()
			for b.Loop() {
				n, _, _, err := scanSum(ctx, v.src, obj.StorageID, k)
				if err != nil || n != 1_000_000 {
					b.Fatal(n, err)
				}
			}
			if v.name != "dir" {
				b.ReportMetric(float64(px.counts().sub(before).requests())/float64(b.N), "requests/op")
				b.ReportMetric(float64(px.maxInFlight.Load()), "max-in-flight")
				b.ReportMetric(float64(px.maxDataInFlight.Load()), "max-data-GETs-in-flight")
			}
		})
	}
}
