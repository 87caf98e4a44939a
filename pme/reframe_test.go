package pme_test

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/sovm/sop-pme/padme"
	"github.com/sovm/sop-pme/pme"
)

// plaintext writes n rows of a small table as plaintext Parquet with arrow-go
// (row groups of rg rows, codec c) and an empty padding entry, and returns
// the bytes and the column chunk spans of each row group.
func plaintext(t testing.TB, n, rg int, c compress.Compression) ([]byte, [][]pme.Span) {
	return plainFile(t, n, rg, c, padme.PadKey)
}

// reframe streams plain through a Reframer the way the writer does: the
// bytes of each row group, then its spans.
func reframe(t testing.TB, out io.Writer, k pme.DEK, plain []byte, spans [][]pme.Span) (*pme.Footer, error) {
	rf := pme.NewReframer(out, k)
	at := int64(0)
	for _, rg := range spans {
		end := rg[len(rg)-1].End()
		if _, err := rf.Write(plain[at:end]); err != nil {
			return nil, err
		}
		at = end
		if err := rf.FlushRowGroup(rg); err != nil {
			return nil, err
		}
	}
	if _, err := rf.Write(plain[at:]); err != nil {
		return nil, err
	}
	return rf.Close()
}

func TestReframe(t *testing.T) {
	for _, c := range []compress.Compression{compress.Codecs.Uncompressed, compress.Codecs.Zstd} {
		plain, spans := plaintext(t, 20000, 6000, c)
		k := pme.NewDEK()
		var out bytes.Buffer
		f, err := reframe(t, &out, k, plain, spans)
		if err != nil {
			t.Fatal(err)
		}
		obj := out.Bytes()
		if string(obj[:4]) != "PARE" {
			t.Fatal("no PARE")
		}
		// The footer's chunks tile the sealed region; opening all of a
		// chunk's modules gives back exactly the plaintext chunk.
		chunks, err := f.ColumnChunks()
		if err != nil {
			t.Fatal(err)
		}
		next := int64(4)
		for i, rg := range chunks {
			for j, c := range rg {
				if c.Off != next {
					t.Fatalf("chunk %d/%d at %d, want %d", i, j, c.Off, next)
				}
				got, err := k.OpenModules(nil, obj[c.Off:c.End()])
				if err != nil {
					t.Fatal(err)
				}
				want := plain[spans[i][j].Off:spans[i][j].End()]
				if !bytes.Equal(got, want) {
					t.Fatalf("chunk %d/%d: plaintext differs", i, j)
				}
				next = c.End()
			}
		}
		if next != int64(len(obj)) {
			t.Fatalf("chunks end at %d, output at %d", next, len(obj))
		}
	}
}

func TestReframeErrors(t *testing.T) {
	plain, spans := plaintext(t, 3000, 1000, compress.Codecs.Snappy)
	k := pme.NewDEK()
	t.Run("not PAR1", func(t *testing.T) {
		rf := pme.NewReframer(io.Discard, k)
		if _, err := rf.Write([]byte("PARE....")); !errors.Is(err, pme.ErrLayout) {
			t.Fatal(err)
		}
	})
	t.Run("chunk outside the buffer", func(t *testing.T) {
		rf := pme.NewReframer(io.Discard, k)
		rf.Write(plain[:spans[0][0].End()-1])
		if err := rf.FlushRowGroup(spans[0][:1]); !errors.Is(err, pme.ErrLayout) {
			t.Fatal(err)
		}
	})
	t.Run("span is not pages", func(t *testing.T) {
		rf := pme.NewReframer(io.Discard, k)
		rf.Write(plain[:spans[0][1].End()])
		bad := []pme.Span{{Off: spans[0][0].Off + 1, Len: spans[0][0].Len - 1}}
		if err := rf.FlushRowGroup(bad); !errors.Is(err, pme.ErrLayout) {
			t.Fatal(err)
		}
	})
	t.Run("chunk not flushed", func(t *testing.T) {
		_, err := reframe(t, io.Discard, k, plain, spans[:2])
		if !errors.Is(err, pme.ErrLayout) {
			t.Fatal(err)
		}
	})
	t.Run("no footer", func(t *testing.T) {
		rf := pme.NewReframer(io.Discard, k)
		rf.Write(plain[:100])
		if _, err := rf.Close(); !errors.Is(err, pme.ErrLayout) {
			t.Fatal(err)
		}
	})
	t.Run("sink fails", func(t *testing.T) {
		_, err := reframe(t, failWriter{}, k, plain, spans)
		if !errors.Is(err, errSink) {
			t.Fatal(err)
		}
	})
}

