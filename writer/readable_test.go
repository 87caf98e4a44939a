package writer_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/internal/testkit/memstore"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/writer"
)

// committing is a memstore that counts the objects committed to it.
type committing struct {
	*memstore.Store
	commits atomic.Int64
}

func (c *committing) Create(ctx context.Context) (blobs.Pending, error) {
	p, err := c.Store.Create(ctx)
	if err != nil {
		return nil, err
	}
	return &countedPending{p, c}, nil
}

type countedPending struct {
	blobs.Pending
	c *committing
}

func (p *countedPending) Commit(ctx context.Context) (storageid.ID, error) {
	id, err := p.Pending.Commit(ctx)
	if err == nil {
		p.c.commits.Add(1)
	}
	return id, err
}

// readAll opens obj in st and reads every row with the reader's defaults.
func readAll(t *testing.T, st *committing, obj writer.Object) int64 {
	t.Helper()
	ctx := context.Background()
	r, err := reader.Open(ctx, st, obj.StorageID, oneKey{obj.StorageID, obj.DEK})
	if err != nil {
		t.Fatalf("the reader refuses what the writer published: %v", err)
	}
	rr, err := r.Scan(ctx)
	if err != nil {
		t.Fatalf("the default scan refuses what the writer published: %v", err)
	}
	defer rr.Release()
	var rows int64
	for rr.Next() {
		rows += rr.RecordBatch().NumRows()
	}
	if err := rr.Err(); err != nil {
		t.Fatalf("the default scan fails on what the writer published, after %d rows: %v", rows, err)
	}
	return rows
}

// writeOrRefuse writes rows of rec (nil for none) with the schema and
// options, and returns the object, or the error, with how many objects
// the store committed.
func writeOrRefuse(schema *arrow.Schema, rec arrow.RecordBatch, opts ...writer.Option) (*committing, writer.Object, error) {
	st := &committing{Store: memstore.New()}
	w, err := writer.New(context.Background(), st, schema, opts...)
	if err != nil {
		return st, writer.Object{}, err
	}
	if rec != nil {
		if err := w.Write(rec); err != nil {
			return st, writer.Object{}, err
		}
	}
	obj, err := w.Close(context.Background())
	return st, obj, err
}

func idMeta(id int) arrow.Metadata {
	return arrow.NewMetadata([]string{writer.FieldIDKey}, []string{fmt.Sprint(id)})
}

// nested returns a schema of one int64 leaf under depth structs.
func nested(depth int) *arrow.Schema {
	f := arrow.Field{Name: "leaf", Type: arrow.PrimitiveTypes.Int64, Nullable: true, Metadata: idMeta(depth + 1)}
	for d := depth; d > 0; d-- {
		f = arrow.Field{Name: fmt.Sprint("s", d), Type: arrow.StructOf(f), Nullable: true, Metadata: idMeta(d)}
	}
	return arrow.NewSchema([]arrow.Field{f}, nil)
}

