package reader_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/writer"
)

// TestLocate: Locate names the regions a byte range overlaps, as the
// object's footer lays them out (compared with the layout the footer
// declares, decrypted here with pme): the magic, each column chunk with its
// row group, column path and field ID, and the footer region; the regions
// of the whole object tile it. And its answer is the one the verified reads
// give: a byte damaged in the chunk it names fails a scan of that field
// and row group, not of another field of that row group.
func TestLocate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const rows, rgRows = 30000, 10000
	schema, rec := fiveColumns(t, rows)
	defer rec.Release()
	st := newMemStore()
	obj := writeObject(t, st, schema, rec, writer.WithRowGroupRows(rgRows))
	good := bytes.Clone(st.bytes(obj.StorageID))
	l := layoutOf(t, good, obj.DEK)
	k := keys{obj.StorageID: obj.DEK}
	r, err := reader.Open(ctx, st, obj.StorageID, k)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"id", "x", "s", "ts", "ok"}
	for i, rg := range l.chunks {
		for j, c := range rg {
			got, err := r.Locate(ctx, c.Off+c.Len/2, 1)
			want := reader.Location{Part: reader.PartColumnChunk, Off: c.Off, Len: c.Len, RowGroup: i, Column: j, Path: names[j], FieldID: int32(j + 1)}
			if err != nil || len(got) != 1 || got[0] != want {
				t.Errorf("Locate in row group %d column %d: %+v, %v; want %+v", i, j, got, err, want)
			}
		}
	}
	all, err := r.Locate(ctx, 0, l.size)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 2 || all[0].Part != reader.PartMagic || all[len(all)-1].Part != reader.PartFooter ||
		all[len(all)-1].Off != l.dataEnd || all[len(all)-1].Off+all[len(all)-1].Len != l.size {
		t.Fatalf("Locate of the whole object: %+v", all)
	}
	chunks := 0
	for i := 1; i < len(all); i++ {
		if all[i].Off != all[i-1].Off+all[i-1].Len {
			t.Errorf("the regions do not tile the object at %d: %+v then %+v", i, all[i-1], all[i])
		}
		if all[i].Part == reader.PartColumnChunk {
			chunks++
		}
	}
	if chunks != 3*5 {
		t.Errorf("%d column chunks located, want 15", chunks)
	}
	if got, err := r.Locate(ctx, l.size-1, 2); !errors.Is(err, reader.ErrOption) {
		t.Errorf("Locate past the end: %+v, %v", got, err)
	}
	if s := all[len(all)-1].String(); s != "the footer" {
		t.Errorf("the footer's String: %q", s)
	}

	// Damage the middle of row group 1's chunk of s (field 3).
	c := l.chunks[1][2]
	loc, err := r.Locate(ctx, c.Off+c.Len/2, 1)
	if err != nil || len(loc) != 1 {
		t.Fatal(loc, err)
	}
	if s := loc[0].String(); s != "row group 1, column s (field 3)" {
		t.Errorf("String: %q", s)
	}
	bad := bytes.Clone(good)
	bad[c.Off+c.Len/2] ^= 0x40
	st.putAs(obj.StorageID, bad, st.outboard(obj.StorageID))
	defer st.putAs(obj.StorageID, good, st.outboard(obj.StorageID))
	rb, err := reader.Open(ctx, st, obj.StorageID, k)
	if err != nil {
		t.Fatal(err)
	}
	scan := func(field int32) error {
		rr, err := rb.Scan(ctx, reader.WithFields(field), reader.WithRowGroups(loc[0].RowGroup))
		if err != nil {
			return err
		}
		defer rr.Release()
		for rr.Next() {
		}
		return rr.Err()
	}
	if err := scan(loc[0].FieldID); !isVerifyErr(err) {
		t.Errorf("a scan of the located chunk: %v, want a verification error", err)
	}
	if err := scan(1); err != nil {
		t.Errorf("a scan of another field of the row group: %v", err)
	}
}
