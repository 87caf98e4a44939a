package writer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/sovm/sop-pme/writer"

	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/storageid"
)

// memStore is a Store that keeps blobs in memory, for tests that need the
// exact bytes of an object.
type memStore struct {
	mu        sync.Mutex
	blobs     map[storageid.ID][]byte
	created   int
	aborted   int
	failAfter int // if > -1, staged writes fail with errDiskFull after this many bytes
}

var errDiskFull = errors.New("memStore: no space left")

func newMemStore() *memStore { return &memStore{blobs: make(map[storageid.ID][]byte), failAfter: -1} }

func (s *memStore) Create(ctx context.Context) (blobs.Pending, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.created++
	return &memPending{s: s}, nil
}

func (s *memStore) get(id storageid.ID) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.blobs[id]
}

func (s *memStore) abortCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.aborted
}

func (s *memStore) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.blobs)
}

type memPending struct {
	s    *memStore
	buf  bytes.Buffer
	done bool
}

func (p *memPending) Write(b []byte) (int, error) {
	if p.done {
		return 0, errors.New("memPending: done")
	}
	if f := p.s.failAfter; f >= 0 && p.buf.Len()+len(b) > f {
		n, _ := p.buf.Write(b[:f-p.buf.Len()])
		return n, errDiskFull
	}
	return p.buf.Write(b)
}

func (p *memPending) Commit(ctx context.Context) (storageid.ID, error) {
	if p.done {
		return storageid.ID{}, errors.New("memPending: done")
	}
	p.done = true
	id := storageid.Sum(p.buf.Bytes())
	p.s.mu.Lock()
	p.s.blobs[id] = bytes.Clone(p.buf.Bytes())
	p.s.mu.Unlock()
	return id, nil
}

func (p *memPending) Abort() error {
	if !p.done {
		p.s.mu.Lock()
		p.s.aborted++
		p.s.mu.Unlock()
	}
	p.done = true
	p.buf.Reset()
	return nil
}

// writeObject writes recs with opts into st and returns the Object.
func writeObject(t *testing.T, st blobs.Store, schema *arrow.Schema, recs []arrow.RecordBatch, opts ...writer.Option) writer.Object {
	t.Helper()
	w, err := writer.New(context.Background(), st, schema, opts...)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	obj, err := w.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

func fieldID(id int) arrow.Metadata {
	return arrow.NewMetadata([]string{writer.FieldIDKey}, []string{strconv.Itoa(id)})
}

// testTable returns a schema of flat and nested columns, every field with a
// field ID, and a record of n deterministic rows. A non-empty canary goes
// into column names, string values, and long strings whose min/max
// statistics make the ColumnMetaData exceed 4 KiB.
func testTable(t *testing.T, n int, canary string) (*arrow.Schema, arrow.RecordBatch) {
	t.Helper()
	name := func(s string) string {
		if canary != "" {
			return s + "-" + canary
		}
		return s
	}
	nf := func(s string, typ arrow.DataType, id int) arrow.Field {
		return arrow.Field{Name: s, Type: typ, Nullable: true, Metadata: fieldID(id)}
	}
	schema := arrow.NewSchema([]arrow.Field{
		nf(name("id"), arrow.PrimitiveTypes.Int64, 1),
		nf(name("x"), arrow.PrimitiveTypes.Float64, 2),
		nf(name("s"), arrow.BinaryTypes.String, 3),
		nf(name("ts"), &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, 4),
		nf(name("ok"), arrow.FixedWidthTypes.Boolean, 5),
		nf(name("tags"), arrow.ListOfField(nf("element", arrow.BinaryTypes.String, 7)), 6),
		nf(name("pt"), arrow.StructOf(nf("a", arrow.PrimitiveTypes.Int32, 9), nf("b", arrow.BinaryTypes.String, 10)), 8),
		nf(name("m"), arrow.MapOfFields(
			arrow.Field{Name: "key", Type: arrow.BinaryTypes.String, Metadata: fieldID(12)},
			nf("value", arrow.PrimitiveTypes.Int64, 13)), 11),
		nf(name("long"), arrow.BinaryTypes.String, 14),
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.Float64Builder).Append(rng.NormFloat64())
		b.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("%s-%d", canary, rng.IntN(1000)))
		if i%20 == 7 {
			b.Field(3).AppendNull()
		} else {
			b.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000_000_000 + int64(i)))
		}
		b.Field(4).(*array.BooleanBuilder).Append(i%3 == 0)
		lb := b.Field(5).(*array.ListBuilder)
		lb.Append(true)
		for j := range i % 4 {
			lb.ValueBuilder().(*array.StringBuilder).Append(fmt.Sprintf("%s/tag%d", canary, j))
		}
		sb := b.Field(6).(*array.StructBuilder)
		sb.Append(true)
		sb.FieldBuilder(0).(*array.Int32Builder).Append(int32(i * 7))
		sb.FieldBuilder(1).(*array.StringBuilder).Append(canary + "b")
		mb := b.Field(7).(*array.MapBuilder)
		mb.Append(true)
		mb.KeyBuilder().(*array.StringBuilder).Append(canary + "k")
		mb.ItemBuilder().(*array.Int64Builder).Append(int64(i))
		b.Field(8).(*array.StringBuilder).Append(strings.Repeat(canary+"L", 3000/(len(canary)+1)) + strconv.Itoa(i))
	}
	return schema, b.NewRecordBatch()
}
