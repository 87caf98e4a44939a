package thrift

//go:generate go run testdata/gen.go

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// golden returns the golden files in testdata, by base name. It fails the
// test if there are none.
func golden(t testing.TB) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "*.bin"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files[filepath.Base(p)] = b
	}
	var footers, headers int
	for name := range files {
		switch {
		case strings.HasPrefix(name, "footer-"):
			footers++
		case strings.HasPrefix(name, "pageheader-"):
			headers++
		}
	}
	if footers == 0 || headers == 0 {
		t.Fatalf("found %d footers and %d page headers in testdata; run go generate", footers, headers)
	}
	return files
}

// TestRoundTripGolden decodes every golden file (Parquet footers and page
// headers written by arrow-go, DuckDB's FileCryptoMetaData) and checks that
// encoding gives back the same bytes.
func TestRoundTripGolden(t *testing.T) {
	t.Parallel()
	for name, b := range golden(t) {
		t.Run(name, func(t *testing.T) {
			s, err := DecodeExact(b, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if out := s.Append(nil); !bytes.Equal(out, b) {
				t.Fatalf("Append differs from the input:\n got % x\nwant % x", out, b)
			}
			if n := s.EncodedLen(); n != len(b) {
				t.Errorf("EncodedLen = %d, want %d", n, len(b))
			}
			// A sanity check that the files are what their names say.
			switch {
			case strings.HasPrefix(name, "footer-"):
				if _, err := s.I64(3); err != nil { // num_rows
					t.Error(err)
				}
				if _, err := s.List(4); err != nil { // row_groups
					t.Error(err)
				}
			case strings.HasPrefix(name, "pageheader-"):
				if _, err := s.I32(3); err != nil { // compressed_page_size
					t.Error(err)
				}
			}
		})
	}
}

func TestDuckDBFileCryptoMetaData(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in      string
		keyMeta []byte
	}{
		{"1c 1c 00 00 00", nil},
		{"1c 1c 00 00 18 10 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f 00",
			[]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}},
	} {
		in := unhex(t, c.in)
		s, err := DecodeExact(in, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(s.Append(nil), in) {
			t.Errorf("%s does not round-trip", c.in)
		}
		alg, err := s.Struct(1)
		if err != nil {
			t.Fatal(err)
		}
		if gcm, err := alg.Struct(1); err != nil || len(gcm.Fields) != 0 {
			t.Errorf("AES_GCM_V1 = %v, %v", gcm, err)
		}
		km, err := s.Binary(2)
		if c.keyMeta == nil && err == nil || c.keyMeta != nil && !bytes.Equal(km, c.keyMeta) {
			t.Errorf("key_metadata = %x, %v", km, err)
		}

		// Build the same bytes from scratch.
		built := NewStruct(f(1, StructValue(NewStruct(f(1, StructValue(NewStruct()))))))
		if c.keyMeta != nil {
			built.Set(2, Binary(c.keyMeta))
		}
		if out := built.Append(nil); !bytes.Equal(out, in) {
			t.Errorf("built % x, want % x", out, in)
		}
	}
}

