//go:build iroh

package iroh

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/internal/testkit/benchdata"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
	"github.com/sovm/sop-pme/writer"
)

// keyMap is a KeyResolver over a map.
type keyMap map[storageid.ID]pme.DEK

func (k keyMap) ResolveDEK(ctx context.Context, id storageid.ID) (pme.DEK, error) {
	d, ok := k[id]
	if !ok {
		return pme.DEK{}, reader.ErrNoKey
	}
	return d, nil
}

// writeTable writes n rows of the benchmark table (5 columns, field IDs 1–5)
// through the writer into st, in row groups of rg rows, uncompressed so that
// the object is large enough to spread over many groups.
func writeTable(t testing.TB, st blobs.Store, n, rg int) (writer.Object, arrow.RecordBatch) {
	t.Helper()
	rec := benchdata.Record(n, 5)
	w, err := writer.New(context.Background(), st, benchdata.Schema(), writer.WithRowGroupRows(int64(rg)), writer.WithCodec(writer.Uncompressed))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	obj, err := w.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return obj, rec
}

// objectBytes reads the whole object through a verified reader.
func objectBytes(t testing.TB, src verify.Source, id storageid.ID) []byte {
	t.Helper()
	vr, err := verify.NewReader(context.Background(), src, id)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, vr.Size())
	if _, err := vr.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	return b
}

// chunksOf decrypts an object's footer and returns its column chunks and
// the size of its footer region (with the trailer).
func chunksOf(t testing.TB, data []byte, dek pme.DEK) ([][]pme.Span, int64) {
	t.Helper()
	flen := int64(binary.LittleEndian.Uint32(data[len(data)-8:]))
	start := int64(len(data)) - 8 - flen
	tail, err := pme.ParseFooterRegion(data[start : len(data)-8])
	if err != nil {
		t.Fatal(err)
	}
	f, err := pme.OpenFooter(dek, tail.FooterBody)
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := f.ColumnChunks()
	if err != nil {
		t.Fatal(err)
	}
	return chunks, int64(len(data)) - start
}

// scan reads the given field IDs (none: all) and returns the columns.
func scan(ctx context.Context, r *reader.Reader, fields ...int32) ([]arrow.Array, error) {
	var opts []reader.ScanOption
	if len(fields) > 0 {
		opts = append(opts, reader.WithFields(fields...))
	}
	rr, err := r.Scan(ctx, opts...)
	if err != nil {
		return nil, err
	}
	defer rr.Release()
	var parts [][]arrow.Array
	for rr.Next() {
		rec := rr.RecordBatch()
		if parts == nil {
			parts = make([][]arrow.Array, rec.NumCols())
		}
		for j := range parts {
			rec.Column(j).Retain()
			parts[j] = append(parts[j], rec.Column(j))
		}
	}
	if err := rr.Err(); err != nil {
		return nil, err
	}
	out := make([]arrow.Array, len(parts))
	for j, p := range parts {
		c, err := array.Concatenate(p, memory.DefaultAllocator)
		if err != nil {
			return nil, err
		}
		out[j] = c
	}
	return out, nil
}

