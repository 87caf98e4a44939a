package reader_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/internal/testkit/memstore"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/writer"
)

// memStore is internal/testkit/memstore's in-memory store (a blobs.Store and a
// verify.Source that counts the bytes and slices it serves), under the
// names these tests use.
type memStore struct{ *memstore.Store }

func newMemStore() *memStore { return &memStore{memstore.New()} }

func (s *memStore) put(b []byte) storageid.ID { return s.Put(b) }

// putAs stores data under id with the given outboard, whatever their hash:
// untrusted storage holding damaged bytes.
func (s *memStore) putAs(id storageid.ID, data, ob []byte) { s.PutAs(id, data, ob) }

func (s *memStore) outboard(id storageid.ID) []byte { return s.OutboardOf(id) }

// bytes returns the stored bytes of id, for tests that tamper with them.
func (s *memStore) bytes(id storageid.ID) []byte { return s.Bytes(id) }

func errNotFound() error { return blobs.ErrNotFound }

// keys is a map KeyResolver.
type keys map[storageid.ID]pme.DEK

func (k keys) ResolveDEK(ctx context.Context, id storageid.ID) (pme.DEK, error) {
	d, ok := k[id]
	if !ok {
		return pme.DEK{}, fmt.Errorf("%w: %s", reader.ErrNoKey, id)
	}
	return d, nil
}

// writeObject writes rec, of schema, as one object into st with the
// writer's options.
func writeObject(t testing.TB, st *memStore, schema *arrow.Schema, rec arrow.RecordBatch, opts ...writer.Option) writer.Object {
	t.Helper()
	w, err := writer.New(context.Background(), st, schema, opts...)
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
	return obj
}
