package interop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/sovm/sop-pme/duckdb/internal/ducktest"
	"github.com/sovm/sop-pme/internal/testkit/plainedit"
	"github.com/sovm/sop-pme/internal/thrift"
	"github.com/sovm/sop-pme/writer"
)

// The encodings a sealed object keeps are its file's: a page DuckDB 1.5.6
// cannot decode would make an object that breaks Section 11.3 ("readable
// by any conforming reader holding only the object's DEK"). The test below
// writes one plaintext file for every pair of a Parquet physical type and
// a value encoding arrow-go writes (and pyarrow, and for level encodings
// other writers use), asks DuckDB and arrow-go (this library's reader) to
// read it, and checks that the sealer takes exactly the files both read: a
// file both read seals, and DuckDB and the reader read the sealed object as
// DuckDB reads the file; any other is refused with writer.ErrEncoding (import
// then re-encodes it, or fails if arrow-go cannot read its input). DuckDB's decoders are
// the same for a plaintext and an encrypted file; only the page framing
// differs, which the other tests of the sealer cover.

// encodingCase is one file: a column of one physical type, its data pages
// in one encoding.
type encodingCase struct {
	name     string
	field    arrow.Field
	props    []parquet.WriterProperty
	arrow    []pqarrow.WriterOption
	encoding parquet.Encoding // of the data pages, as the file must have it
	edit     func(p *plainedit.Page) error
	noNulls  bool   // the column is optional, but every row has a value
	file     string // a file of testdata/pyarrow (gen.py) instead: what arrow-go does not write
	rows     int    // the file's rows
}

// encodingRecord returns a record of one column of type f, n rows, a few
// distinct values (a dictionary pays) and some nulls.
func encodingRecord(t *testing.T, f arrow.Field, n int, noNulls bool) arrow.RecordBatch {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{f}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range n {
		if f.Nullable && !noNulls && i%11 == 3 {
			b.Field(0).AppendNull()
			continue
		}
		v := i % 13
		switch fb := b.Field(0).(type) {
		case *array.BooleanBuilder:
			fb.Append(v%3 == 0)
		case *array.Int32Builder:
			fb.Append(int32(v*1000 - 7))
		case *array.Int64Builder:
			fb.Append(int64(v)*1_000_000_007 - 3)
		case *array.Float32Builder:
			fb.Append(float32(v) / 4)
		case *array.Float64Builder:
			fb.Append(float64(v) / 8)
		case *array.StringBuilder:
			fb.Append(fmt.Sprintf("value %d", v))
		case *array.FixedSizeBinaryBuilder:
			fb.Append([]byte{byte(v), 1, 2, byte(v * 3)})
		case *array.TimestampBuilder:
			fb.Append(arrow.Timestamp(int64(v) * 86_400_000_000_000))
		default:
			t.Fatalf("no values for %T", fb)
		}
	}
	return b.NewRecordBatch()
}

