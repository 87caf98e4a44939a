package reader_test

import (
	"context"
	"os"
	"testing"

	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/writer"
)

// BenchmarkOpen opens an object of 53 row groups of 16 columns (TPC-H sf1
// lineitem as tpchgen-cli writes it, sealed; SOP_PME_OPEN_FILE names
// another Parquet file): what every query pays before its first row.
func BenchmarkOpen(b *testing.B) {
	path := os.Getenv("SOP_PME_OPEN_FILE")
	if path == "" {
		home, _ := os.UserHomeDir()
		path = home + "/.cache/sop-pme/tpch-data/tpchgen-4.0.0-sf1/lineitem.parquet"
	}
	f, err := os.Open(path)
	if err != nil {
		b.Skipf("%v (make tpch-data generates it)", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	st, err := blobs.CreateDir(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	obj, err := writer.SealFile(ctx, st, f, fi.Size(), writer.WithAssignFieldIDs())
	if err != nil {
		b.Fatal(err)
	}
	k := keys{obj.StorageID: obj.DEK}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := reader.Open(ctx, st, obj.StorageID, k); err != nil {
			b.Fatal(err)
		}
	}
}
