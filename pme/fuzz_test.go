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
// Thrift or not; what StripForReading leaves shows no entry it strips.
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
		footer.Append(nil)
		// (internal/seal's FuzzStripForReading compares what remains with
		// the editable tree's strip.)
		kvs, err := footer.KeyValues()
		for _, kv := range kvs {
			if err == nil && (padme.IsReserved(kv.Key) || kv.Key == pme.ArrowSchemaKey) {
				t.Fatalf("KeyValues after StripForReading shows %q", kv.Key)
			}
		}
	})
}