// TestPageHeaderWithBody checks that Decode stops at the end of a page header
// that is followed by its page body.
func TestPageHeaderWithBody(t *testing.T) {
	t.Parallel()
	files := golden(t)
	for name, h := range files {
		if !strings.HasPrefix(name, "pageheader-") {
			continue
		}
		in := append(append([]byte(nil), h...), 0x00, 0x15, 0xff, 0xff) // a body that starts like Thrift
		s, n, err := Decode(in, Limits{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if n != len(h) {
			t.Errorf("%s: n = %d, want %d", name, n, len(h))
		}
		size, err := s.I32(3)
		if err != nil || size <= 0 {
			t.Errorf("%s: compressed_page_size = %d, %v", name, size, err)
		}
		if typ, err := s.I32(1); err != nil || typ < 0 || typ > 3 {
			t.Errorf("%s: type = %d, %v", name, typ, err)
		}
	}
}

// TestEditFooter makes the edits the PME Sealer makes on a real footer:
// it shifts offsets, changes sizes, deletes fields, sets RowGroup fields,
// and appends a KeyValue, then checks the result with both decoders.
func TestEditFooter(t *testing.T) {
	t.Parallel()
	orig := golden(t)["footer-flat.bin"]
	if orig == nil {
		t.Fatal("no footer-flat.bin")
	}
	b := append([]byte(nil), orig...)
	fmd, err := DecodeExact(b, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	const shift = 1 << 40 // makes every offset varint longer
	rgs, err := fmd.List(4)
	if err != nil {
		t.Fatal(err)
	}
	type want struct{ data, dict, size int64 }
	var wants []want
	for i := range rgs.Items {
		rg := rgs.Items[i].Struct
		cols, err := rg.List(1)
		if err != nil {
			t.Fatal(err)
		}
		for j := range cols.Items {
			cc := cols.Items[j].Struct
			md, err := cc.Struct(3)
			if err != nil {
				t.Fatal(err)
			}
			data, err := md.I64(9)
			if err != nil {
				t.Fatal(err)
			}
			md.Set(9, I64(data+shift))
			w := want{data: data + shift, dict: -1}
			if dict, err := md.I64(11); err == nil {
				md.Set(11, I64(dict+shift))
				w.dict = dict + shift
			}
			size, err := md.I64(7)
			if err != nil {
				t.Fatal(err)
			}
			md.Set(7, I64(size+32))
			w.size = size + 32
			md.Delete(14)
			md.Delete(15)
			for id := int16(4); id <= 9; id++ {
				cc.Delete(id)
			}
			wants = append(wants, w)
		}
		rg.Set(5, I64(int64(i)*shift))
		rg.Set(6, I64(int64(i)+1))
		rg.Set(7, I16(int16(i)))
	}
	kvs, err := fmd.List(5)
	if err != nil {
		t.Fatal(err)
	}
	nkv := len(kvs.Items)
	pad := make([]byte, 300)
	kvs.Items = append(kvs.Items, StructValue(NewStruct(
		f(1, Binary([]byte("sovm:sop-pad-v1"))),
		f(2, Binary(pad)))))

	out := fmd.Append(nil)
	if len(out) != fmd.EncodedLen() {
		t.Errorf("EncodedLen = %d, len(Append) = %d", fmd.EncodedLen(), len(out))
	}
	if !bytes.Equal(b, orig) {
		t.Fatal("editing the tree changed the input buffer")
	}

	// Our decoder and Apache Thrift's must both read the edit back.
	again, err := DecodeExact(out, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if !equalStruct(again, fmd) {
		t.Fatal("re-decoded tree differs from the edited tree")
	}
	ref, n, err := apacheRead(out)
	if err != nil || n != len(out) || !equalStruct(ref, fmd) {
		t.Fatalf("Apache Thrift reads the edit differently: n=%d err=%v", n, err)
	}

	rgs, _ = again.List(4)
	k := 0
	for i := range rgs.Items {
		rg := rgs.Items[i].Struct
		if v, err := rg.I64(5); err != nil || v != int64(i)*shift {
			t.Errorf("row group %d file_offset = %d, %v", i, v, err)
		}
		if v := rg.Field(7); v == nil || v.Type != TypeI16 || v.Int != int64(i) {
			t.Errorf("row group %d ordinal = %+v", i, v)
		}
		cols, _ := rg.List(1)
		for j := range cols.Items {
			cc := cols.Items[j].Struct
			for id := int16(4); id <= 9; id++ {
				if cc.Field(id) != nil {
					t.Errorf("ColumnChunk field %d still there", id)
				}
			}
			md, _ := cc.Struct(3)
			w := wants[k]
			k++
			if v, _ := md.I64(9); v != w.data {
				t.Errorf("data_page_offset = %d, want %d", v, w.data)
			}
			if v, err := md.I64(11); w.dict >= 0 && v != w.dict || w.dict < 0 && err == nil {
				t.Errorf("dictionary_page_offset = %d, %v, want %d", v, err, w.dict)
			}
			if v, _ := md.I64(7); v != w.size {
				t.Errorf("total_compressed_size = %d, want %d", v, w.size)
			}
			if md.Field(14) != nil || md.Field(15) != nil {
				t.Error("ColumnMetaData field 14 or 15 still there")
			}
		}
	}
	kvs, _ = again.List(5)
	if len(kvs.Items) != nkv+1 {
		t.Fatalf("%d key-value entries, want %d", len(kvs.Items), nkv+1)
	}
	last := kvs.Items[nkv].Struct
	if key, _ := last.Binary(1); string(key) != "sovm:sop-pad-v1" {
		t.Errorf("key = %q", key)
	}
	if v, _ := last.Binary(2); len(v) != len(pad) {
		t.Errorf("value has %d bytes", len(v))
	}

	// Growing the pad value by one byte grows the encoding by one byte,
	// except where the varint length of the value grows.
	padValue := &kvs.Items[nkv].Struct.Fields[1].Value
	zeros := make([]byte, 2<<20)
	prev := -1
	for v := 0; v <= 16500; v++ {
		padValue.Bin = zeros[:v]
		l := again.EncodedLen()
		if prev >= 0 {
			want := 1
			if v == 128 || v == 16384 {
				want = 2
			}
			if l-prev != want {
				t.Fatalf("value %d → %d bytes: grew by %d, want %d", v-1, v, l-prev, want)
			}
		}
		prev = l
	}
	for _, v := range []int{127, 128, 16383, 16384, 2<<20 - 1, 2 << 20} {
		padValue.Bin = zeros[:v]
		enc := again.Append(nil)
		if len(enc) != again.EncodedLen() {
			t.Errorf("value %d: EncodedLen %d, Append %d", v, again.EncodedLen(), len(enc))
		}
		if v == 2<<20 {
			padValue.Bin = zeros[:v-1]
			if d := len(enc) - again.EncodedLen(); d != 2 {
				t.Errorf("2097151 → 2097152 grew by %d, want 2", d)
			}
		}
	}
}