// TestWriterRefusesWhatReaderRefuses: each bound of the reader that a
// writer could exceed, at its limit (the object is published and reads
// back with the reader's defaults) and one past it (ErrReaderLimit, and
// nothing committed). Before, a schema of 64 nested structs was published
// and its reader refused it for ever ("schema tree is truncated or too
// deep"), and a schema of 2,000 leaf columns was published and its default
// scan refused it.
func TestWriterRefusesWhatReaderRefuses(t *testing.T) {
	t.Parallel()
	wide := func(n int) *arrow.Schema {
		fs := make([]arrow.Field, n)
		for i := range fs {
			fs[i] = arrow.Field{Name: fmt.Sprint("c", i), Type: arrow.PrimitiveTypes.Int32, Nullable: true, Metadata: idMeta(i + 1)}
		}
		return arrow.NewSchema(fs, nil)
	}
	// A group of a 32 KiB name over n one-byte children: their paths take
	// 32,768 + n × 32,770 bytes; an object without rows lists them only in
	// its schema, so the bound of 1 MiB on them applies (30 children: at
	// the limit; 31: past it).
	longPaths := func(n int) *arrow.Schema {
		fs := make([]arrow.Field, n)
		for i := range fs {
			fs[i] = arrow.Field{Name: string(rune('a' + i)), Type: arrow.PrimitiveTypes.Int32, Nullable: true, Metadata: idMeta(i + 2)}
		}
		return arrow.NewSchema([]arrow.Field{{Name: strings.Repeat("g", 32<<10), Type: arrow.StructOf(fs...), Nullable: true, Metadata: idMeta(1)}}, nil)
	}
	for _, tc := range []struct {
		name       string
		at, past   *arrow.Schema
		rows       bool
		atN, pastN int
	}{
		{"depth: 63 nested structs, then 64", nested(pme.MaxSchemaDepth - 1), nested(pme.MaxSchemaDepth), true, 63, 64},
		{"leaf columns: 4,096, then 4,097", wide(reader.DefaultMaxColumns), wide(reader.DefaultMaxColumns + 1), true, 4096, 4097},
		{"path bytes: 30 children of a 32 KiB group, then 31", longPaths(30), longPaths(31), false, 30, 31},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rec arrow.RecordBatch
			if tc.rows {
				rec = nullRows(tc.at, 3)
				defer rec.Release()
			}
			st, obj, err := writeOrRefuse(tc.at, rec)
			if err != nil {
				t.Fatalf("at the limit (%d): %v", tc.atN, err)
			}
			if rows := readAll(t, st, obj); tc.rows && rows != 3 {
				t.Errorf("read %d rows, want 3", rows)
			}
			if tc.rows {
				rec = nullRows(tc.past, 3)
				defer rec.Release()
			} else {
				rec = nil
			}
			st, _, err = writeOrRefuse(tc.past, rec)
			t.Logf("one past (%d): %v", tc.pastN, err)
			if !errors.Is(err, writer.ErrReaderLimit) {
				t.Errorf("one past the limit: %v, want ErrReaderLimit", err)
			}
			if n := st.commits.Load(); n != 0 {
				t.Errorf("%d objects committed", n)
			}
		})
	}
}

// TestWriterKeyValueLimit: a footer holds at most pme.MaxKeyValues of its
// length key-value entries; the writer publishes the most that fit and
// refuses one more (WithMetadata).
func TestWriterKeyValueLimit(t *testing.T) {
	t.Parallel()
	schema := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int32, Metadata: idMeta(1)}}, nil)
	try := func(n int) (*committing, writer.Object, error) {
		opts := make([]writer.Option, n)
		for i := range opts {
			opts[i] = writer.WithMetadata(fmt.Sprint(i), "")
		}
		return writeOrRefuse(schema, nil, opts...)
	}
	// The bound grows with the footer, which grows with the entries: the
	// largest n that fits lies between 16,384 and twice that.
	lo, hi := 1<<14, 1<<15
	for lo < hi {
		m := (lo + hi + 1) / 2
		if _, _, err := try(m); err == nil {
			lo = m
		} else if errors.Is(err, writer.ErrReaderLimit) {
			hi = m - 1
		} else {
			t.Fatalf("%d entries: %v", m, err)
		}
	}
	st, obj, err := try(lo)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, st, obj)
	r, err := reader.Open(context.Background(), st, obj.StorageID, oneKey{obj.StorageID, obj.DEK})
	if err != nil {
		t.Fatal(err)
	}
	// The writer's entries and the pad entry: at the reader's bound for
	// the footer's length, not short of it.
	if got := len(r.Metadata().Keys()) + 1; got != lo+1 {
		t.Errorf("the object holds %d entries, want %d", got, lo+1)
	}
	st, _, err = try(lo + 1)
	t.Logf("%d entries publish; %d: %v", lo, lo+1, err)
	if !errors.Is(err, writer.ErrReaderLimit) || st.commits.Load() != 0 {
		t.Errorf("%d entries: %v, %d committed; want ErrReaderLimit, none", lo+1, err, st.commits.Load())
	}
}

