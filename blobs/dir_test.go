package blobs_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"lukechampine.com/blake3/bao"

	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
)

var errInjected = errors.New("test: injected failure")

func randBytes(n int, seed uint64) []byte {
	b := make([]byte, n)
	var s [32]byte
	binary.LittleEndian.PutUint64(s[:], seed)
	rand.NewChaCha8(s).Read(b)
	return b
}

func openDir(t testing.TB) (*blobs.Dir, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "store")
	d, err := blobs.CreateDir(path)
	if err != nil {
		t.Fatal(err)
	}
	return d, path
}

// importBytes writes data to a new Pending in pieces and commits it.
func importBytes(ctx context.Context, d *blobs.Dir, data []byte) (storageid.ID, error) {
	p, err := d.Create(ctx)
	if err != nil {
		return storageid.ID{}, err
	}
	defer p.Abort()
	for rest := data; len(rest) > 0; {
		k := min(len(rest), 40000)
		if _, err := p.Write(rest[:k]); err != nil {
			return storageid.ID{}, err
		}
		rest = rest[k:]
	}
	return p.Commit(ctx)
}

// files returns the names in the store's directory.
func files(t *testing.T, path string) []string {
	t.Helper()
	entries, err := os.ReadDir(path)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

// wantFiles checks that the directory holds exactly the marker file and
// the objects ids (a .data and a .obao4 each), and nothing else: no
// temporary file and no lock file in particular.
func wantFiles(t *testing.T, path string, ids ...storageid.ID) {
	t.Helper()
	want := []string{"SOP-BLOB-STORE"}
	seen := map[storageid.ID]bool{}
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			want = append(want, id.String()+".data", id.String()+".obao4")
		}
	}
	sort.Strings(want)
	if got := files(t, path); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("directory holds %q, want %q", got, want)
	}
}

func TestImportAndRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, path := openDir(t)
	var ids []storageid.ID
	for _, size := range []int{0, 1, 1024, verify.GroupSize, verify.GroupSize + 1, 3*verify.GroupSize + 7, 1<<20 + 1} {
		data := randBytes(size, uint64(size))
		id, err := importBytes(ctx, d, data)
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		ids = append(ids, id)
		if id != storageid.Sum(data) {
			t.Fatalf("size %d: storage_id %s, want %s", size, id, storageid.Sum(data))
		}
		// (f) The outboard file is bao's outboard without its size prefix:
		// iroh-blobs' .obao4 format.
		ob, err := os.ReadFile(filepath.Join(path, id.String()+".obao4"))
		if err != nil {
			t.Fatal(err)
		}
		want, _ := bao.EncodeBuf(data, 4, true)
		if !bytes.Equal(ob, want[8:]) {
			t.Errorf("size %d: .obao4 differs from bao.Encode's outboard", size)
		}
		if err := verify.Verify(ctx, d, id, verify.WithExpectedSize(int64(size))); err != nil {
			t.Errorf("size %d: Verify: %v", size, err)
		}
		r, err := verify.NewReader(ctx, d, id)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]byte, size)
		if n, err := r.ReadAt(got, 0); n != size || (err != nil && err != io.EOF) || !bytes.Equal(got, data) {
			t.Errorf("size %d: ReadAt = %d, %v", size, n, err)
		}
	}
	wantFiles(t, path, ids...)
}

func TestIdempotent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, path := openDir(t)
	data := randBytes(100000, 1)
	id1, err := importBytes(ctx, d, data)
	if err != nil {
		t.Fatal(err)
	}
	p, err := d.Create(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p.Write(data)
	id2, err := p.Commit(ctx)
	if err != nil || id2 != id1 {
		t.Fatalf("second import: %s, %v", id2, err)
	}
	if err := p.Abort(); err != nil {
		t.Fatalf("Abort after Commit: %v", err)
	}
	wantFiles(t, path, id1)
	if err := verify.Verify(ctx, d, id1); err != nil {
		t.Fatal(err)
	}
}

