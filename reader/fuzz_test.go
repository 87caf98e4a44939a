package reader_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/sovm/sop-pme/internal/testkit/hostile"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/verify"
)

// FuzzOpen imports arbitrary bytes into a store and opens them as an object
// under a fixed key (32 zero bytes; the seeds are real objects re-sealed
// under it): Open, a full Scan, Verify and Check must never panic, whatever
// the bytes, and allocate no more than the input warrants.
func FuzzOpen(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzOpen", "*"))
	if len(seeds) == 0 {
		f.Fatal("no seed corpus in testdata/fuzz/FuzzOpen (go run testdata/gen.go)")
	}
	// The test vectors are seeds too: under the fixed key they exercise
	// verification and the footer region, not decryption.
	for _, v := range loadVectors(f) {
		f.Add(v.Object)
	}
	dek, err := pme.DEKFromBytes(make([]byte, 32))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		t.Parallel() // the seed inputs run in parallel; fuzzing ignores it
		ctx := context.Background()
		st := newMemStore()
		id := st.put(data)
		k := keys{id: dek}
		if rep, err := reader.Check(ctx, st, id, k); err == nil && rep.Conformant() && len(data) < 12 {
			t.Fatalf("a %d-byte object is conformant", len(data))
		}
		r, err := reader.Open(ctx, st, id, k)
		if err != nil {
			return
		}
		rr, err := r.Scan(ctx)
		if err != nil {
			return
		}
		defer rr.Release()
		for rr.Next() {
		}
		if err := r.Verify(ctx); err != nil {
			t.Fatalf("Verify of bytes just imported: %v", err)
		}
	})
}

// fuzzSeedMax is the size of the largest object kept as a seed file of
// FuzzPlaintext; the larger hostile cases are built and added at run time.
const fuzzSeedMax = 128 << 10

// FuzzPlaintext mutates the plaintext of an object, which a producer who
// holds the DEK controls: the decrypted footer, page headers and page
// bodies. An input is an object in the form hostile.Unseal gives (every
// module's plaintext in place of its ciphertext, the layout unchanged); the
// target seals every module again under a fixed key (32 zero bytes), imports
// the object, and reads it: Open, a full Scan, and Check. Nothing may
// panic, every error must match one of the packages' sentinels, and Check
// must report rather than fail.
//
// Seeds: testdata/fuzz/FuzzPlaintext (valid objects and the hostile cases
// up to 128 KiB, from go run testdata/gen.go), the hostile cases larger than
// that, and every test vector whose modules open under its DEK (the valid
// objects and DuckDB's files).
func FuzzPlaintext(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzPlaintext", "*"))
	if len(seeds) == 0 {
		f.Fatal("no seed corpus in testdata/fuzz/FuzzPlaintext (go run testdata/gen.go)")
	}
	dek := fuzzKey()
	for _, c := range hostileCases() {
		if c.err != nil {
			f.Fatalf("%s: %v", c.Name, c.err)
		}
		if b := c.obj; len(b) > fuzzSeedMax {
			plain, err := hostile.Unseal(b, dek)
			if err != nil {
				f.Fatalf("%s: %v", c.Name, err)
			}
			f.Add(plain)
		}
	}
	for _, v := range loadVectors(f) {
		k, err := pme.DEKFromBytes(v.DEK)
		if err != nil {
			continue
		}
		if plain, err := hostile.Unseal(v.Object, k); err == nil {
			f.Add(plain)
		}
	}
	f.Fuzz(func(t *testing.T, plain []byte) {
		t.Parallel() // the seed inputs run in parallel; fuzzing ignores it
		ctx := context.Background()
		st := hostile.NewStore()
		id := st.Put(hostile.Reseal(plain, dek), dek)
		if _, err := readObject(ctx, st, id); err != nil && !typed(err) {
			t.Fatalf("untyped error: %v", err)
		}
		if _, err := reader.Check(ctx, st, id, st); err != nil {
			t.Fatalf("Check: %v", err)
		}
	})
}

// typed reports whether err matches one of the sentinels a read may return.
func typed(err error) bool {
	for _, s := range []error{
		reader.ErrFormat, reader.ErrDecode, reader.ErrMemoryLimit, reader.ErrValueLimit, reader.ErrField,
		pme.ErrFormat, pme.ErrAuth, pme.ErrModule, pme.ErrUnsupported, pme.ErrPlaintextFooter, pme.ErrTooLarge,
		verify.ErrVerify, verify.ErrSize,
	} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}
