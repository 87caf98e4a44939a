// Package interop tests that DuckDB 1.5.6, through
// github.com/duckdb/duckdb-go/v2, reads every object the writer makes, given
// only the object's DEK, and returns exactly the values written (SOP-PME-1
// Sections 11.2, 11.3, 11.8 and 11.12; issue 2, item 9).
//
// Every object goes from the writer into the library's directory store,
// blobs.Dir, and is read back from there: DuckDB by path, the layout checks
// by bytes.
package interop

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/sovm/sop-pme/duckdb/internal/ducktest"
	"github.com/sovm/sop-pme/internal/testkit/testtables"
	"github.com/sovm/sop-pme/padme"
	"github.com/sovm/sop-pme/writer"
)

// TestDuckDBReadsEveryType writes one object with the default options and a
// column of every covered type, and compares DuckDB's values column by
// column.
func TestDuckDBReadsEveryType(t *testing.T) {
	t.Parallel()
	schema := testtables.AllTypes()
	rec := testtables.Record(schema, 3000, 1)
	defer rec.Release()
	obj := writeObject(t, ducktest.NewStore(t), schema, []arrow.RecordBatch{rec})
	lay := inspect(t, obj)
	if lay.rowGroups != 1 {
		t.Errorf("%d row groups, want 1 with the default options", lay.rowGroups)
	}
	checkDuckDB(t, obj, rec)
}

// TestDuckDBReadsLayouts writes the same table under every combination of
// codec, dictionary and data page version, in several row groups whose
// column chunks have at least 3 data pages each, checks that the object has
// that layout, and compares DuckDB's values.
func TestDuckDBReadsLayouts(t *testing.T) {
	t.Parallel()
	const (
		rows         = 5000
		rowGroupRows = 2100 // row groups of 2100, 2100 and 800 rows
		pageSize     = 64
	)
	// arrow-go closes a page only between write batches of 1024 values, so a
	// page size below what 1024 values take (booleans: 128 bytes) gives
	// about one data page per 1024 values: at least 3 in a 2100-row chunk.
	schema := testtables.AllTypes()
	rec := testtables.Record(schema, rows, 2)
	defer rec.Release()
	st := ducktest.NewStore(t)
	codecs := map[writer.Codec]int32{writer.Zstd: codecZstd, writer.Snappy: codecSnappy, writer.Uncompressed: codecUncompressed}
	for _, codec := range []writer.Codec{writer.Zstd, writer.Snappy, writer.Uncompressed} {
		for _, dict := range []bool{true, false} {
			for _, version := range []writer.DataPageVersion{writer.DataPageV1, writer.DataPageV2} {
				name := fmt.Sprintf("codec=%v/dictionary=%v/page=v%d", codec, map[bool]string{true: "on", false: "off"}[dict], version)
				if version == writer.DataPageV2 && codec != writer.Uncompressed {
					// The writer refuses this combination (DuckDB 1.5.6
					// cannot read compressed V2 pages in encrypted files);
					// TestV2CompressedRefused checks that.
					continue
				}
				t.Run(name, func(t *testing.T) {
					obj := writeObject(t, st, schema, []arrow.RecordBatch{rec},
						writer.WithCodec(codec), writer.WithDictionary(dict), writer.WithDataPageVersion(version),
						writer.WithRowGroupRows(rowGroupRows), writer.WithDataPageSize(pageSize))
					lay := inspect(t, obj)
					if lay.rowGroups != 3 {
						t.Errorf("%d row groups, want 3", lay.rowGroups)
					}
					wantPage := map[writer.DataPageVersion]int32{writer.DataPageV1: pageData, writer.DataPageV2: pageDataV2}[version]
					for _, c := range lay.chunks {
						where := fmt.Sprintf("row group %d column %s", c.rowGroup, c.path)
						if c.codec != codecs[codec] {
							t.Errorf("%s: codec %d, want %d (%v)", where, c.codec, codecs[codec], codec)
						}
						if c.rowGroup < 2 && c.dataPages() < 3 {
							t.Errorf("%s: %d data pages, want at least 3", where, c.dataPages())
						}
						// arrow-go never dictionary-encodes booleans.
						if want := dict && c.path != "b"; c.hasDictionaryPage() != want {
							t.Errorf("%s: dictionary page %v, want %v", where, c.hasDictionaryPage(), want)
						}
						for _, p := range c.pages {
							if p.typ == pageDictionary {
								continue
							}
							if p.typ != wantPage {
								t.Errorf("%s: page type %d, want %d", where, p.typ, wantPage)
							}
							if dictEnc := p.encoding == encRLEDictionary || p.encoding == encPlainDictionary; dictEnc != (dict && c.path != "b") {
								t.Errorf("%s: data page encoding %d with dictionary %v", where, p.encoding, dict)
							}
						}
					}
					checkDuckDB(t, obj, rec)
				})
			}
		}
	}

	// Row groups closed by size rather than by row count: the table goes in
	// as 10 records of 500 rows, and a row group closes once it has this
	// many encoded bytes.
	t.Run("row-group-bytes", func(t *testing.T) {
		var recs []arrow.RecordBatch
		for off := int64(0); off < rows; off += 500 {
			part := rec.NewSlice(off, off+500)
			defer part.Release()
			recs = append(recs, part)
		}
		obj := writeObject(t, st, schema, recs, writer.WithRowGroupBytes(32<<10), writer.WithDataPageSize(pageSize))
		lay := inspect(t, obj)
		if lay.rowGroups < 2 {
			t.Errorf("%d row groups, want several", lay.rowGroups)
		}
		t.Logf("%d row groups", lay.rowGroups)
		checkDuckDB(t, obj, rec)
	})
}