func TestNotFound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, _ := openDir(t)
	id := storageid.Sum([]byte("absent"))
	if _, err := d.Slice(ctx, id, 0, 1); !errors.Is(err, blobs.ErrNotFound) {
		t.Errorf("Slice: %v", err)
	}
	if _, err := verify.NewReader(ctx, d, id); !errors.Is(err, blobs.ErrNotFound) {
		t.Errorf("NewReader: %v", err)
	}
	if err := verify.Verify(ctx, d, id); !errors.Is(err, blobs.ErrNotFound) {
		t.Errorf("Verify: %v", err)
	}
}

// failAfter fails every write after n bytes.
type failAfter struct {
	w io.Writer
	n int
}

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		k, _ := f.w.Write(p[:f.n])
		f.n = 0
		return k, errInjected
	}
	f.n -= len(p)
	return f.w.Write(p)
}

// (a) A write that fails mid-import leaves nothing.
func TestWriteFailure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, path := openDir(t)
	blobs.SetTestHooks(d, func(w io.Writer) io.Writer { return &failAfter{w: w, n: 100000} }, nil)
	p, err := d.Create(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var werr error
	for i := 0; i < 10 && werr == nil; i++ {
		_, werr = p.Write(randBytes(30000, uint64(i)))
	}
	if !errors.Is(werr, errInjected) {
		t.Fatalf("Write: %v", werr)
	}
	if _, err := p.Write([]byte{1}); !errors.Is(err, errInjected) {
		t.Fatalf("Write after a failure: %v", err)
	}
	if _, err := p.Commit(ctx); !errors.Is(err, errInjected) {
		t.Fatalf("Commit after a failed write: %v", err)
	}
	wantFiles(t, path)
}

// (a) A failure at any step of Commit leaves nothing.
func TestCommitStepFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	data := randBytes(5*verify.GroupSize+3, 2)
	for _, step := range blobs.CommitSteps {
		d, path := openDir(t)
		blobs.SetTestHooks(d, nil, func(s string) error {
			if s == step {
				return errInjected
			}
			return nil
		})
		if _, err := importBytes(ctx, d, data); !errors.Is(err, errInjected) {
			t.Errorf("failure at %s: Commit = %v", step, err)
		}
		wantFiles(t, path)
		// A later import of the same bytes succeeds.
		blobs.SetTestHooks(d, nil, nil)
		id, err := importBytes(ctx, d, data)
		if err != nil {
			t.Fatal(err)
		}
		wantFiles(t, path, id)
	}
}

// (b) A cancelled context at Commit leaves nothing.
func TestCancelledCommit(t *testing.T) {
	t.Parallel()
	d, path := openDir(t)
	ctx, cancel := context.WithCancel(context.Background())
	p, err := d.Create(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p.Write(randBytes(50000, 3))
	cancel()
	if _, err := p.Commit(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Commit: %v", err)
	}
	wantFiles(t, path)
	if _, err := d.Create(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Create: %v", err)
	}
	wantFiles(t, path)
	// Cancelled after the outboard is written, just before publishing.
	ctx, cancel = context.WithCancel(context.Background())
	blobs.SetTestHooks(d, nil, func(s string) error {
		if s == "sync-outboard" {
			cancel()
		}
		return nil
	})
	if _, err := importBytes(ctx, d, randBytes(50000, 4)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Commit cancelled mid-way: %v", err)
	}
	wantFiles(t, path)
}

// (c) Double Commit, Commit after Abort and Write after Commit fail with
// ErrClosed and leave nothing behind.
func TestClosed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, path := openDir(t)
	p, _ := d.Create(ctx)
	p.Write([]byte("object"))
	id, err := p.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Commit(ctx); !errors.Is(err, blobs.ErrClosed) {
		t.Errorf("double Commit: %v", err)
	}
	if _, err := p.Write([]byte("x")); !errors.Is(err, blobs.ErrClosed) {
		t.Errorf("Write after Commit: %v", err)
	}
	q, _ := d.Create(ctx)
	q.Write([]byte("other object"))
	if err := q.Abort(); err != nil {
		t.Fatal(err)
	}
	if err := q.Abort(); err != nil {
		t.Errorf("second Abort: %v", err)
	}
	if _, err := q.Commit(ctx); !errors.Is(err, blobs.ErrClosed) {
		t.Errorf("Commit after Abort: %v", err)
	}
	if _, err := q.Write([]byte("x")); !errors.Is(err, blobs.ErrClosed) {
		t.Errorf("Write after Abort: %v", err)
	}
	wantFiles(t, path, id)
}

