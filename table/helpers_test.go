package table_test

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/writer"
)

// keys is a map KeyResolver.
type keys map[storageid.ID]pme.DEK

func (k keys) ResolveDEK(ctx context.Context, id storageid.ID) (pme.DEK, error) {
	d, ok := k[id]
	if !ok {
		return pme.DEK{}, fmt.Errorf("%w: %s", reader.ErrNoKey, id)
	}
	return d, nil
}

// fid is field metadata carrying a field ID.
func fid(id int) arrow.Metadata {
	return arrow.NewMetadata([]string{writer.FieldIDKey}, []string{strconv.Itoa(id)})
}

// fromJSON builds a record of schema from JSON rows.
func fromJSON(t testing.TB, schema *arrow.Schema, rows string) arrow.RecordBatch {
	t.Helper()
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema, strings.NewReader(rows))
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// put writes recs as one object into st and records its DEK in k.
func put(t testing.TB, st blobs.Store, k keys, schema *arrow.Schema, recs []arrow.RecordBatch, opts ...writer.Option) writer.Object {
	t.Helper()
	ctx := context.Background()
	w, err := writer.New(ctx, st, schema, opts...)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	obj, err := w.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	k[obj.StorageID] = obj.DEK
	return obj
}

// jsonRows returns the rows of rr, one JSON object per line, and rr's error.
func jsonRows(t testing.TB, rr array.RecordReader) ([]string, error) {
	t.Helper()
	var rows []string
	for rr.Next() {
		var b bytes.Buffer
		if err := array.RecordToJSON(rr.RecordBatch(), &b); err != nil {
			t.Fatal(err)
		}
		for l := range strings.Lines(b.String()) {
			rows = append(rows, strings.TrimSpace(l))
		}
	}
	return rows, rr.Err()
}

func recordRows(t testing.TB, rec arrow.RecordBatch) []string {
	t.Helper()
	var b bytes.Buffer
	if err := array.RecordToJSON(rec, &b); err != nil {
		t.Fatal(err)
	}
	var rows []string
	for l := range strings.Lines(b.String()) {
		rows = append(rows, strings.TrimSpace(l))
	}
	return rows
}

// chunks returns the spans of an object's column chunks, [row group][column],
// from its footer.
func chunks(t testing.TB, data []byte, dek pme.DEK) [][]pme.Span {
	t.Helper()
	flen, err := pme.ParseTrailer(data[len(data)-8:])
	if err != nil {
		t.Fatal(err)
	}
	dataEnd := int64(len(data)) - 8 - int64(flen)
	tail, err := pme.ParseFooterRegion(data[dataEnd : len(data)-8])
	if err != nil {
		t.Fatal(err)
	}
	f, err := pme.OpenFooter(dek, tail.FooterBody)
	if err != nil {
		t.Fatal(err)
	}
	c, err := f.ColumnChunks()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }
