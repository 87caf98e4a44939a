package catalog

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/writer"
)

func idField(name string, typ arrow.DataType, id int) arrow.Field {
	return arrow.Field{Name: name, Type: typ, Nullable: true,
		Metadata: arrow.NewMetadata([]string{writer.FieldIDKey}, []string{strconv.Itoa(id)})}
}

// seedHeader is a header of two versions with nested types.
func seedHeader(t testing.TB) []byte {
	t.Helper()
	s1 := arrow.NewSchema([]arrow.Field{
		idField("a", arrow.PrimitiveTypes.Int32, 1),
		idField("s", arrow.StructOf(idField("x", arrow.BinaryTypes.String, 3)), 2),
	}, nil)
	s2 := arrow.NewSchema([]arrow.Field{
		idField("a", arrow.PrimitiveTypes.Int64, 1),
		idField("l", arrow.ListOfField(idField("element", &arrow.Decimal128Type{Precision: 12, Scale: 2}, 5)), 4),
		idField("m", arrow.MapOfWithMetadata(arrow.BinaryTypes.String, arrow.NewMetadata([]string{writer.FieldIDKey}, []string{"7"}),
			arrow.PrimitiveTypes.Float64, arrow.NewMetadata([]string{writer.FieldIDKey}, []string{"8"})), 6),
	}, nil)
	now := time.Unix(1_800_000_000, 5).UTC()
	h := &header{t: &Table{Name: "seed", Created: now, HighWater: 8, Versions: []Version{
		{ID: 1, Schema: s1, Created: now, Change: "create"},
		{ID: 2, Schema: s2, Created: now, Change: "promote a; add l; add m; drop s"},
	}}, seq: 3}
	b, err := encodeHeader(h)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func seedObject() []byte {
	return encodeObject(&object{Object: Object{ID: storageid.Sum([]byte("seed")), Version: 2, Rows: 1000,
		UnpaddedSize: 123456, Size: 131072, Appended: time.Unix(1_800_000_000, 0).UTC()}, table: tableKey{1, 2, 3}, seq: 7})
}

// requireSeeds fails if the corpus directory of the target holds no file:
// fuzz seeds that silently disappear test nothing.
func requireSeeds(f *testing.F, target string) {
	ents, err := os.ReadDir(filepath.Join("testdata", "fuzz", target))
	if err != nil || len(ents) == 0 {
		f.Fatalf("no seed corpus for %s in testdata/fuzz: %v", target, err)
	}
}

// FuzzDecodeTable: a header record never panics; it decodes or fails with
// ErrRecord, and what decodes encodes and decodes to the same table.
func FuzzDecodeTable(f *testing.F) {
	requireSeeds(f, "FuzzDecodeTable")
	f.Add(seedHeader(f))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := decodeHeader(tableKey{}, b)
		if err != nil {
			if !errors.Is(err, ErrRecord) {
				t.Fatalf("not ErrRecord: %v", err)
			}
			return
		}
		again, err := encodeHeader(h)
		if err != nil {
			t.Fatalf("a decoded header does not encode: %v", err)
		}
		h2, err := decodeHeader(tableKey{}, again)
		if err != nil {
			t.Fatalf("a re-encoded header does not decode: %v", err)
		}
		if h2.t.Name != h.t.Name || len(h2.t.Versions) != len(h.t.Versions) || h2.seq != h.seq {
			t.Fatal("a re-encoded header decodes differently")
		}
		for i := range h.t.Versions {
			if !h.t.Versions[i].Schema.Equal(h2.t.Versions[i].Schema) {
				t.Fatalf("version %d: schema %v, then %v", i+1, h.t.Versions[i].Schema, h2.t.Versions[i].Schema)
			}
		}
	})
}

// FuzzDecodeObject: an object record never panics; it decodes or fails
// with ErrRecord, and what decodes encodes to the same bytes.
func FuzzDecodeObject(f *testing.F) {
	requireSeeds(f, "FuzzDecodeObject")
	f.Add(seedObject())
	f.Fuzz(func(t *testing.T, b []byte) {
		o, err := decodeObject(b)
		if err != nil {
			if !errors.Is(err, ErrRecord) {
				t.Fatalf("not ErrRecord: %v", err)
			}
			return
		}
		if again := encodeObject(o); !bytes.Equal(again, b) {
			t.Fatalf("malleable: %x encodes as %x", b, again)
		}
	})
}

// TestSeeds checks that the seed corpora in testdata/fuzz hold the valid
// records and their truncations and bit flips as this file makes them, so
// that a change to the record encoding cannot leave the fuzz targets
// seeded with stale records; with SOP_PME_WRITE_SEEDS=1 it writes them
// instead.
func TestSeeds(t *testing.T) {
	write := os.Getenv("SOP_PME_WRITE_SEEDS") != ""
	check := func(target string, seeds [][]byte) {
		dir := filepath.Join("testdata", "fuzz", target)
		if write {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		for i, s := range seeds {
			path := filepath.Join(dir, fmt.Sprintf("seed-%02d", i))
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", s)
			if write {
				if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			got, err := os.ReadFile(path)
			if err != nil || string(got) != body {
				t.Errorf("%s is not the seed this test makes (SOP_PME_WRITE_SEEDS=1 go test -run TestSeeds writes it): %v", path, err)
			}
		}
	}
	variants := func(b []byte) [][]byte {
		out := [][]byte{b, b[:len(b)/2], b[:len(b)-1], append(bytes.Clone(b), 0)}
		for _, at := range []int{0, 1, 9, len(b) / 3, len(b) - 3} {
			c := bytes.Clone(b)
			c[at] ^= 0x80
			out = append(out, c)
		}
		return out
	}
	check("FuzzDecodeTable", variants(seedHeader(t)))
	check("FuzzDecodeObject", variants(seedObject()))
}

// TestDecodeSeeds: the seed records decode, and every truncation of them
// fails with ErrRecord.
func TestDecodeSeeds(t *testing.T) {
	hb := seedHeader(t)
	h, err := decodeHeader(tableKey{}, hb)
	if err != nil {
		t.Fatal(err)
	}
	if h.t.Name != "seed" || len(h.t.Versions) != 2 || h.t.HighWater != 8 || h.seq != 3 {
		t.Fatalf("decoded %+v", h.t)
	}
	ob := seedObject()
	if _, err := decodeObject(ob); err != nil {
		t.Fatal(err)
	}
	for n := range len(hb) {
		if _, err := decodeHeader(tableKey{}, hb[:n]); !errors.Is(err, ErrRecord) {
			t.Fatalf("header cut at %d: %v", n, err)
		}
	}
	for n := range len(ob) {
		if _, err := decodeObject(ob[:n]); !errors.Is(err, ErrRecord) {
			t.Fatalf("object cut at %d: %v", n, err)
		}
	}
}