// TestWriterLargeValues: rows that decode to more than the reader's
// default memory limit allows are spread over smaller row groups, and
// read back; a single value that does alone is refused. Before, 200,000
// rows of one 1,000-byte string were published in row groups whose
// batches the default scan refused (ErrMemoryLimit).
func TestWriterLargeValues(t *testing.T) {
	t.Parallel()
	strs := func(values ...string) (*arrow.Schema, arrow.RecordBatch) {
		schema := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String, Metadata: idMeta(1)}}, nil)
		b := array.NewStringBuilder(memory.DefaultAllocator)
		defer b.Release()
		b.AppendValues(values, nil)
		col := b.NewArray()
		defer col.Release()
		return schema, array.NewRecordBatch(schema, []arrow.Array{col}, int64(col.Len()))
	}
	t.Run("200,000 repeated 1,000-byte strings", func(t *testing.T) {
		values := make([]string, 200_000)
		for i := range values {
			values[i] = strings.Repeat("x", 1000)
		}
		schema, rec := strs(values...)
		defer rec.Release()
		var prog writer.Progress
		st, obj, err := writeOrRefuse(schema, rec, writer.WithProgress(func(p writer.Progress) { prog = p }))
		if err != nil {
			t.Fatal(err)
		}
		if rows := readAll(t, st, obj); rows != 200_000 {
			t.Errorf("read %d rows", rows)
		}
		t.Logf("%d bytes, %d row groups", obj.Size, prog.RowGroups)
		if prog.RowGroups <= 2 {
			t.Errorf("%d row groups: not split", prog.RowGroups)
		}
	})
	t.Run("one 32 MiB value of random bytes", func(t *testing.T) {
		v := make([]byte, 32<<20)
		rand.Read(v)
		schema, rec := strs(string(bytes.ToValidUTF8(v, []byte("?"))), "b")
		defer rec.Release()
		st, obj, err := writeOrRefuse(schema, rec)
		if err != nil {
			t.Fatal(err)
		}
		if rows := readAll(t, st, obj); rows != 2 {
			t.Errorf("read %d rows", rows)
		}
	})
	t.Run("one 32 MiB value of one byte", func(t *testing.T) {
		schema, rec := strs(strings.Repeat("a", 32<<20), "b")
		defer rec.Release()
		st, _, err := writeOrRefuse(schema, rec)
		t.Logf("%v", err)
		if !errors.Is(err, writer.ErrReaderLimit) || st.commits.Load() != 0 {
			t.Errorf("%v, %d committed; want ErrReaderLimit, none", err, st.commits.Load())
		}
	})
}

// nullRows returns n rows of schema, every value null.
func nullRows(schema *arrow.Schema, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for _, fb := range b.Fields() {
		fb.AppendNulls(n)
	}
	return b.NewRecordBatch()
}

// TestSealFileFieldIDZero: a file whose first column has field ID 0, as
// DuckDB's FIELD_IDS 'auto' writes them, which reader.Check fails: SealFile
// refuses it (ErrFieldID), and with WithAssignFieldIDs gives that column a
// fresh ID, making a conformant object.
func TestSealFileFieldIDZero(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64, Metadata: idMeta(0)},
		{Name: "b", Type: arrow.PrimitiveTypes.Int64, Metadata: idMeta(1)},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2}, nil)
	b.Field(1).(*array.Int64Builder).AppendValues([]int64{3, 4}, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	fw, err := pqarrow.NewFileWriter(schema, &buf, parquet.NewWriterProperties(), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	file := buf.Bytes()
	st := &committing{Store: memstore.New()}
	if _, err := writer.SealFile(ctx, st, bytes.NewReader(file), int64(len(file))); !errors.Is(err, writer.ErrFieldID) || !strings.Contains(err.Error(), "a has none") {
		t.Errorf("SealFile: %v, want ErrFieldID naming a", err)
	}
	obj, err := writer.SealFile(ctx, st, bytes.NewReader(file), int64(len(file)), writer.WithAssignFieldIDs())
	if err != nil {
		t.Fatal(err)
	}
	rep, err := reader.Check(ctx, st, obj.StorageID, oneKey{obj.StorageID, obj.DEK})
	if err != nil || !rep.Conformant() {
		t.Fatalf("Check: %v\n%v", err, rep)
	}
	r, err := reader.Open(ctx, st, obj.StorageID, oneKey{obj.StorageID, obj.DEK})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(r.Schema()); got != "a=2 b=1" {
		t.Errorf("field IDs %s, want a=2 b=1", got)
	}
}
