package thrift

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// FuzzDecode checks, for any input, that Decode does not panic; that an
// error is a *ParseError wrapping a sentinel; and that an accepted input
// re-encodes to exactly the bytes consumed, decodes again to the same tree,
// and reads the same with Apache Thrift (which accepts a superset).
//
// Seeds: the golden files in testdata, and testdata/fuzz/FuzzDecode (which
// go test adds by itself); the test fails if either is missing.
func FuzzDecode(f *testing.F) {
	for _, b := range golden(f) {
		f.Add(b)
	}
	corpus, err := os.ReadDir(filepath.Join("testdata", "fuzz", "FuzzDecode"))
	if err != nil || len(corpus) == 0 {
		f.Fatalf("no seeds in testdata/fuzz/FuzzDecode: %v", err)
	}
	sentinels := []error{ErrTruncated, ErrMalformed, ErrNonCanonical, ErrTooDeep, ErrTooLarge}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, n, err := Decode(b, Limits{MaxNodes: 1 << 16})
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Offset < 0 || pe.Offset > len(b) {
				t.Fatalf("bad error %v", err)
			}
			if !slices.ContainsFunc(sentinels, func(e error) bool { return errors.Is(err, e) }) {
				t.Fatalf("error %v wraps no sentinel", err)
			}
			return
		}
		out := s.Append(nil)
		if !bytes.Equal(out, b[:n]) {
			t.Fatalf("Append differs from the input:\n got % x\nwant % x", out, b[:n])
		}
		if l := s.EncodedLen(); l != n {
			t.Fatalf("EncodedLen = %d, want %d", l, n)
		}
		again, err := DecodeExact(out, Limits{})
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if !equalStruct(s, again) {
			t.Fatal("re-decoded tree differs")
		}
		ref, rn, err := apacheRead(b)
		if err != nil || rn != n || !equalStruct(ref, s) {
			t.Fatalf("Apache Thrift reads it differently: n=%d/%d err=%v", rn, n, err)
		}
	})
}

func benchFooter(b *testing.B) []byte {
	var largest []byte
	for name, data := range golden(b) {
		if len(name) > 7 && name[:7] == "footer-" && len(data) > len(largest) {
			largest = data
		}
	}
	return largest
}

func BenchmarkDecodeFooter(b *testing.B) {
	in := benchFooter(b)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Decode(in, Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendFooter(b *testing.B) {
	in := benchFooter(b)
	s, err := DecodeExact(in, Limits{})
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 0, len(in))
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		buf = s.Append(buf[:0])
	}
}
