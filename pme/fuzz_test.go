package pme_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/sovm/sop-pme/padme"
	"github.com/sovm/sop-pme/pme"
)

// fuzzKey is the key the fuzz seeds are sealed under: 32 zero bytes.
func fuzzKey(t testing.TB) pme.DEK {
	k, err := pme.DEKFromBytes(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func requireSeeds(f *testing.F, name string) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "fuzz", name, "*"))
	if len(seeds) == 0 {
		f.Fatalf("no seed corpus in testdata/fuzz/%s (go run testdata/gen.go)", name)
	}
}

// FuzzParseFooterRegion parses arbitrary bytes as the footer region of a
// file (FileCryptoMetaData, then the footer module) and as a trailer: no
// panic; what parses is consistent with its input.
func FuzzParseFooterRegion(f *testing.F) {
	requireSeeds(f, "FuzzParseFooterRegion")
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) >= pme.TrailerSize {
			pme.ParseTrailer(b[len(b)-pme.TrailerSize:])
		}
		tail, err := pme.ParseFooterRegion(b)
		if err != nil {
			return
		}
		if tail.CryptoLen+pme.LenSize+len(tail.FooterBody) != len(b) {
			t.Fatalf("region of %d bytes parsed as %d + %d", len(b), tail.CryptoLen, len(tail.FooterBody))
		}
		if tail.Crypto.KeyMetadata != nil && !bytes.Contains(b[:tail.CryptoLen], tail.Crypto.KeyMetadata) {
			t.Fatal("key_metadata not from the input")
		}
	})
}

// FuzzOpenModules splits and opens arbitrary bytes as back-to-back modules
// under a fixed key: no panic, no allocation beyond the input, and on
// failure nothing released.
func FuzzOpenModules(f *testing.F) {
	requireSeeds(f, "FuzzOpenModules")
	k := fuzzKey(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := k.OpenModules(nil, b)
		if err != nil && len(out) != 0 {
			t.Fatal("plaintext released with an error")
		}
		if err == nil && len(out) > len(b) {
			t.Fatal("more plaintext than input")
		}
	})
}

// FuzzFooter seals arbitrary bytes as a footer under a fixed key and runs
// every footer accessor on what opens: no panic on any FileMetaData, valid
// Thrift or not.
func FuzzFooter(f *testing.F) {
	requireSeeds(f, "FuzzFooter")
	k := fuzzKey(f)
	f.Fuzz(func(t *testing.T, plain []byte) {
		m, err := k.Seal(nil, plain)
		if err != nil {
			t.Fatal(err)
		}
		footer, err := pme.OpenFooter(k, m[pme.LenSize:])
		if err != nil {
			return
		}
		if got := footer.Append(nil); !bytes.Equal(got, plain) {
			t.Fatal("a decoded footer does not re-encode to its bytes")
		}
		footer.ColumnChunks()
		footer.KeyValues()
		footer.Fields()
		footer.StripForReading()
		stripped := footer.Append(nil)
		// The View strips as the editable tree does.
		tree, err := pme.OpenFooter(k, m[pme.LenSize:])
		if err != nil {
			t.Fatal(err)
		}
		if want := pme.StripTree(tree); !bytes.Equal(stripped, want) {
			t.Fatalf("StripForReading on the View:\n% x\non the tree:\n% x", stripped, want)
		}
		kvs, err := footer.KeyValues()
		for _, kv := range kvs {
			if err == nil && (padme.IsReserved(kv.Key) || kv.Key == pme.ArrowSchemaKey) {
				t.Fatalf("KeyValues after StripForReading shows %q", kv.Key)
			}
		}
	})
}

// countWriter counts what is written to it.
type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// FuzzSeal seals arbitrary bytes as a plaintext Parquet file: no panic; an
// error leaves the Sealer failed; what seals gives a footer whose column
// chunks tile the data region written, and whose schema can be traced and
// given field IDs.
func FuzzSeal(f *testing.F) {
	requireSeeds(f, "FuzzSeal")
	k := fuzzKey(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		var out countWriter
		s := pme.NewSealer(&out, k)
		rgs := 0
		s.OnRowGroup(func(pme.SealedRowGroup) error { rgs++; return nil })
		if err := s.AddFile(bytes.NewReader(b), int64(len(b))); err != nil {
			if _, err2 := s.Close(); err2 == nil {
				t.Fatal("Close after a failed AddFile succeeded")
			}
			return
		}
		footer, err := s.Close()
		if err != nil {
			t.Fatal(err)
		}
		if out.n != s.Offset() {
			t.Fatalf("wrote %d bytes, Offset says %d", out.n, s.Offset())
		}
		chunks, err := footer.ColumnChunks()
		if err != nil || len(chunks) != rgs {
			t.Fatalf("%d row groups sealed, the footer has %d (%v)", rgs, len(chunks), err)
		}
		next := int64(4)
		for _, rg := range chunks {
			for _, c := range rg {
				if c.Off != next {
					t.Fatalf("a chunk at %d, the previous ends at %d", c.Off, next)
				}
				next = c.End()
			}
		}
		if next != s.Offset() && rgs > 0 {
			t.Fatalf("chunks end at %d, %d bytes written", next, s.Offset())
		}
		fields, err := footer.Fields()
		if err != nil {
			return
		}
		if _, err := footer.AppendSchema(nil, true); err != nil {
			t.Fatal(err)
		}
		ids := map[int]int32{}
		for i := range fields {
			ids[i+1] = int32(i)
		}
		footer.SetFieldIDs(ids)
	})
}