func encodingCases() []encodingCase {
	types := []arrow.Field{
		{Name: "boolean", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "int32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "int64", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "int96", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}, Nullable: true},
		{Name: "float", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "double", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "byte_array", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "flba", Type: &arrow.FixedSizeBinaryType{ByteWidth: 4}, Nullable: true},
	}
	var cases []encodingCase
	for _, f := range types {
		var aw []pqarrow.WriterOption
		if f.Name == "int96" {
			aw = append(aw, pqarrow.WithDeprecatedInt96Timestamps(true))
		}
		for _, enc := range []parquet.Encoding{parquet.Encodings.Plain, parquet.Encodings.RLE, parquet.Encodings.DeltaBinaryPacked,
			parquet.Encodings.DeltaLengthByteArray, parquet.Encodings.DeltaByteArray, parquet.Encodings.ByteStreamSplit} {
			cases = append(cases, encodingCase{
				name: f.Name + "/" + enc.String(), field: f, arrow: aw, encoding: enc,
				props: []parquet.WriterProperty{parquet.WithDictionaryDefault(false), parquet.WithEncoding(enc)},
			})
		}
		// Dictionaries: RLE_DICTIONARY data pages (format 2.x), and
		// PLAIN_DICTIONARY ones (format 1.0).
		cases = append(cases,
			encodingCase{name: f.Name + "/RLE_DICTIONARY", field: f, arrow: aw, encoding: parquet.Encodings.RLEDict,
				props: []parquet.WriterProperty{parquet.WithDictionaryDefault(true)}},
			encodingCase{name: f.Name + "/PLAIN_DICTIONARY", field: f, arrow: aw, encoding: parquet.Encodings.PlainDict,
				props: []parquet.WriterProperty{parquet.WithDictionaryDefault(true), parquet.WithVersion(parquet.V1_0)}})
	}
	// Definition levels in the deprecated BIT_PACKED encoding (parquet-mr's
	// format 1.0 files): a column without nulls, whose levels are all 1.
	cases = append(cases, encodingCase{
		name: "levels/BIT_PACKED", field: arrow.Field{Name: "int32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		encoding: parquet.Encodings.Plain, props: []parquet.WriterProperty{parquet.WithDictionaryDefault(false)},
		edit: bitPackedLevels, noNulls: true,
	})
	cases = append(cases, encodingCase{name: "flba/DELTA_BYTE_ARRAY (pyarrow)", file: "testdata/pyarrow/flba-delta-byte-array.parquet",
		encoding: parquet.Encodings.DeltaByteArray, rows: 3000})
	return cases
}

// bitPackedLevels rewrites the definition levels of a V1 data page of an
// optional column without nulls (RLE: a 4-byte length, then one run of 1s)
// as BIT_PACKED levels: one bit each, no length.
func bitPackedLevels(p *plainedit.Page) error {
	dp, err := p.Header.Struct(5)
	if err != nil {
		return nil // not a V1 data page
	}
	n, _ := dp.I32(1)
	rleLen := int(uint32(p.Body[0]) | uint32(p.Body[1])<<8 | uint32(p.Body[2])<<16 | uint32(p.Body[3])<<24)
	packed := bytes.Repeat([]byte{0xff}, (int(n)+7)/8)
	p.Body = append(packed, p.Body[4+rleLen:]...)
	p.Header.Set(2, thrift.I32(int32(len(p.Body))))
	dp.Set(3, thrift.I32(int32(parquet.Encodings.BitPacked)))
	return nil
}

// pageEncodings returns the encodings of the data pages of a plaintext
// file, and of their definition levels.
func pageEncodings(t *testing.T, b []byte) (values, levels map[parquet.Encoding]bool) {
	t.Helper()
	values, levels = map[parquet.Encoding]bool{}, map[parquet.Encoding]bool{}
	_, err := plainedit.Rewrite(b, func(p *plainedit.Page) error {
		for _, sub := range []int16{5, 8} { // data_page_header, data_page_header_v2
			h, err := p.Header.Struct(sub)
			if err != nil {
				continue
			}
			enc, _ := h.I32(map[int16]int16{5: 2, 8: 4}[sub])
			values[parquet.Encoding(enc)] = true
			if sub == 5 {
				def, _ := h.I32(3)
				levels[parquet.Encoding(def)] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return values, levels
}

// TestSealerEncodingsDuckDBReads: see the comment above. It logs the table
// of what DuckDB 1.5.6 reads; writer.ErrEncoding's documentation lists it.
func TestSealerEncodingsDuckDBReads(t *testing.T) {
	t.Parallel()
	st := ducktest.NewStore(t)
	var table []string
	written := 0
	for _, c := range encodingCases() {
		t.Run(c.name, func(t *testing.T) {
			rows := 300
			var plain []byte
			var rec arrow.RecordBatch
			if c.file != "" {
				var err error
				if plain, err = os.ReadFile(c.file); err != nil {
					t.Fatal(err)
				}
				rows = c.rows
			} else {
				rec = encodingRecord(t, c.field, rows, c.noNulls)
				defer rec.Release()
				props := append([]parquet.WriterProperty{parquet.WithCompression(compress.Codecs.Uncompressed), parquet.WithStats(true)}, c.props...)
				var err error
				if plain, err = writeEncoded(rec, props, c.arrow); err != nil {
					t.Logf("arrow-go does not write it: %v", firstLine(err))
					return
				}
			}
			var err error
			if c.edit != nil {
				if plain, err = plainedit.Rewrite(plain, c.edit); err != nil {
					t.Fatal(err)
				}
			}
			values, levels := pageEncodings(t, plain)
			want := c.encoding
			if c.edit != nil {
				want = parquet.Encodings.BitPacked
				values = levels
				// The rewritten file is sound: arrow-go reads its rows.
				if got := readPlainTable(t, plain); !array.RecordEqual(got, rec) {
					t.Fatal("arrow-go reads other rows from the file with BIT_PACKED levels")
				}
			}
			if !values[want] || len(values) != 1 {
				t.Logf("arrow-go wrote %v data pages, not %v: not this case", keysOf(values), want)
				return
			}
			written++
			in := filepath.Join(t.TempDir(), "in.parquet")
			if err := os.WriteFile(in, plain, 0o600); err != nil {
				t.Fatal(err)
			}
			_, duckErr := ducktest.OpenDuckDB(t).Query("SELECT * FROM read_parquet(" + ducktest.SQLString(in) + ")")
			if duckErr == nil {
				// Reading every row, not just planning the query.
				cols, duckRows := duckRead(t, ducktest.OpenDuckDB(t), in, "")
				if got := len(duckRows); len(cols) != 1 || got != rows {
					t.Fatalf("DuckDB read %d columns, %d rows; want 1 and %d", len(cols), got, rows)
				}
			}
			goErr := arrowGoReads(plain, rows)
			readable := duckErr == nil && goErr == nil
			obj, err := sealPath(t, st, in, writer.WithAssignFieldIDs())
			switch {
			case readable && err != nil:
				t.Errorf("DuckDB and arrow-go read the file, the sealer refuses it: %v", err)
			case !readable && err == nil:
				t.Errorf("DuckDB (%v) or arrow-go (%v) cannot read the file, the sealer sealed it", duckErr, goErr)
			case !readable && (!errors.Is(err, writer.ErrEncoding) || !errors.Is(err, writer.ErrNotSealable)):
				t.Errorf("DuckDB or arrow-go cannot read the file, the sealer refuses it with %v, want ErrNotSealable and writer.ErrEncoding", err)
			case err == nil:
				checkSealed(t, st, in, obj)
			}
			verdict := func(err error) string {
				if err != nil {
					return "refuses (" + firstLine(err) + ")"
				}
				return "reads"
			}
			table = append(table, fmt.Sprintf("%-34s DuckDB %s, arrow-go %s", c.name, verdict(duckErr), verdict(goErr)))
		})
	}
	sort.Strings(table)
	t.Logf("DuckDB 1.5.6 and Parquet encodings:\n%s", strings.Join(table, "\n"))
	if written < 20 {
		t.Errorf("only %d files had the encoding they were written for: the test proves little", written)
	}
}

// writeEncoded has arrow-go write rec; arrow-go panics on an encoding it
// does not implement for the type, which is an error here.
func writeEncoded(rec arrow.RecordBatch, props []parquet.WriterProperty, aw []pqarrow.WriterOption) (b []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	var buf bytes.Buffer
	fw, err := pqarrow.NewFileWriter(rec.Schema(), &buf, parquet.NewWriterProperties(props...), pqarrow.NewArrowWriterProperties(aw...))
	if err != nil {
		return nil, err
	}
	err = fw.Write(rec)
	if cerr := fw.Close(); err == nil {
		err = cerr
	}
	return buf.Bytes(), err
}

// arrowGoReads reports whether arrow-go, the reader's decoder, reads the
// plaintext Parquet file b whole, and finds rows rows.
func arrowGoReads(b []byte, rows int) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	pf, err := file.NewParquetReader(bytes.NewReader(b))
	if err != nil {
		return err
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return err
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		return err
	}
	defer tbl.Release()
	if tbl.NumRows() != int64(rows) {
		return fmt.Errorf("%d rows, want %d", tbl.NumRows(), rows)
	}
	return nil
}

// readPlainTable reads a plaintext Parquet file with arrow-go, into one
// record.
func readPlainTable(t *testing.T, b []byte) arrow.RecordBatch {
	t.Helper()
	pf, err := file.NewParquetReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	tr := array.NewTableReader(tbl, tbl.NumRows())
	defer tr.Release()
	if !tr.Next() {
		t.Fatal("no rows")
	}
	rec := tr.RecordBatch()
	rec.Retain()
	return rec
}

func keysOf(m map[parquet.Encoding]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k.String())
	}
	sort.Strings(out)
	return out
}
