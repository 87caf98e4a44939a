package seal_test

import (
	"errors"
	"runtime"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/sovm/sop-pme/internal/seal"
	"github.com/sovm/sop-pme/padme"
	"github.com/sovm/sop-pme/pme"
)

// padFooter seals a small plaintext file and returns its footer with the
// empty padding entry every object carries (Section 11.8).
func padFooter(t testing.TB, k pme.DEK) *seal.Footer {
	t.Helper()
	plain, _ := plainFile(t, 100, 100, compress.Codecs.Snappy)
	_, f, err := sealFiles(t, k, plain)
	if err != nil {
		t.Fatal(err)
	}
	f.AppendKeyValue(padme.PadKey, nil)
	return f
}

var errSink = errors.New("sink full")

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errSink }

func TestSetPad(t *testing.T) {
	t.Parallel()
	k := pme.NewDEK()
	f := padFooter(t, k)
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
	seal.StripTree(f)
	if err := f.SetPad(padme.Solve(0)); !errors.Is(err, seal.ErrLayout) {
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
		err := seal.PadFits(tc.footer, tc.pad)
		if (err == nil) != tc.ok || (err != nil && (!errors.Is(err, seal.ErrPadding) || !errors.Is(err, pme.ErrTooLarge))) {
			t.Errorf("footer of %d bytes, pad %+v: %v", tc.footer, tc.pad, err)
		}
	}
	f := padFooter(t, pme.NewDEK())
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := f.SetPad(padme.Pad{ValueLen: pme.MaxPadValue + 1})
	runtime.ReadMemStats(&after)
	if !errors.Is(err, seal.ErrPadding) {
		t.Fatalf("SetPad of 2^31 bytes: %v, want ErrPadding", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("SetPad allocated %d bytes before refusing", n)
	}
}