// TestPadDeltas makes objects whose pad delta n = Size − UnpaddedSize is
// exactly each of the deltas around the varint steps of the pad value's
// length prefix (Section 11.8). A footer key-value entry added with
// WithMetadata moves the unpadded size L one byte per byte of its value
// (plus one where the value's varint length prefix grows), so a value
// length can be chosen that puts L exactly n below a Padmé target.
func TestPadDeltas(t *testing.T) {
	t.Parallel()
	schema := testtables.AllTypes()
	rec := testtables.Record(schema, 100, 3)
	defer rec.Release()
	recs := []arrow.RecordBatch{rec}
	st := ducktest.NewStore(t)
	const key = "interop:filler"
	base := writeObject(t, st, schema, recs, writer.WithMetadata(key, "x"))
	l1 := base.UnpaddedSize // L with a 1-byte filler value
	for _, n := range []uint64{0, 127, 128, 129, 16384, 16385, 16386} {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			m, wantL, target := fillerFor(t, l1, n)
			obj := writeObject(t, st, schema, recs, writer.WithMetadata(key, strings.Repeat("x", m)))
			if obj.UnpaddedSize != wantL {
				t.Fatalf("with a %d-byte filler, UnpaddedSize is %d, want %d (from %d with a 1-byte filler)", m, obj.UnpaddedSize, wantL, l1)
			}
			if d := obj.Size - obj.UnpaddedSize; d != n || obj.Size != target {
				t.Fatalf("Size %d − UnpaddedSize %d = %d, want delta %d and size %d", obj.Size, obj.UnpaddedSize, d, n, target)
			}
			t.Logf("L=%d size=%d filler=%d bytes", obj.UnpaddedSize, obj.Size, m)
			inspect(t, obj)
			checkDuckDB(t, obj, rec)
		})
	}
}

