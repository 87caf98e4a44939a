package writer_test

import (
	"context"
	"os"
	"testing"

	"github.com/sovm/sop-pme/writer"
)

// BenchmarkSealLarge seals the Parquet file named by SEAL_FILE (a large
// one: TPC-H's lineitem from tpchgen-cli) byte for byte into discardStore
// (sealing and hashing, no disk), with and without the decode check, in
// one run: "check" is SealFile as published, "nocheck" what the check
// costs it. MB/s are of the input file. Without SEAL_FILE it is skipped
// (a benchmark, never run by go test alone).
func BenchmarkSealLarge(b *testing.B) {
	name := os.Getenv("SEAL_FILE")
	if name == "" {
		b.Skip("SEAL_FILE names no file")
	}
	f, err := os.Open(name)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		opts []writer.Option
	}{
		{"check", nil},
		{"nocheck", []writer.Option{writer.WithoutDecodeCheck()}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(st.Size())
			for b.Loop() {
				if _, err := writer.SealFile(context.Background(), discardStore{}, f, st.Size(), c.opts...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
