//go:build iroh

package iroh

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"testing"

	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
)

const (
	benchObject = 64 << 20 // bytes per imported object
	benchRange  = 1 << 20  // bytes per range read
)

// benchImport writes a distinct 64 MiB object per iteration through
// blobs.Store, so no import is a duplicate.
func benchImport(b *testing.B, st blobs.Store) {
	ctx := context.Background()
	data := randBytes(900, benchObject)
	b.SetBytes(benchObject)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		binary.LittleEndian.PutUint64(data, uint64(i))
		p, err := st.Create(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for off := 0; off < len(data); off += 256 << 10 {
			if _, err := p.Write(data[off : off+256<<10]); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := p.Commit(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkImport(b *testing.B) {
	b.Run("iroh", func(b *testing.B) { benchImport(b, openStore(b, b.TempDir())) })
	b.Run("iroh-bytes", func(b *testing.B) {
		s := openStore(b, b.TempDir())
		ctx := context.Background()
		data := randBytes(901, benchObject)
		b.SetBytes(benchObject)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			binary.LittleEndian.PutUint64(data, uint64(i))
			if _, err := s.ImportBytes(ctx, data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("dir", func(b *testing.B) {
		d, err := blobs.CreateDir(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		benchImport(b, d)
	})
}

// benchSlices reads 1 MiB ranges of a 64 MiB object from src, at offsets
// that move through the object, either as raw slices or verified through a
// verify.Reader.
func benchSlices(b *testing.B, src verify.Source, id storageid.ID, verified bool) {
	ctx := context.Background()
	var r *verify.Reader
	if verified {
		var err error
		if r, err = verify.NewReader(ctx, src, id); err != nil {
			b.Fatal(err)
		}
	}
	p := make([]byte, benchRange)
	b.SetBytes(benchRange)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		off := uint64(i*benchRange*7) % (benchObject - benchRange)
		if verified {
			if _, err := r.ReadAt(p, int64(off)); err != nil {
				b.Fatal(err)
			}
			continue
		}
		rc, err := src.Slice(ctx, id, off, benchRange)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, rc); err != nil {
			b.Fatal(err)
		}
		rc.Close()
	}
}

func BenchmarkSlice(b *testing.B) {
	ctx := context.Background()
	data := randBytes(902, benchObject)
	s := openStore(b, b.TempDir())
	id, err := s.ImportBytes(ctx, data)
	if err != nil {
		b.Fatal(err)
	}
	d, err := blobs.CreateDir(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	p, err := d.Create(ctx)
	if err != nil {
		b.Fatal(err)
	}
	p.Write(data)
	if _, err := p.Commit(ctx); err != nil {
		b.Fatal(err)
	}

	b.Run("iroh", func(b *testing.B) { benchSlices(b, s, id, false) })
	b.Run("iroh-onebuffer", func(b *testing.B) { benchSlices(b, oneBuffer{s}, id, false) })
	b.Run("iroh-stream", func(b *testing.B) { benchSlices(b, streamed{s}, id, false) })
	b.Run("dir", func(b *testing.B) { benchSlices(b, d, id, false) })
	b.Run("iroh-verified", func(b *testing.B) { benchSlices(b, s, id, true) })
	b.Run("dir-verified", func(b *testing.B) { benchSlices(b, d, id, true) })
	// Each remote read fetches its range from another node over loopback
	// (the get protocol re-sends it even if held), then exports it locally.
	b.Run("iroh-remote-verified", func(b *testing.B) {
		addr, err := s.Serve(ctx)
		if err != nil {
			b.Fatal(err)
		}
		other := openStore(b, b.TempDir())
		benchSlices(b, other.Remote(addr), id, true)
	})
}

// BenchmarkVerify runs verify.Verify over a whole 256 MiB object, from the
// iroh store (streamed; and as one buffer, as Slice did before it streamed)
// and from the directory store, and reports the peak growth of
// the Go heap (HeapInuse) and of the resident set during one more, untimed,
// run.
func BenchmarkVerify(b *testing.B) {
	const size = 256 << 20
	ctx := context.Background()
	s := openStore(b, b.TempDir())
	id := writeBlob(b, s, 903, size)
	d, err := blobs.CreateDir(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	writeBlob(b, d, 903, size)
	for _, c := range []struct {
		name string
		src  verify.Source
	}{{"iroh", s}, {"iroh-onebuffer", oneBuffer{s}}, {"dir", d}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(size)
			for i := 0; i < b.N; i++ {
				if err := verify.Verify(ctx, c.src, id); err != nil {
					b.Fatal(err)
				}
			}
			// One more run, untimed, sampling memory every millisecond.
			b.StopTimer()
			var err error
			peak := measurePeak(func() { err = verify.Verify(ctx, c.src, id) })
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(peak.heap)/mib, "peak-heap-MiB")
			b.ReportMetric(float64(peak.rss)/mib, "peak-rss-MiB")
		})
	}
}

// BenchmarkSliceSizes reads slices of several sizes from the iroh store: in
// one call (sop_iroh_export_bao), streamed through a cursor, and through
// Store.Slice (a cursor read whole up to 1 MiB, streamed beyond).
func BenchmarkSliceSizes(b *testing.B) {
	ctx := context.Background()
	s := openStore(b, b.TempDir())
	id := writeBlob(b, s, 904, 64<<20)
	for _, n := range []uint64{1 << 10, 64 << 10, 128 << 10, 256 << 10, 512 << 10, 1 << 20, 4 << 20} {
		for _, c := range []struct {
			name string
			src  verify.Source
		}{{"onebuffer", oneBuffer{s}}, {"stream", streamed{s}}, {"Slice", s}} {
			b.Run(fmt.Sprintf("%dKiB/%s", n>>10, c.name), func(b *testing.B) {
				b.SetBytes(int64(n))
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					off := uint64(i) * 7 * n % (64<<20 - n)
					rc, err := c.src.Slice(ctx, id, off, n)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := io.Copy(io.Discard, rc); err != nil {
						b.Fatal(err)
					}
					rc.Close()
				}
			})
		}
	}
}

// oneBuffer is the iroh store with every slice exported in one call into one
// buffer (sop_iroh_export_bao), as Store.Slice does for small ranges.
type oneBuffer struct{ s *Store }

func (o oneBuffer) Slice(ctx context.Context, id storageid.ID, off, n uint64) (io.ReadCloser, error) {
	b, err := o.s.exportBao(ctx, id, off, n)
	if err != nil {
		return nil, err
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

// streamed is the iroh store with every slice streamed through a cursor, as
// Store.Slice does for large ranges.
type streamed struct{ s *Store }

func (o streamed) Slice(ctx context.Context, id storageid.ID, off, n uint64) (io.ReadCloser, error) {
	return o.s.openExport(ctx, id, off, n)
}
