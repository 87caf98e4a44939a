package writer_test

import (
	"context"
	"testing"

	"github.com/sovm/sop-pme/writer"
)

// BenchmarkSealLarge seals the Parquet file named by SEAL_FILE (a large
// one: TPC-H's lineitem from tpchgen-cli) byte for byte into discardStore
// (sealing and hashing, no disk), with and without the decode check, in
// one run: "check" is SealFile as published, "nocheck" what the check
// costs it. MB/s are of the input file.
func BenchmarkSealLarge(b *testing.B) {
	f, size := writer.OpenSealFile(b)
	for _, c := range []struct {
		name string
		opts []writer.Option
	}{
		{"check", nil},
		{"nocheck", []writer.Option{writer.WithoutDecodeCheck()}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(size)
			for b.Loop() {
				if _, err := writer.SealFile(context.Background(), discardStore{}, f, size, c.opts...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