// (d) Concurrent writers of the same and of different bytes.
func TestConcurrentWriters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, path := openDir(t)
	const writers, objects = 8, 4
	var mu sync.Mutex
	var ids []storageid.ID
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range objects {
				// Writers g and g+4 import the same bytes.
				data := randBytes(verify.GroupSize*(1+i)+g%4, uint64(g%4*objects+i))
				id, err := importBytes(ctx, d, data)
				if err != nil {
					t.Error(err)
					return
				}
				if id != storageid.Sum(data) {
					t.Error("wrong storage_id")
				}
				mu.Lock()
				ids = append(ids, id)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	wantFiles(t, path, ids...)
	distinct := map[storageid.ID]bool{}
	for _, id := range ids {
		distinct[id] = true
		if err := verify.Verify(ctx, d, id); err != nil {
			t.Errorf("%s: %v", id, err)
		}
	}
	if len(distinct) != writers/2*objects {
		t.Errorf("%d distinct objects, want %d", len(distinct), writers/2*objects)
	}
}

// (e) Reopening a store removes the temporary files of unfinished imports
// whose owner is gone, and the outboards left without their data, but not
// the files of an import still in progress, which then commits.
func TestReopenCleansTemps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, path := openDir(t)
	id, err := importBytes(ctx, d, randBytes(70000, 5))
	if err != nil {
		t.Fatal(err)
	}
	live, _ := d.Create(ctx) // in progress: its owner (this process) holds its lock
	live.Write(randBytes(20000, 6))
	orphan := storageid.Sum([]byte("orphan"))
	for _, name := range []string{
		".tmp-crashed.obao4",               // no lock file: its owner is gone
		".tmp-dead.data", ".tmp-dead.lock", // a free lock: its owner died
		".tmp-123456789.data",      // a temporary file of an earlier version
		".lock-" + id.String(),     // an object lock nobody holds
		orphan.String() + ".obao4", // an outboard without its data
	} {
		if err := os.WriteFile(filepath.Join(path, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if len(files(t, path)) != 11 {
		t.Fatalf("directory holds %q", files(t, path))
	}
	d2, err := blobs.OpenDir(path)
	if err != nil {
		t.Fatal(err)
	}
	got := files(t, path)
	if len(got) != 5 || !slices.Contains(got, id.String()+".data") || !slices.Contains(got, id.String()+".obao4") {
		t.Fatalf("after reopening, the directory holds %q, want the object, the marker and the live import's data and lock", got)
	}
	if err := verify.Verify(ctx, d2, id); err != nil {
		t.Fatal(err)
	}
	live.Write(randBytes(20000, 7))
	id2, err := live.Commit(ctx)
	if err != nil {
		t.Fatalf("the import in progress during the reopen: %v", err)
	}
	wantFiles(t, path, id, id2)
}

// (g) Corrupting a stored object makes verified reads of that region fail,
// and only of that region.
func TestCorruptData(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, path := openDir(t)
	const g = verify.GroupSize
	data := randBytes(6*g+500, 7)
	id, err := importBytes(ctx, d, data)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(path, id.String()+".data"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{data[2*g+100] ^ 1}, 2*g+100); err != nil {
		t.Fatal(err)
	}
	f.Close()

	r, err := verify.NewReader(ctx, d, id) // the last group is intact
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		off, n int
		bad    bool
	}{
		{2*g + 100, 1, true},
		{2 * g, g, true},
		{0, 6*g + 500, true},
		{g + 5, 2 * g, true},
		{0, 2 * g, false},
		{3 * g, g, false},
		{4*g - 1, 10, false},
		{6 * g, 500, false},
	} {
		p := bytes.Repeat([]byte{0xAA}, c.n)
		n, err := r.ReadAt(p, int64(c.off))
		if c.bad {
			if n != 0 || !errors.Is(err, verify.ErrVerify) || !bytes.Equal(p, make([]byte, c.n)) {
				t.Errorf("read [%d,+%d) of a corrupt region: %d, %v", c.off, c.n, n, err)
			}
		} else if err != nil || !bytes.Equal(p, data[c.off:c.off+c.n]) {
			t.Errorf("read [%d,+%d) of an intact region: %v", c.off, c.n, err)
		}
	}
	if err := verify.Verify(ctx, d, id); !errors.Is(err, verify.ErrVerify) {
		t.Errorf("Verify: %v", err)
	}

	// A corrupt outboard: the pair on the path to the last groups.
	id2, err := importBytes(ctx, d, data[:5*g])
	if err != nil {
		t.Fatal(err)
	}
	obPath := filepath.Join(path, id2.String()+".obao4")
	ob, _ := os.ReadFile(obPath)
	ob[0] ^= 1 // the root pair
	os.WriteFile(obPath, ob, 0o600)
	if _, err := verify.NewReader(ctx, d, id2); !errors.Is(err, verify.ErrVerify) {
		t.Errorf("NewReader with a corrupt outboard: %v", err)
	}

	// A truncated .data changes the size: the last group no longer
	// verifies.
	id3, err := importBytes(ctx, d, data[:4*g+9])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(path, id3.String()+".data"), 4*g); err != nil {
		t.Fatal(err)
	}
	if _, err := verify.NewReader(ctx, d, id3); !errors.Is(err, verify.ErrVerify) {
		t.Errorf("NewReader of a truncated object: %v", err)
	}
}

