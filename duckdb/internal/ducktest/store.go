// Package ducktest holds what the tests of package sopsql and of the DuckDB
// interop suite share: a directory store that remembers the DEK of each
// object it holds, DuckDB rows as duckdb-go scans them, the SQL that hands
// DuckDB a key or field IDs, files DuckDB writes encrypted, and the
// comparison of values. Only tests (and the corpus check, make corpus) use
// it.
package ducktest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/writer"
)

// Keys is a reader.KeyResolver over a map: storage_id → DEK (SOP-PME-1
// Section 11.5: keys are found by storage_id, never by the key_ref).
type Keys map[storageid.ID]pme.DEK

// ResolveDEK returns the DEK of id, or an error matching reader.ErrNoKey.
func (k Keys) ResolveDEK(_ context.Context, id storageid.ID) (pme.DEK, error) {
	dek, ok := k[id]
	if !ok {
		return pme.DEK{}, fmt.Errorf("ducktest: %s: %w", id, reader.ErrNoKey)
	}
	return dek, nil
}

// A Store is the library's directory store, blobs.Dir, which keeps each
// object as <Root>/<hex storage_id>.data, in a test's temporary directory:
// DuckDB's read_parquet gets that path, as a user handing DuckDB the file
// and the DEK would. It is also a reader.KeyResolver of the DEKs given with
// Write, Import and ImportFile.
type Store struct {
	*blobs.Dir
	Root string
	Keys Keys
}

// ResolveDEK resolves the DEKs of the objects written or imported.
func (s *Store) ResolveDEK(ctx context.Context, id storageid.ID) (pme.DEK, error) {
	return s.Keys.ResolveDEK(ctx, id)
}

// NewStore returns an empty Store in a directory of t's.
func NewStore(t testing.TB) *Store {
	t.Helper()
	dir := t.TempDir()
	d, err := blobs.CreateDir(dir)
	if err != nil {
		t.Fatalf("blobs.CreateDir: %v", err)
	}
	return &Store{Dir: d, Root: dir, Keys: Keys{}}
}

// Path returns the file in which the store keeps object id.
func (s *Store) Path(id storageid.ID) string {
	return filepath.Join(s.Root, id.String()+".data")
}

// Write writes recs as one object with the writer, and records its DEK.
func (s *Store) Write(t testing.TB, schema *arrow.Schema, recs []arrow.RecordBatch, opts ...writer.Option) writer.Object {
	t.Helper()
	w, err := writer.New(context.Background(), s, schema, opts...)
	if err != nil {
		t.Fatalf("writer.New: %v", err)
	}
	for _, rec := range recs {
		if err := w.Write(rec); err != nil {
			t.Fatalf("Write: %v", err)
		}
	}
	obj, err := w.Close(context.Background())
	if err != nil {
		t.Fatalf("Close: %v", err)
	}
	s.Keys[obj.StorageID] = obj.DEK
	return obj
}

// Import imports data, as a Pending committed to the store, as an object
// whose DEK is dek, and returns its storage_id. It checks that the store
// names the bytes by their BLAKE3 root.
func (s *Store) Import(t testing.TB, data []byte, dek pme.DEK) storageid.ID {
	t.Helper()
	ctx := context.Background()
	p, err := s.Create(ctx)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	defer p.Abort()
	if _, err := p.Write(data); err != nil {
		t.Fatalf("Pending.Write: %v", err)
	}
	id, err := p.Commit(ctx)
	if err != nil {
		t.Fatalf("Pending.Commit: %v", err)
	}
	if want := storageid.Sum(data); id != want {
		t.Fatalf("the store named %d bytes %v, their BLAKE3 root is %v", len(data), id, want)
	}
	s.Keys[id] = dek
	return id
}

// ImportFile imports the file at path (see Import), and returns its
// storage_id and its bytes.
func (s *Store) ImportFile(t testing.TB, path string, dek pme.DEK) (storageid.ID, []byte) {
	t.Helper()
	data := ReadFile(t, path)
	return s.Import(t, data, dek), data
}

// Bytes returns the stored bytes of id, read from the store's file: what a
// user handing DuckDB the file would read, verified by nobody.
func (s *Store) Bytes(t testing.TB, id storageid.ID) []byte {
	t.Helper()
	return ReadFile(t, s.Path(id))
}

// ReadFile returns the bytes of the file at path.
func ReadFile(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return data
}

// A Footer is an object's footer, decrypted, and where its parts are.
type Footer struct {
	*pme.Footer
	DataEnd int      // where the data region ends: the footer region, then the trailer, follow
	Tail    pme.Tail // the footer region
}

// OpenFooter decrypts the footer of an object's bytes with dek.
func OpenFooter(t testing.TB, data []byte, dek pme.DEK) Footer {
	t.Helper()
	flen, err := pme.ParseTrailer(data[len(data)-pme.TrailerSize:])
	if err != nil {
		t.Fatal(err)
	}
	dataEnd := len(data) - pme.TrailerSize - int(flen)
	tail, err := pme.ParseFooterRegion(data[dataEnd : len(data)-pme.TrailerSize])
	if err != nil {
		t.Fatal(err)
	}
	footer, err := pme.OpenFooter(dek, tail.FooterBody)
	if err != nil {
		t.Fatal(err)
	}
	return Footer{Footer: footer, DataEnd: dataEnd, Tail: tail}
}