// fillerFor returns a filler value length m for which an object whose
// unpadded size is l1 with a 1-byte filler gets unpadded size
// L = l1 + (m − 1) + (UvarintLen(m) − 1) and Padmé target T = L + n: the
// smallest such T. T − n rounds up to T only if T is a multiple of the
// Padmé granularity at that size and n is below it, so large deltas need
// large objects (n = 16 386 needs T ≥ 1 MiB, where the granularity is
// 32 KiB).
func fillerFor(t *testing.T, l1, n uint64) (m int, l, target uint64) {
	t.Helper()
	for T := l1 + n; T < l1+n+(4<<20); T++ {
		l := T - n
		if got, err := padme.Target(l); err != nil || got != T {
			continue
		}
		d := l - l1 // = (m − 1) + (UvarintLen(m) − 1)
		for w := 1; w <= 4; w++ {
			if m := int(d) + 2 - w; m >= 1 && padme.UvarintLen(uint64(m)) == w {
				return m, l, T
			}
		}
	}
	t.Fatalf("no filler length reaches a delta of %d from L=%d", n, l1)
	return 0, 0, 0
}

// TestDuckDBKeys checks the other way to pass the key, and that DuckDB
// refuses to read an object with a wrong key or none.
func TestDuckDBKeys(t *testing.T) {
	t.Parallel()
	schema := testtables.AllTypes()
	rec := testtables.Record(schema, 300, 4)
	defer rec.Release()
	obj := writeObject(t, ducktest.NewStore(t), schema, []arrow.RecordBatch{rec})

	t.Run("add_parquet_key", func(t *testing.T) {
		db := ducktest.OpenDuckDB(t)
		if _, err := db.Exec("PRAGMA add_parquet_key('k', " + ducktest.SQLString(keyBase64(obj)) + ")"); err != nil {
			t.Fatalf("add_parquet_key: %s", ducktest.ErrorText(err))
		}
		got, err := readAll(db, obj.path, "{footer_key: 'k'}", schema)
		if err != nil {
			t.Fatalf("read_parquet: %s", ducktest.ErrorText(err))
		}
		compareRows(t, rec, got)
	})

	t.Run("wrong-key", func(t *testing.T) {
		wrong := obj.DEK.Bytes()
		wrong[len(wrong)-1] ^= 1
		_, err := readAll(ducktest.OpenDuckDB(t), obj.path, ducktest.FooterKeyValue(base64Std(wrong)), schema)
		if err == nil || !strings.Contains(err.Error(), "Computed AES tag differs") { // DuckDB's message; it has no error codes
			t.Fatalf("read with a wrong key: err = %v, want DuckDB's AES tag mismatch", err)
		}
	})

	t.Run("footer_key_value-base64-string", func(t *testing.T) {
		// The base64 text itself is not a key: footer_key_value is not
		// decoded, and 44 bytes is no AES key length.
		_, err := readAll(ducktest.OpenDuckDB(t), obj.path, "{footer_key_value: "+ducktest.SQLString(keyBase64(obj))+"}", schema)
		if err == nil {
			t.Fatalf("read with the base64 text as footer_key_value succeeded")
		}
		t.Logf("base64 text as the key: %v", firstLine(err))
	})

	t.Run("no-key", func(t *testing.T) {
		var n int64
		err := ducktest.OpenDuckDB(t).QueryRow("SELECT count(*) FROM read_parquet(" + ducktest.SQLString(obj.path) + ")").Scan(&n)
		if err == nil {
			t.Fatalf("read without a key succeeded, count %d", n)
		}
		t.Logf("without a key: %v", firstLine(err))
	})
}

// firstLine returns the first line of err's message: DuckDB appends the SQL.
func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// TestV2CompressedRefused: data page V2 with a codec is refused, since
// DuckDB 1.5.6 reads the levels and values of a compressed V2 page in an
// encrypted file as two modules (a layout no PME writer produces), so it
// could not read such an object.
func TestV2CompressedRefused(t *testing.T) {
	t.Parallel()
	schema := testtables.AllTypes()
	st := ducktest.NewStore(t)
	for _, codec := range []writer.Codec{writer.Zstd, writer.Snappy} {
		if _, err := writer.New(context.Background(), st, schema, writer.WithCodec(codec), writer.WithDataPageVersion(writer.DataPageV2)); !errors.Is(err, writer.ErrOption) {
			t.Errorf("V2 with %v: %v, want writer.ErrOption", codec, err)
		}
	}
}
