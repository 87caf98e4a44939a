package reader_test

import (
	"context"
	"testing"

	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/writer"
)

// TestStats: a projection verifies and opens only the footer and its
// chunks, and fetches them and their proofs; a full Verify adds the whole
// object; the counts only grow.
func TestStats(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema, rec := fiveColumns(t, 20000)
	defer rec.Release()
	st := newMemStore()
	obj := writeObject(t, st, schema, rec, writer.WithRowGroupRows(5000), writer.WithCodec(writer.Uncompressed))
	r, err := reader.Open(ctx, st, obj.StorageID, keys{obj.StorageID: obj.DEK})
	if err != nil {
		t.Fatal(err)
	}
	l := layoutOf(t, st.bytes(obj.StorageID), obj.DEK)
	open := r.Stats()
	footer := l.size - l.dataEnd // the footer region and the trailer
	if open.BytesVerified != footer || open.ModulesOpened != 1 || open.BytesFetched < footer {
		t.Fatalf("after Open: %+v; want %d bytes verified, 1 module", open, footer)
	}
	if n, err := scanColumn(ctx, r, 1); err != nil || n != 20000 {
		t.Fatalf("scan: %d rows, %v", n, err)
	}
	var chunkBytes int64
	for _, rg := range l.chunks {
		chunkBytes += rg[0].Len
	}
	var modules int64
	for _, m := range l.modules {
		for _, rg := range l.chunks {
			if m.Off >= rg[0].Off && m.End() <= rg[0].End() {
				modules++
			}
		}
	}
	scan := r.Stats()
	if got := scan.BytesVerified - open.BytesVerified; got != chunkBytes {
		t.Errorf("the projection verified %d bytes, its chunks are %d", got, chunkBytes)
	}
	if got := scan.ModulesOpened - open.ModulesOpened; got != modules {
		t.Errorf("the projection opened %d modules, its chunks hold %d", got, modules)
	}
	if got := scan.BytesFetched - open.BytesFetched; got < chunkBytes || got > chunkBytes+int64(len(l.chunks))*2*(16<<10)+4096 {
		t.Errorf("the projection fetched %d bytes for %d bytes of chunks", got, chunkBytes)
	}
	if err := r.Verify(ctx); err != nil {
		t.Fatal(err)
	}
	full := r.Stats()
	if got := full.BytesVerified - scan.BytesVerified; got != l.size {
		t.Errorf("Verify added %d verified bytes, the object has %d", got, l.size)
	}
	if full.BytesFetched-scan.BytesFetched < l.size {
		t.Errorf("Verify fetched %d bytes of a %d-byte object", full.BytesFetched-scan.BytesFetched, l.size)
	}
}