var errSink = errors.New("sink full")

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errSink }

func TestSetPad(t *testing.T) {
	plain, spans := plaintext(t, 100, 100, compress.Codecs.Snappy)
	k := pme.NewDEK()
	f, err := reframe(t, io.Discard, k, plain, spans)
	if err != nil {
		t.Fatal(err)
	}
	before := f.Len()
	for _, n := range []uint64{0, 1, 127, 128, 129, 16384, 16385, 16386} {
		if err := f.SetPad(padme.Solve(n)); err != nil {
			t.Fatal(err)
		}
		if got := uint64(f.Len() - before); got != n {
			t.Fatalf("pad %d grew the footer by %d", n, got)
		}
		m, _ := f.Seal(k)
		if len(m) != f.Len()+pme.Overhead {
			t.Fatalf("sealed footer of %d bytes", len(m))
		}
	}
	if err := f.SetPad(padme.Pad{ValueLen: pme.MaxPlaintext}); !errors.Is(err, pme.ErrTooLarge) {
		t.Fatal(err)
	}
	f.StripForReading()
	if err := f.SetPad(padme.Solve(0)); !errors.Is(err, pme.ErrLayout) {
		t.Fatalf("after StripForReading: %v", err)
	}
}

// TestSetPadLimit: a pad value is a Thrift binary, at most 2^31−1 bytes. A
// longer pad (Padmé asks for up to 4 GiB from 256 GiB) is refused with
// ErrPadding before it is allocated, where SetPad used to accept it and Seal
// to panic. The closed-form check is tested at the limits with faked footer
// lengths.
func TestSetPadLimit(t *testing.T) {
	for _, tc := range []struct {
		footer int
		pad    padme.Pad
		ok     bool
	}{
		{1000, padme.Pad{ValueLen: pme.MaxPadValue}, true},
		{1000, padme.Pad{ValueLen: pme.MaxPadValue, KeyTail: 1}, true},
		{1000, padme.Pad{ValueLen: pme.MaxPadValue + 1}, false},
		{1000, padme.Solve(3 << 30), false},
		{pme.MaxPlaintext - 100, padme.Pad{ValueLen: 95}, true},
		{pme.MaxPlaintext - 100, padme.Pad{ValueLen: 200}, false},
	} {
		err := pme.PadFits(tc.footer, tc.pad)
		if (err == nil) != tc.ok || (err != nil && (!errors.Is(err, pme.ErrPadding) || !errors.Is(err, pme.ErrTooLarge))) {
			t.Errorf("footer of %d bytes, pad %+v: %v", tc.footer, tc.pad, err)
		}
	}
	plain, spans := plaintext(t, 100, 100, compress.Codecs.Snappy)
	f, err := reframe(t, io.Discard, pme.NewDEK(), plain, spans)
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err = f.SetPad(padme.Pad{ValueLen: pme.MaxPadValue + 1})
	runtime.ReadMemStats(&after)
	if !errors.Is(err, pme.ErrPadding) {
		t.Fatalf("SetPad of 2^31 bytes: %v, want ErrPadding", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("SetPad allocated %d bytes before refusing", n)
	}
}

// BenchmarkReframe runs the re-framer alone on 64 MiB of plaintext Parquet
// (uncompressed, 1 MiB pages), as the writer streams it: target ≥ 1 GB/s.
func BenchmarkReframe(b *testing.B) {
	plain, spans := plaintext(b, 1_600_000, 400_000, compress.Codecs.Uncompressed)
	k := pme.NewDEK()
	b.SetBytes(int64(len(plain)))
	b.ReportMetric(float64(len(plain))/(1<<20), "plaintext-MiB")
	for b.Loop() {
		if _, err := reframe(b, io.Discard, k, plain, spans); err != nil {
			b.Fatal(err)
		}
	}
}
