package reader_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/reader"
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
