package interop

import (
	"bytes"
	"cmp"
	"slices"
	"strings"
	"testing"

	"github.com/sovm/sop-pme/internal/thrift"
	"github.com/sovm/sop-pme/pme"
)

// The layout checks decrypt an object with its DEK, walk the column chunks
// the footer names and open every page module, so that a test can assert
// what it asked the writer for (codec, pages per chunk, dictionary, page
// version) instead of inferring it.

// Parquet enum values (parquet.thrift).
const (
	pageData       = 0 // PageType.DATA_PAGE
	pageDictionary = 2 // PageType.DICTIONARY_PAGE
	pageDataV2     = 3 // PageType.DATA_PAGE_V2

	encPlainDictionary = 2 // Encoding.PLAIN_DICTIONARY
	encRLEDictionary   = 8 // Encoding.RLE_DICTIONARY

	codecUncompressed = 0
	codecSnappy       = 1
	codecGzip         = 2
	codecBrotli       = 4
	codecZstd         = 6
	codecLZ4Raw       = 7
)

// page is one page of a column chunk.
type page struct {
	typ      int32 // PageType
	encoding int32 // the values' encoding (data and dictionary pages)
	values   int32 // num_values
}

// chunk is one column chunk as the footer and its pages describe it.
type chunk struct {
	rowGroup int
	path     string // path_in_schema, dotted
	codec    int32
	span     pme.Span
	pages    []page
}

func (c chunk) dataPages() int {
	n := 0
	for _, p := range c.pages {
		if p.typ == pageData || p.typ == pageDataV2 {
			n++
		}
	}
	return n
}

func (c chunk) hasDictionaryPage() bool {
	return slices.ContainsFunc(c.pages, func(p page) bool { return p.typ == pageDictionary })
}

// layout is what inspect finds in an object.
type layout struct {
	rowGroups int
	chunks    []chunk
}

// inspect checks the layout of an object of our writer (walkLayoutKeyRef),
// with its key_ref in key_metadata.
func inspect(t *testing.T, obj object) layout {
	t.Helper()
	return walkLayoutKeyRef(t, obj.data, obj.DEK, obj.KeyRef[:])
}

// walkLayout checks the layout of a file with no key_metadata, as DuckDB
// writes them (walkLayoutKeyRef).
func walkLayout(t *testing.T, data []byte, dek pme.DEK) layout {
	t.Helper()
	return walkLayoutKeyRef(t, data, dek, nil)
}

