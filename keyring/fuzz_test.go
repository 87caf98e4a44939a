package keyring_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/sovm/sop-pme/keyring"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/storageid"
)

// typed reports whether err is one of the errors a bad ring file may give.
func typed(err error) bool {
	for _, s := range []error{keyring.ErrFile, keyring.ErrLegacyFormat, keyring.ErrMaster,
		keyring.ErrWrongKEK, keyring.ErrUnwrap, keyring.ErrNotFound, keyring.ErrScrub, keyring.ErrRecord} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

func seeds(f *testing.F, dir string) {
	paths, _ := filepath.Glob(filepath.Join("testdata", "fuzz", dir, "*"))
	if len(paths) == 0 {
		f.Fatalf("no seed corpus in testdata/fuzz/%s", dir)
	}
}

// FuzzOpen feeds arbitrary ring files to Open, reads and writes them: no
// panic, a typed error for a bad file, and a DEK put into a file that opens
// resolves. The seeds (testdata/gen.go) are rings under the all-zero KEK
// holding the DEKs of storageid.Sum("0"), Sum("1"), ….
func FuzzOpen(f *testing.F) {
	seeds(f, "FuzzOpen")
	kek, _ := keyring.KEKFromBytes(make([]byte, keyring.KEKSize))
	known := []storageid.ID{storageid.Sum([]byte("0")), storageid.Sum([]byte("1")), storageid.Sum([]byte("99"))}
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		path := filepath.Join(t.TempDir(), "ring")
		os.WriteFile(path, data, 0o600)
		ro, err := keyring.Open(ctx, path, kek, keyring.WithReadOnly(), keyring.WithLockTimeout(time.Second))
		if err != nil {
			if !typed(err) {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		if _, err := ro.Len(ctx); err != nil && !typed(err) {
			t.Fatalf("Len: untyped error: %v", err)
		}
		for _, id := range known {
			if _, err := ro.ResolveDEK(ctx, id); err != nil && !typed(err) {
				t.Fatalf("ResolveDEK: untyped error: %v", err)
			}
		}
		err = ro.Records("catalog").View(ctx, func(tx *keyring.RecordTx) error {
			return tx.ForEach(func(k, v []byte) error { return nil })
		})
		if err != nil && !typed(err) {
			t.Fatalf("Records: untyped error: %v", err)
		}
		rw, err := keyring.Open(ctx, path, kek, keyring.WithLockTimeout(time.Second))
		if err != nil {
			if !typed(err) {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		id, d := storageid.Sum(data), pme.NewDEK()
		if err := rw.Put(ctx, id, d); err != nil {
			if !typed(err) {
				t.Fatalf("Put: untyped error: %v", err)
			}
			return
		}
		got, err := rw.ResolveDEK(ctx, id)
		if err != nil || !got.Equal(d) {
			t.Fatalf("a DEK put does not resolve: %v", err)
		}
		if err := rw.Delete(ctx, known[0]); err != nil && !typed(err) {
			t.Fatalf("Delete: untyped error: %v", err)
		}
		if err := rw.Rekey(ctx, nil); err != nil && !typed(err) {
			t.Fatalf("Rekey: untyped error: %v", err)
		}
	})
}

// FuzzImportV1 feeds arbitrary version-1 JSON rings to ImportV1: no panic,
// a typed error, and nothing imported from a file that fails. The seeds are
// files written by the version-1 code under the all-zero KEK.
func FuzzImportV1(f *testing.F) {
	seeds(f, "FuzzImportV1")
	kek, _ := keyring.KEKFromBytes(make([]byte, keyring.KEKSize))
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		dir := t.TempDir()
		src := filepath.Join(dir, "keyring.json")
		os.WriteFile(src, data, 0o600)
		r, err := keyring.Open(ctx, filepath.Join(dir, "ring"), keyring.NewKEK(), keyring.WithCreate())
		if err != nil {
			t.Fatal(err)
		}
		n, err := r.ImportV1(ctx, src, kek)
		held, lerr := r.Len(ctx)
		if lerr != nil {
			t.Fatal(lerr)
		}
		if err != nil {
			if !typed(err) {
				t.Fatalf("untyped error: %v", err)
			}
			if held != 0 {
				t.Fatalf("a failed import left %d DEKs", held)
			}
			return
		}
		if held != n {
			t.Fatalf("imported %d, the ring holds %d", n, held)
		}
	})
}

// BenchmarkPut measures one Put into a ring already holding 1k, 10k and
// 100k DEKs (filled in batches of 10k, one transaction each). The target is
// the 100k figure within 2× of the 1k figure; BenchmarkPutScaling reports
// that ratio from one run.
func BenchmarkPut(b *testing.B) {
	for _, held := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("held=%dk", held/1000), func(b *testing.B) {
			r := filledRing(b, held)
			ctx := context.Background()
			d := pme.NewDEK()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if err := r.Put(ctx, storageid.Sum(fmt.Appendf(nil, "bench %d", i)), d); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPutScaling times the same number of Puts into a ring of 1k DEKs
// and one of 100k, alternately, and reports the ratio of their mean costs.
func BenchmarkPutScaling(b *testing.B) {
	small, large := filledRing(b, 1_000), filledRing(b, 100_000)
	ctx := context.Background()
	d := pme.NewDEK()
	var ts, tl time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		if err := small.Put(ctx, storageid.Sum(fmt.Appendf(nil, "small %d", i)), d); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := large.Put(ctx, storageid.Sum(fmt.Appendf(nil, "large %d", i)), d); err != nil {
			b.Fatal(err)
		}
		ts, tl = ts+t1.Sub(t0), tl+time.Since(t1)
	}
	b.ReportMetric(float64(ts.Microseconds())/float64(b.N), "µs/put-1k")
	b.ReportMetric(float64(tl.Microseconds())/float64(b.N), "µs/put-100k")
	b.ReportMetric(float64(tl)/float64(ts), "ratio-100k/1k")
}

func filledRing(b testing.TB, n int) *keyring.Ring {
	b.Helper()
	ctx := context.Background()
	r := createRing(b, filepath.Join(b.TempDir(), "ring"), keyring.NewKEK())
	d := pme.NewDEK()
	batch := make([]keyring.Entry, 0, 10_000)
	for i := range n {
		batch = append(batch, keyring.Entry{ID: storageid.Sum(fmt.Appendf(nil, "fill %d", i)), DEK: d})
		if len(batch) == cap(batch) || i == n-1 {
			if err := r.PutBatch(ctx, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if got := ringLen(b, r); got != n {
		b.Fatalf("filled %d, holds %d", n, got)
	}
	return r
}

// BenchmarkOpenPerOperation measures what opening the file for every
// operation costs: ResolveDEK and Put against the same lookup and write
// through a bbolt database kept open (which would hold the file's lock and
// block every other Ring and process), on a ring of 10k DEKs.
func BenchmarkOpenPerOperation(b *testing.B) {
	ctx := context.Background()
	r := filledRing(b, 10_000)
	id := storageid.Sum([]byte("fill 5"))
	d := pme.NewDEK()
	b.Run("ResolveDEK", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := r.ResolveDEK(ctx, id); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Put", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if err := r.Put(ctx, storageid.Sum(fmt.Appendf(nil, "open %d", i)), d); err != nil {
				b.Fatal(err)
			}
		}
	})
	db, err := bolt.Open(r.Path(), 0o600, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	b.Run("bbolt-kept-open-get", func(b *testing.B) {
		for b.Loop() {
			db.View(func(tx *bolt.Tx) error {
				if tx.Bucket([]byte("deks")).Get(id[:]) == nil {
					b.Fatal("not found")
				}
				return nil
			})
		}
	})
	b.Run("bbolt-kept-open-put", func(b *testing.B) {
		v := make([]byte, 60)
		for i := 0; b.Loop(); i++ {
			k := storageid.Sum(fmt.Appendf(nil, "kept %d", i))
			if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("deks")).Put(k[:], v) }); err != nil {
				b.Fatal(err)
			}
		}
	})
}
