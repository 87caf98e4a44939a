package writer_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/sovm/sop-pme/internal/testkit/memstore"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/writer"
)

// FuzzSealFile seals arbitrary bytes as a plaintext Parquet file, with
// field IDs assigned: no panic (arrow-go's schema code included); an error
// publishes nothing; an object that is published is conformant, and reads
// by every projection and scan option that changes its decoders. The seeds
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
		scanEveryWay(t, ms, id, obj.DEK)
	})
}

// scanEveryWay scans the object id every way that changes which decoder
// reads a chunk (each field alone, and all; with the scan options that
// change the types): the decode check covers them all, so every one reads.
func scanEveryWay(t *testing.T, src *memstore.Store, id storageid.ID, dek pme.DEK) {
	t.Helper()
	ctx := context.Background()
	r, err := reader.Open(ctx, src, id, resolver{id: dek})
	if err != nil {
		t.Fatalf("a sealed object: %v", err)
	}
	var projections [][]reader.ScanOption
	for _, f := range r.Schema().Fields() {
		if fid, ok := f.Metadata.GetValue("PARQUET:field_id"); ok {
			n, err := strconv.ParseInt(fid, 10, 32)
			if err == nil {
				projections = append(projections, []reader.ScanOption{reader.WithFields(int32(n))})
			}
		}
	}
	projections = append(projections, nil)
	for _, p := range projections {
		for _, extra := range [][]reader.ScanOption{nil, {reader.WithDictionaries(), reader.WithNarrowDecimals()}} {
			rr, err := r.Scan(ctx, append(append([]reader.ScanOption{}, p...), extra...)...)
			if err != nil {
				t.Fatalf("a sealed object: scan: %v", err)
			}
			for rr.Next() {
			}
			err = rr.Err()
			rr.Release()
			if err != nil {
				t.Fatalf("a sealed object: scan %d options: %v", len(p)+len(extra), err)
			}
		}
	}
}