func TestSliceContext(t *testing.T) {
	t.Parallel()
	d, _ := openDir(t)
	id, err := importBytes(context.Background(), d, randBytes(100000, 8))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rc, err := d.Slice(ctx, id, 0, 100000)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	cancel()
	if _, err := io.ReadAll(rc); !errors.Is(err, context.Canceled) {
		t.Fatalf("reading a slice after cancel: %v", err)
	}
}

func BenchmarkImport(b *testing.B) {
	const size = 64 << 20
	ctx := context.Background()
	d, path := openDir(b)
	data := randBytes(size, 9)
	b.SetBytes(size)
	b.ReportAllocs()
	i := uint64(0)
	for b.Loop() {
		i++
		binary.LittleEndian.PutUint64(data, i) // a new object each time
		id, err := importBytes(ctx, d, data)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		os.Remove(filepath.Join(path, id.String()+".data"))
		os.Remove(filepath.Join(path, id.String()+".obao4"))
		b.StartTimer()
	}
}

// BenchmarkImportSmall imports 4 KiB objects: the fixed cost of an import
// (its fsyncs, and the lock files that guard it against other processes).
func BenchmarkImportSmall(b *testing.B) {
	ctx := context.Background()
	d, _ := openDir(b)
	data := randBytes(4096, 11)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	i := uint64(0)
	for b.Loop() {
		i++
		binary.LittleEndian.PutUint64(data, i) // a new object each time
		if _, err := importBytes(ctx, d, data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifiedRead reads a 64 MiB object from a Dir in 1 MiB verified
// ranges (the files in the page cache).
func BenchmarkVerifiedRead(b *testing.B) {
	const size, chunk = 64 << 20, 1 << 20
	ctx := context.Background()
	d, _ := openDir(b)
	id, err := importBytes(ctx, d, randBytes(size, 10))
	if err != nil {
		b.Fatal(err)
	}
	r, err := verify.NewReader(ctx, d, id)
	if err != nil {
		b.Fatal(err)
	}
	p := make([]byte, chunk)
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		for off := int64(0); off < size; off += chunk {
			if _, err := r.ReadAt(p, off); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkSmallRead reads one 16 KiB group at a time, verified, from a
// 4 MiB object in a Dir: the cost of a slice that is not its bytes (the
// files' opening, the proof's pairs), as a footer read or a point lookup
// pays it.
func BenchmarkSmallRead(b *testing.B) {
	const size, g = 4 << 20, verify.GroupSize
	ctx := context.Background()
	d, _ := openDir(b)
	id, err := importBytes(ctx, d, randBytes(size, 11))
	if err != nil {
		b.Fatal(err)
	}
	r, err := verify.NewReader(ctx, d, id)
	if err != nil {
		b.Fatal(err)
	}
	p := make([]byte, g)
	b.SetBytes(g)
	b.ReportAllocs()
	off := int64(0)
	for b.Loop() {
		if _, err := r.ReadAt(p, off); err != nil {
			b.Fatal(err)
		}
		off = (off + 37*g) % (size - g)
	}
}