// walkLayoutKeyRef decrypts, under dek, the footer of the object whose bytes
// are data and every page module of every column chunk, and checks the
// layout DuckDB 1.5.6 writes and reads (SOP-PME-1 11.2): "PARE" at both
// ends; key_metadata is keyRef (absent if nil); the column chunks tile the
// data region; each page is a header module then a body module whose
// plaintext length is the header's compressed_page_size; the data pages'
// num_values add up to the chunk's.
func walkLayoutKeyRef(t *testing.T, data []byte, dek pme.DEK, keyRef []byte) layout {
	t.Helper()
	if len(data) < 12 || string(data[:4]) != "PARE" || string(data[len(data)-4:]) != "PARE" {
		t.Fatalf("object does not start and end with PARE")
	}
	footerLen, err := pme.ParseTrailer(data[len(data)-pme.TrailerSize:])
	if err != nil {
		t.Fatalf("trailer: %v", err)
	}
	dataEnd := int64(len(data)) - pme.TrailerSize - int64(footerLen)
	tail, err := pme.ParseFooterRegion(data[dataEnd : int64(len(data))-pme.TrailerSize])
	if err != nil {
		t.Fatalf("footer region: %v", err)
	}
	if !bytes.Equal(tail.Crypto.KeyMetadata, keyRef) {
		t.Errorf("key_metadata %x, want %x", tail.Crypto.KeyMetadata, keyRef)
	}
	footer, err := pme.OpenFooter(dek, tail.FooterBody)
	if err != nil {
		t.Fatalf("footer: %v", err)
	}
	meta, err := thrift.DecodeExact(footer.Append(nil), thrift.Limits{})
	if err != nil {
		t.Fatalf("decoding FileMetaData: %v", err)
	}
	rgs := must(t, "FileMetaData.row_groups", func() (*thrift.List, error) { return meta.List(4) })
	var out layout
	out.rowGroups = len(rgs.Items)
	for i, rgv := range rgs.Items {
		cols := must(t, "RowGroup.columns", func() (*thrift.List, error) { return rgv.Struct.List(1) })
		for _, ccv := range cols.Items {
			md := must(t, "ColumnChunk.meta_data", func() (*thrift.Struct, error) { return ccv.Struct.Struct(3) })
			c := chunk{rowGroup: i}
			c.codec = must(t, "ColumnMetaData.codec", func() (int32, error) { return md.I32(4) })
			numValues := must(t, "ColumnMetaData.num_values", func() (int64, error) { return md.I64(5) })
			c.span.Len = must(t, "ColumnMetaData.total_compressed_size", func() (int64, error) { return md.I64(7) })
			c.span.Off = must(t, "ColumnMetaData.data_page_offset", func() (int64, error) { return md.I64(9) })
			if md.Field(11) != nil {
				c.span.Off = min(c.span.Off, must(t, "ColumnMetaData.dictionary_page_offset", func() (int64, error) { return md.I64(11) }))
			}
			var names []string
			for _, p := range must(t, "ColumnMetaData.path_in_schema", func() (*thrift.List, error) { return md.List(3) }).Items {
				names = append(names, string(p.Bin))
			}
			c.path = strings.Join(names, ".")
			if c.span.Off < 4 || c.span.End() > dataEnd {
				t.Fatalf("row group %d column %s: chunk [%d, %d) outside the data region [4, %d)", i, c.path, c.span.Off, c.span.End(), dataEnd)
			}
			c.pages = openPages(t, data, dek, c)
			var n int64
			for _, p := range c.pages {
				if p.typ != pageDictionary {
					n += int64(p.values)
				}
			}
			if n != numValues {
				t.Errorf("row group %d column %s: pages hold %d values, ColumnMetaData.num_values is %d", i, c.path, n, numValues)
			}
			out.chunks = append(out.chunks, c)
		}
	}
	// The chunks tile the data region: no byte between "PARE" and
	// FileCryptoMetaData belongs to no chunk.
	sorted := slices.SortedFunc(slices.Values(out.chunks), func(a, b chunk) int { return cmp.Compare(a.span.Off, b.span.Off) })
	pos := int64(4)
	for _, c := range sorted {
		if c.span.Off != pos {
			t.Fatalf("column chunk %s of row group %d starts at %d, the previous one ends at %d", c.path, c.rowGroup, c.span.Off, pos)
		}
		pos = c.span.End()
	}
	if pos != dataEnd {
		t.Fatalf("column chunks end at %d, FileCryptoMetaData starts at %d", pos, dataEnd)
	}
	return out
}

// openPages opens the modules of chunk c, in pairs: page header, page body.
func openPages(t *testing.T, data []byte, dek pme.DEK, c chunk) []page {
	t.Helper()
	b := data[c.span.Off:c.span.End()]
	var pages []page
	for len(b) > 0 {
		hdrBody, rest, err := pme.SplitModule(b)
		if err != nil {
			t.Fatalf("column %s: page header module: %v", c.path, err)
		}
		hdr, err := dek.Open(nil, hdrBody)
		if err != nil {
			t.Fatalf("column %s: page header module: %v", c.path, err)
		}
		ph, err := thrift.DecodeExact(hdr, thrift.Limits{})
		if err != nil {
			t.Fatalf("column %s: PageHeader: %v", c.path, err)
		}
		var p page
		p.typ = must(t, "PageHeader.type", func() (int32, error) { return ph.I32(1) })
		compressed := must(t, "PageHeader.compressed_page_size", func() (int32, error) { return ph.I32(3) })
		sub := map[int32]int16{pageData: 5, pageDictionary: 7, pageDataV2: 8}[p.typ]
		encField := map[int32]int16{pageData: 2, pageDictionary: 2, pageDataV2: 4}[p.typ]
		if sub == 0 {
			t.Fatalf("column %s: unexpected page type %d", c.path, p.typ)
		}
		sh := must(t, "PageHeader's typed header", func() (*thrift.Struct, error) { return ph.Struct(sub) })
		p.values = must(t, "num_values", func() (int32, error) { return sh.I32(1) })
		p.encoding = must(t, "encoding", func() (int32, error) { return sh.I32(encField) })
		pageBody, rest, err := pme.SplitModule(rest)
		if err != nil {
			t.Fatalf("column %s: page body module: %v", c.path, err)
		}
		plain, err := dek.Open(nil, pageBody)
		if err != nil {
			t.Fatalf("column %s: page body module: %v", c.path, err)
		}
		if int64(len(plain)) != int64(compressed) {
			t.Fatalf("column %s: page body of %d bytes, compressed_page_size %d (must be the plaintext length)", c.path, len(plain), compressed)
		}
		pages = append(pages, p)
		b = rest
	}
	return pages
}

func must[T any](t *testing.T, what string, f func() (T, error)) T {
	t.Helper()
	v, err := f()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}
