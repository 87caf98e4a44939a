package hostile

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/writer"
)

// TestRoundTrip: Open then Seal under the same DEK keeps the object's
// layout byte for byte outside the nonces; SealPadded under another DEK
// gives a conformant object that reads back the same rows.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, kind := range []string{"flat", "nested"} {
		for _, opts := range [][]writer.Option{nil, {writer.WithRowGroupRows(100), writer.WithDictionary(false), writer.WithCodec(writer.Uncompressed)}} {
			rec := FlatRecord(300)
			if kind == "nested" {
				rec = NestedRecord(300)
			}
			defer rec.Release()
			obj, dek, err := Write(rec, opts...)
			if err != nil {
				t.Fatal(err)
			}
			o, err := Open(obj, dek)
			if err != nil {
				t.Fatal(err)
			}
			same, err := o.Seal(dek)
			if err != nil {
				t.Fatal(err)
			}
			// Same module boundaries, same FileCryptoMetaData and trailer.
			m1, _ := Modules(obj)
			m2, _ := Modules(same)
			dataEnd := m1[len(m1)-1][1]
			if len(same) != len(obj) || len(m1) != len(m2) ||
				!bytes.Equal(obj[dataEnd:dataEnd+int64(len(o.Crypto))], same[dataEnd:dataEnd+int64(len(o.Crypto))]) ||
				!bytes.Equal(obj[len(obj)-8:], same[len(same)-8:]) {
				t.Fatalf("%s: re-sealed %d bytes, %d modules; want %d, %d", kind, len(same), len(m2), len(obj), len(m1))
			}
			for i := range m1 {
				if m1[i] != m2[i] {
					t.Fatalf("%s: module %d at %v, want %v", kind, i, m2[i], m1[i])
				}
			}
			to := pme.NewDEK()
			b, err := o.SealPadded(to)
			if err != nil {
				t.Fatal(err)
			}
			st := NewStore()
			id := st.Put(b, to)
			rep, err := reader.Check(ctx, st, id, st)
			if err != nil || !rep.Conformant() {
				t.Fatalf("%s: Check: %v %v", kind, rep, err)
			}
			r, err := reader.Open(ctx, st, id, st)
			if err != nil {
				t.Fatal(err)
			}
			rr, err := r.Scan(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var recs []arrow.RecordBatch
			for rr.Next() {
				rr.RecordBatch().Retain()
				recs = append(recs, rr.RecordBatch())
			}
			if err := rr.Err(); err != nil {
				t.Fatal(err)
			}
			rr.Release()
			tbl := array.NewTableFromRecords(r.Schema(), recs)
			for j := range rec.NumCols() {
				got, err := array.Concatenate(tbl.Column(int(j)).Data().Chunks(), memory.DefaultAllocator)
				if err != nil {
					t.Fatal(err)
				}
				if !array.Equal(got, rec.Column(int(j))) {
					t.Errorf("%s: column %d differs", kind, j)
				}
				got.Release()
			}
			tbl.Release()
			for _, r := range recs {
				r.Release()
			}
		}
	}
}

// TestUnsealReseal: Unseal puts every module's plaintext in place, with the
// layout unchanged; Reseal under another DEK gives an object that reads
// back the same rows under that DEK.
func TestUnsealReseal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rec := NestedRecord(100)
	defer rec.Release()
	obj, dek, err := Write(rec)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := Unseal(obj, dek)
	if err != nil {
		t.Fatal(err)
	}
	m1, _ := Modules(obj)
	m2, _ := Modules(plain)
	if len(plain) != len(obj) || len(m1) != len(m2) {
		t.Fatalf("Unseal changed the layout")
	}
	o, err := Open(obj, dek)
	if err != nil {
		t.Fatal(err)
	}
	hdr := o.Chunks[0][0].Pages[0].Header.Append(nil)
	if !bytes.Contains(plain, hdr) {
		t.Fatal("the first page header is not in the unsealed object")
	}
	to := pme.NewDEK()
	st := NewStore()
	id := st.Put(Reseal(plain, to), to)
	r, err := reader.Open(ctx, st, id, st)
	if err != nil {
		t.Fatal(err)
	}
	rr, err := r.Scan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Release()
	var rows int64
	for rr.Next() {
		rows += rr.RecordBatch().NumRows()
	}
	if rr.Err() != nil || rows != rec.NumRows() {
		t.Fatalf("%d rows, %v", rows, rr.Err())
	}
	if _, err := Unseal(obj, to); !errors.Is(err, pme.ErrAuth) {
		t.Fatalf("Unseal under another DEK: %v", err)
	}
}