// TestPipeline: writer → iroh FsStore → reader, values equal; the
// storage_id iroh returns is storageid.Sum of the object's bytes and the
// directory store's id for the same bytes; a reopened store still serves it.
func TestPipeline(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	dir := t.TempDir()
	s := openStore(t, dir)
	obj, rec := writeTable(t, s, 60_000, 20_000)
	defer rec.Release()
	keys := keyMap{obj.StorageID: obj.DEK}

	r, err := reader.Open(ctx, s, obj.StorageID, keys)
	if err != nil {
		t.Fatal(err)
	}
	cols, err := scan(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	for j, c := range cols {
		if !array.Equal(c, rec.Column(j)) {
			t.Fatalf("column %d differs after the round trip through iroh", j)
		}
	}
	if err := r.Verify(ctx); err != nil {
		t.Fatal(err)
	}
	rep, err := reader.Check(ctx, s, obj.StorageID, keys)
	if err != nil || !rep.Conformant() {
		t.Fatalf("conformance over iroh: %v, %v", rep, err)
	}

	data := objectBytes(t, s, obj.StorageID)
	if storageid.Sum(data) != obj.StorageID {
		t.Fatal("iroh's storage_id is not the BLAKE3 of the object's bytes")
	}
	d, err := blobs.CreateDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p, _ := d.Create(ctx)
	p.Write(data)
	if id, err := p.Commit(ctx); err != nil || id != obj.StorageID {
		t.Fatalf("directory store id %v, %v; iroh %v", id, err, obj.StorageID)
	}

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	r2, err := reader.Open(ctx, s2, obj.StorageID, keys)
	if err != nil {
		t.Fatalf("reopened store: %v", err)
	}
	if got, err := scan(ctx, r2, 1); err != nil || got[0].Len() != 60_000 {
		t.Fatalf("reopened store: %v", err)
	}
}

// findData returns the path of the blob's data file in iroh's store
// directory.
func findData(t testing.TB, dir string, id storageid.ID) string {
	t.Helper()
	var found string
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && filepath.Base(p) == id.String()+".data" {
			found = p
		}
		return nil
	})
	if found == "" {
		t.Fatalf("no %s.data under %s", id, dir)
	}
	return found
}

// TestCorruptObjectFailsClosed corrupts one column chunk in the .data file
// inside iroh's store after import: every read touching it fails with a
// typed error, full verification fails, other columns still read and the
// object is not reported verified.
func TestCorruptObjectFailsClosed(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	dir := t.TempDir()
	s := openStore(t, dir)
	obj, rec := writeTable(t, s, 60_000, 20_000)
	defer rec.Release()
	keys := keyMap{obj.StorageID: obj.DEK}
	data := objectBytes(t, s, obj.StorageID)
	chunks, _ := chunksOf(t, data, obj.DEK)
	target := chunks[1][2] // row group 1, column 3 (the strings)
	path := findData(t, dir, obj.StorageID)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	mid := target.Off + target.Len/2
	b := []byte{0}
	f.ReadAt(b, mid)
	b[0] ^= 0x20
	f.WriteAt(b, mid)
	f.Close()

	r, err := reader.Open(ctx, s, obj.StorageID, keys)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := scan(ctx, r, 3); err == nil {
		t.Fatal("a scan of the damaged column succeeded")
	} else if !errors.Is(err, ErrCorrupt) && !errors.Is(err, verify.ErrVerify) {
		t.Fatalf("scan of the damaged column: %v, want ErrCorrupt or verify.ErrVerify", err)
	}
	// Column 1's chunks lie in other 16 KiB groups (uncompressed chunks are
	// hundreds of KiB): it still reads.
	if got, err := scan(ctx, r, 1); err != nil || got[0].Len() != 60_000 {
		t.Fatalf("untouched column: %v", err)
	}
	if r.Verified() {
		t.Fatal("verified after projections")
	}
	if err := r.Verify(ctx); err == nil || r.Verified() {
		t.Fatalf("Verify of a damaged object: %v", err)
	}
}

// TestRemoteProjection: node B reads a projection of an object held only
// by node A, over 127.0.0.1. The bytes transferred are the footer, the
// projected chunks and their proofs, not the object.
func TestRemoteProjection(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	a := openStore(t, t.TempDir())
	b := openStore(t, t.TempDir())
	obj, rec := writeTable(t, a, 200_000, 50_000)
	defer rec.Release()
	keys := keyMap{obj.StorageID: obj.DEK}
	addr, err := a.Serve(ctx)
	if err != nil {
		t.Fatal(err)
	}
	data := objectBytes(t, a, obj.StorageID)
	chunks, footer := chunksOf(t, data, obj.DEK)

	remote := b.Remote(addr)
	r, err := reader.Open(ctx, remote, obj.StorageID, keys)
	if err != nil {
		t.Fatal(err)
	}
	got, err := scan(ctx, r, 5) // the bool column: the smallest chunks
	if err != nil {
		t.Fatal(err)
	}
	if !array.Equal(got[0], rec.Column(4)) {
		t.Fatal("remote projection differs")
	}
	// What the projection needs: the footer region, the last group (the
	// size proof), and column 5's chunks, each rounded out to whole 16 KiB
	// groups (at most 2 extra groups per range), plus proofs: per range the
	// 8-byte size and one 64-byte pair per tree level.
	ranges := int64(len(chunks) + 2)
	levels := int64(0)
	for g := (int64(len(data)) + verify.GroupSize - 1) / verify.GroupSize; g > 1; g = (g + 1) / 2 {
		levels++
	}
	need := footer + verify.GroupSize
	for _, rg := range chunks {
		need += rg[4].Len
	}
	bound := need + ranges*(2*verify.GroupSize+8+64*levels)
	recv := int64(remote.BytesReceived())
	t.Logf("object %d bytes; projection needs %d; received %d (%.3f of the need, %.4f of the object); bound %d",
		len(data), need, recv, float64(recv)/float64(need), float64(recv)/float64(len(data)), bound)
	if recv > bound || recv < need {
		t.Fatalf("received %d bytes, want between %d and %d", recv, need, bound)
	}
	if recv > int64(len(data))/4 {
		t.Fatalf("received %d of %d bytes: the projection fetched most of the object", recv, len(data))
	}
	if r.Verified() {
		t.Fatal("a remote projection made the object count as verified")
	}
}

// TestRemoteCorruptObject: node A serves an object whose data file was
// damaged after import; B's read of the damaged region fails with a typed
// error, and B keeps none of it.
func TestRemoteCorruptObject(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	dirA := t.TempDir()
	a := openStore(t, dirA)
	b := openStore(t, t.TempDir())
	obj, rec := writeTable(t, a, 60_000, 20_000)
	defer rec.Release()
	keys := keyMap{obj.StorageID: obj.DEK}
	addr, err := a.Serve(ctx)
	if err != nil {
		t.Fatal(err)
	}
	data := objectBytes(t, a, obj.StorageID)
	chunks, _ := chunksOf(t, data, obj.DEK)
	path := findData(t, dirA, obj.StorageID)
	f, _ := os.OpenFile(path, os.O_RDWR, 0)
	mid := chunks[0][1].Off + chunks[0][1].Len/2
	f.WriteAt([]byte{0xFF, 0xFF, 0xFF, 0xFF}, mid)
	f.Close()

	r, err := reader.Open(ctx, b.Remote(addr), obj.StorageID, keys)
	if err != nil {
		t.Fatal(err)
	}
	_, err = scan(ctx, r, 2)
	if !errors.Is(err, ErrRemote) && !errors.Is(err, ErrCorrupt) && !errors.Is(err, verify.ErrVerify) {
		t.Fatalf("remote read of damaged data: %v, want a typed transfer or verification error", err)
	}
	if _, err := b.Slice(ctx, obj.StorageID, uint64(mid), 1); err == nil {
		t.Fatal("B kept the damaged range")
	}
}

// BenchmarkRemoteProjection reads one column of a 200,000-row object
// through the reader from node A over loopback (a fresh node B each time)
// and from A's store locally, and reports the ratio.
func BenchmarkRemoteProjection(b *testing.B) {
	ctx := context.Background()
	a := openStore(b, b.TempDir())
	obj, rec := writeTable(b, a, 200_000, 50_000)
	rec.Release()
	keys := keyMap{obj.StorageID: obj.DEK}
	addr, err := a.Serve(ctx)
	if err != nil {
		b.Fatal(err)
	}
	read := func(src verify.Source) {
		r, err := reader.Open(ctx, src, obj.StorageID, keys)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := scan(ctx, r, 3); err != nil {
			b.Fatal(err)
		}
	}
	var local, remote time.Duration
	var recv uint64
	for i := 0; b.Loop(); i++ {
		node := openStore(b, filepath.Join(b.TempDir(), fmt.Sprint(i)))
		rm := node.Remote(addr)
		t0 := time.Now()
		read(a)
		t1 := time.Now()
		read(rm)
		local += t1.Sub(t0)
		remote += time.Since(t1)
		recv = rm.BytesReceived()
		node.Close()
	}
	b.ReportMetric(float64(remote)/float64(local), "remote/local")
	b.ReportMetric(float64(recv), "bytes-received")
	b.ReportMetric(float64(obj.Size), "object-bytes")
}
