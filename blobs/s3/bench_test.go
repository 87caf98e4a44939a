package s3_test

import (
	"context"
	"encoding/binary"
	"net/http"
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

// stores returns a blobs.Dir and an S3 store on a local versitygw, each
// in a temporary directory of the same file system.
func benchStores(b *testing.B) map[string]interface {
	blobs.Store
	verify.Source
} {
	srv := startServer(b)
	dir, err := blobs.CreateDir(filepath.Join(b.TempDir(), "store"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { dir.Close() })
	return map[string]interface {
		blobs.Store
		verify.Source
	}{"dir": dir, "s3": srv.open(b), "s3-signed": srv.open(b, s3.WithSignedPayload())}
}

// BenchmarkImport imports objects of 4 MiB and 48 MiB (Create, Write in
// 1 MiB pieces, Commit), each iteration new bytes, into blobs.Dir and
// into S3 (versitygw on 127.0.0.1, posix backend), with the default
// unsigned payloads and with WithSignedPayload.
func BenchmarkImport(b *testing.B) {
	ctx := context.Background()
	stores := benchStores(b)
	for _, size := range []int{4 << 20, 48 << 20} {
		data := randBytes(size, 1)
		for _, name := range []string{"dir", "s3", "s3-signed"} {
			st := stores[name]
			b.Run(name+"/"+itoa(size>>20)+"MiB", func(b *testing.B) {
				b.SetBytes(int64(size))
				salt := uint64(time.Now().UnixNano()) // new bytes in every run
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
			})
		}
	}
}

// BenchmarkScan scans every row of an object of 1M rows (three columns,
// 16 row groups) through the verified reader, from blobs.Dir and from S3,
// and counts the S3 requests of a scan.
func BenchmarkScan(b *testing.B) {
	ctx := context.Background()
	stores := benchStores(b)
	schema, rec := table(1_000_000)
	defer rec.Release()
	b.Setenv("AWS_CA_BUNDLE", "") // the SDK wants its own client with a CA bundle
	ct := &countingTransport{base: newTransport()}
	stores["s3"] = startServer(b).open(b, s3.WithHTTPClient(&http.Client{Transport: ct}))
	for _, name := range []string{"dir", "s3"} {
		st := stores[name]
		rr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
		if err != nil {
			b.Fatal(err)
		}
		obj, err := writer.WriteRecords(ctx, st, rr, writer.WithRowGroupRows(64_000))
		if err != nil {
			b.Fatal(err)
		}
		k := keys{obj.StorageID: obj.DEK}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(obj.Size))
			before := ct.n.Load()
			for b.Loop() {
				n, _, _, err := scanSum(ctx, st, obj.StorageID, k)
				if err != nil || n != 1_000_000 {
					b.Fatal(n, err)
				}
			}
			if name == "s3" {
				b.ReportMetric(float64(ct.n.Load()-before)/float64(b.N), "requests/op")
			}
		})
	}
}
