package pagecheck

import (
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/sovm/sop-pme/internal/thrift"
)

// pageHeader encodes a PageHeader of type typ with sizes and a
// type-specific header of num_values n (and, for V2, the other counts
// zero).
func pageHeader(typ int32, usize, csize int32, n int32) []byte {
	sub := map[int32]int16{pageData: phDataPage, pageDictionary: phDictPage, pageDataV2: phDataPageV2}[typ]
	sh := thrift.NewStruct(thrift.Field{ID: subNumValues, Value: thrift.I32(n)}, thrift.Field{ID: 2, Value: thrift.I32(0)})
	if typ == pageDataV2 {
		sh = thrift.NewStruct(
			thrift.Field{ID: subNumValues, Value: thrift.I32(n)}, thrift.Field{ID: v2NumNulls, Value: thrift.I32(0)},
			thrift.Field{ID: v2NumRows, Value: thrift.I32(n)}, thrift.Field{ID: v2Encoding, Value: thrift.I32(0)},
			thrift.Field{ID: v2DefLen, Value: thrift.I32(0)}, thrift.Field{ID: v2RepLen, Value: thrift.I32(0)})
	}
	h := thrift.NewStruct(
		thrift.Field{ID: phType, Value: thrift.I32(typ)},
		thrift.Field{ID: phUncompressedSize, Value: thrift.I32(usize)},
		thrift.Field{ID: phCompressedSize, Value: thrift.I32(csize)},
	)
	if sub != 0 {
		h.Set(sub, thrift.StructValue(sh))
	}
	return h.Append(nil)
}

// TestChecker: a chunk of a dictionary page and two data pages passes; the
// rules of the package doc refuse a page type it does not decode, counts
// that disagree with the footer, and a dictionary page that is not first.
func TestChecker(t *testing.T) {
	t.Parallel()
	c := Chunk{Rows: 8, Values: 8, Codec: compress.Codecs.Uncompressed, Physical: parquet.Types.Int32}
	body := make([]byte, 16)
	dict := pageHeader(pageDictionary, 16, 16, 4)
	data := pageHeader(pageData, 16, 16, 4)
	k := New(c, DefaultLimit(100))
	for _, h := range [][]byte{dict, data, data} {
		if err := k.Page(h, body); err != nil {
			t.Fatal(err)
		}
	}
	if err := k.Done(); err != nil {
		t.Fatal(err)
	}
	for name, pages := range map[string][][]byte{
		"index page":        {pageHeader(1, 16, 16, 4)},
		"values short":      {data},
		"dictionary second": {data, dict},
		"size":              {pageHeader(pageData, 16, 15, 4)},
	} {
		k := New(c, DefaultLimit(100))
		var err error
		for _, h := range pages {
			if err = k.Page(h, body); err != nil {
				break
			}
		}
		if err == nil {
			err = k.Done()
		}
		if !errors.Is(err, ErrPage) {
			t.Errorf("%s: %v, want ErrPage", name, err)
		}
	}
}

// FuzzPage: no page header and body, of any codec and type, panics a
// Checker or makes it return an untyped error.
func FuzzPage(f *testing.F) {
	f.Add(pageHeader(pageData, 16, 16, 4), make([]byte, 16), byte(0), byte(1))
	f.Add(pageHeader(pageDictionary, 16, 16, 4), make([]byte, 16), byte(0), byte(1))
	f.Add(pageHeader(pageDataV2, 16, 16, 4), make([]byte, 16), byte(1), byte(6))
	f.Add(pageHeader(pageData, 100, 8, 4), []byte{100, 0, 0, 0, 0, 0, 0, 0}, byte(6), byte(5))
	f.Fuzz(func(t *testing.T, header, body []byte, codec, physical byte) {
		k := New(Chunk{Rows: 4, Values: 4, Codec: compress.Compression(codec % 8), MaxDef: 1, Physical: parquet.Type(physical % 8), TypeLen: 4}, 1<<20)
		err := k.Page(header, body)
		if err == nil {
			err = k.Done()
		}
		if err != nil && !errors.Is(err, ErrPage) && !errors.Is(err, ErrMemoryLimit) {
			t.Fatalf("untyped error %v", err)
		}
	})
}
