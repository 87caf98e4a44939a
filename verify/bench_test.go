package verify

import (
	"context"
	"io"
	"testing"
	"time"

	"lukechampine.com/blake3"
)

// sum256MBps measures blake3.Sum256 over data, in MB/s (10^6 bytes), as the
// reference for the benchmarks' ratios.
func sum256MBps(data []byte) float64 {
	best := time.Duration(1 << 62)
	for range 3 {
		t0 := time.Now()
		blake3.Sum256(data)
		best = min(best, time.Since(t0))
	}
	return float64(len(data)) / best.Seconds() / 1e6
}

func reportRatio(b *testing.B, bytesPerOp int, refMBps float64) {
	mbps := float64(bytesPerOp) * float64(b.N) / b.Elapsed().Seconds() / 1e6
	b.ReportMetric(refMBps, "Sum256-MB/s")
	b.ReportMetric(mbps/refMBps, "x-Sum256")
}

// BenchmarkVerifiedRead reads a 256 MiB object in 1 MiB verified ranges
// through Reader.ReadAt from an in-memory Source (slices built by
// ExtractSlice from the data and its outboard), against blake3.Sum256 over
// the same bytes.
func BenchmarkVerifiedRead(b *testing.B) {
	const size, chunk = 256 << 20, 1 << 20
	data := randBytes(size, 1)
	src := newMemSource(b, data)
	r, err := NewReader(context.Background(), src, src.id)
	if err != nil {
		b.Fatal(err)
	}
	ref := sum256MBps(data)
	p := make([]byte, chunk)
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		for off := int64(0); off < size; off += chunk {
			if _, err := r.ReadAt(p, off); err != nil && err != io.EOF {
				b.Fatal(err)
			}
		}
	}
	reportRatio(b, size, ref)
}

// BenchmarkVerify checks a whole 256 MiB object with Verify.
func BenchmarkVerify(b *testing.B) {
	const size = 256 << 20
	data := randBytes(size, 1)
	src := newMemSource(b, data)
	ref := sum256MBps(data)
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		if err := Verify(context.Background(), src, src.id); err != nil {
			b.Fatal(err)
		}
	}
	reportRatio(b, size, ref)
}

// BenchmarkHasher computes the root and the outboard of a 256 MiB object
// written in 1 MiB pieces, against blake3.Sum256.
func BenchmarkHasher(b *testing.B) {
	const size, chunk = 256 << 20, 1 << 20
	data := randBytes(size, 2)
	ref := sum256MBps(data)
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		var h Hasher
		for off := 0; off < size; off += chunk {
			h.Write(data[off : off+chunk])
		}
		h.Sum()
		if err := h.WriteOutboard(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
	reportRatio(b, size, ref)
}

// BenchmarkSum256 is the reference: blake3.Sum256 over 256 MiB.
func BenchmarkSum256(b *testing.B) {
	const size = 256 << 20
	data := randBytes(size, 1)
	b.SetBytes(size)
	for b.Loop() {
		blake3.Sum256(data)
	}
}
