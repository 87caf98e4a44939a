package writer_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/sovm/sop-pme/internal/testkit/memstore"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/writer"
)

// FuzzSealFile seals arbitrary bytes as a plaintext Parquet file, with
// field IDs assigned: no panic (arrow-go's schema code included); an error
// publishes nothing; an object that is published is conformant. The seeds
// are made by pme/testdata/gen_seal.go.
func FuzzSealFile(f *testing.F) {
	if seeds, _ := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzSealFile", "*")); len(seeds) == 0 {
		f.Fatal("no seed corpus in testdata/fuzz/FuzzSealFile (cd pme && go run testdata/gen_seal.go)")
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		st := newMemStore()
		obj, err := writer.SealFile(context.Background(), st, bytes.NewReader(b), int64(len(b)), writer.WithAssignFieldIDs())
		if err != nil {
			if st.count() != 0 || st.abortCount() != st.created {
				t.Fatalf("%v: %d published, %d staged, %d aborted", err, st.count(), st.created, st.abortCount())
			}
			return
		}
		ms := memstore.New()
		id := ms.Put(st.get(obj.StorageID))
		rep, err := reader.Check(context.Background(), ms, id, resolver{id: obj.DEK})
		if err != nil || !rep.Conformant() {
			t.Fatalf("a sealed object: %v %v", err, rep)
		}
	})
}
