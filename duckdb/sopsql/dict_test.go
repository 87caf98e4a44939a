package sopsql

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/duckdb/duckdb-go/v2"
	"github.com/duckdb/duckdb-go/v2/mapping"
	"github.com/sovm/sop-pme/duckdb/internal/ducktest"
	"github.com/sovm/sop-pme/internal/testkit/testtables"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/writer"
)

// TestDictionaryColumns: sop_scan reads the string and binary columns
// whose chunks are dictionary-encoded throughout as dictionaries
// (reader.WithDictionaries), and gives the values read_parquet gives on
// the same plaintext file (testtables.DictionaryFile), row by row: nulls,
// strings inlined (up to 12 bytes) and not, repeated within and across
// vectors, binaries, and a column whose chunks fall back to plain pages
// (read as strings) beside them; in every projection of them.
func TestDictionaryColumns(t *testing.T) {
	t.Parallel()
	const rows = 20000
	raw, err := testtables.DictionaryFile(rows, 7000)
	if err != nil {
		t.Fatal(err)
	}
	buf := bytes.NewBuffer(raw)
	plain := filepath.Join(t.TempDir(), "dict.parquet")
	if err := os.WriteFile(plain, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st := ducktest.NewStore(t)
	obj, err := writer.SealFile(ctx, st, bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	st.Keys[obj.StorageID] = obj.DEK
	// The test is about dictionaries: flag, mode and ship read as such,
	// comment (which falls back to plain pages) does not.
	r, err := reader.Open(ctx, st, obj.StorageID, st.Keys)
	if err != nil {
		t.Fatal(err)
	}
	ds := r.DictionarySchema(r.Schema().Fields())
	for i, want := range []bool{true, true, false, false} {
		if got := ds.Field(i).Type.ID() == arrow.DICTIONARY; got != want {
			t.Fatalf("column %s read as %s", ds.Field(i).Name, ds.Field(i).Type)
		}
	}
	db, native := openDB(t, st, st, WithThreads(2)), openNative(t, 1)
	plainScan := "read_parquet(" + ducktest.SQLString(plain) + ")"
	for _, cols := range []string{"*", "flag, n", "n, mode, flag", "comment, mode", "flag", "count(*), count(flag), max(flag), min(mode)"} {
		q := "SELECT " + cols + " FROM %s"
		if cols[0] != 'c' || cols == "comment, mode" {
			q += " ORDER BY ALL"
		}
		want := ducktest.MustQuery(t, native, fmt.Sprintf(q, plainScan))
		got := ducktest.MustQuery(t, db.SQL(), fmt.Sprintf(q, sopScan(obj.StorageID)))
		if len(want) == 0 {
			t.Fatalf("%s: no rows", cols)
		}
		compareRows(t, cols, want, got)
	}
}

// readStrings returns the first n elements of VARCHAR vector v ("<null>"
// for a NULL).
func readStrings(v mapping.Vector, n int) []string {
	mask := unsafe.Slice((*uint64)(mapping.VectorGetValidity(v)), (n+63)/64)
	out := make([]string, n)
	strs := vecData[[2]uint64](v, n) // duckdb_string_t: 16 bytes, 8-aligned
	for i := range strs {
		if !valid(mask, i) {
			out[i] = "<null>"
			continue
		}
		b := unsafe.Slice((*byte)(unsafe.Pointer(&strs[i])), 16)
		l := binary.LittleEndian.Uint32(b[:4])
		if l <= 12 {
			out[i] = string(b[4 : 4+l])
			continue
		}
		p := *(*unsafe.Pointer)(unsafe.Pointer(&strs[i][1]))
		out[i] = string(unsafe.Slice((*byte)(p), l))
	}
	return out
}

// TestDictWriter: the dictionary writer writes each row's entry (inlined
// or not, the same entry in many rows and several vectors), NULL for a
// null row and for a row whose entry is NULL; an entry that is not UTF-8
// fails the vector with ErrData only when a valid row uses it; an index
// beyond the dictionary fails with ErrData.
func TestDictWriter(t *testing.T) {
	t.Parallel()
	mem := memory.NewGoAllocator()
	sb := array.NewStringBuilder(mem)
	defer sb.Release()
	entries := []string{"ok", "bad\xff", "", "a string longer than twelve bytes", "exactly12byt"}
	sb.AppendValues(entries, nil)
	sb.AppendNull() // entry 5
	dict := sb.NewArray()
	defer dict.Release()
	dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	build := func(idx []int32, valid []bool) *array.Dictionary {
		ib := array.NewInt32Builder(mem)
		defer ib.Release()
		ib.AppendValues(idx, valid)
		ind := ib.NewArray()
		defer ind.Release()
		return array.NewDictionaryArray(dt, ind, dict)
	}
	typ := mapping.CreateLogicalType(mapping.TypeVarchar)
	defer mapping.DestroyLogicalType(&typ)
	write := func(ws *writeState, a *array.Dictionary, off, n int) ([]string, error) {
		v := mapping.CreateVector(typ, mapping.IdxT(duckdb.GetDataChunkCapacity()))
		defer mapping.DestroyVector(&v)
		if err := dictWriter(true)(ws, v, a, off, n); err != nil {
			return nil, err
		}
		return readStrings(v, n), nil
	}
	const rows = 5000
	idx, ok := make([]int32, rows), make([]bool, rows)
	var want []string
	for i := range rows {
		idx[i], ok[i] = int32(i*7%6), i%5 != 0
		switch {
		case idx[i] == 1: // the bad entry, in null rows only
			ok[i] = false
			fallthrough
		case !ok[i] || idx[i] == 5:
			want = append(want, "<null>")
		default:
			want = append(want, entries[idx[i]])
		}
	}
	a := build(idx, ok)
	defer a.Release()
	var ws writeState
	for off := 0; off < rows; {
		n := min(rows-off, 1+(off*31)%duckdb.GetDataChunkCapacity())
		got, err := write(&ws, a, off, n)
		if err != nil {
			t.Fatalf("rows [%d, %d): %v", off, off+n, err)
		}
		for i, g := range got {
			if g != want[off+i] {
				t.Fatalf("row %d: %q, want %q", off+i, g, want[off+i])
			}
		}
		off += n
	}
	bad := build([]int32{0, 1, 0}, nil)
	defer bad.Release()
	if _, err := write(&writeState{}, bad, 0, 3); !errors.Is(err, ErrData) {
		t.Errorf("a valid row of an entry that is not UTF-8: %v, want ErrData", err)
	}
	beyond := build([]int32{0, 6}, nil)
	defer beyond.Release()
	if _, err := write(&writeState{}, beyond, 0, 2); !errors.Is(err, ErrData) {
		t.Errorf("an index beyond the dictionary: %v, want ErrData", err)
	}
}

// TestDuckDBDictionaries: a file DuckDB writes (no page encoding
// statistics; PLAIN_DICTIONARY its chunks' only encoding) has its
// dictionary-encoded strings read as dictionaries, and sop_scan gives
// what read_parquet gives on the plaintext, row by row, nulls included.
func TestDuckDBDictionaries(t *testing.T) {
	t.Parallel()
	query := "SELECT l_orderkey, l_returnflag, l_shipmode, CASE WHEN l_orderkey % 11 = 0 THEN NULL ELSE l_shipinstruct END AS l_shipinstruct, l_comment FROM (" +
		fmt.Sprintf(lineitemSQL, 30000) + ")"
	opts := "FIELD_IDS auto, ROW_GROUP_SIZE 8192"
	st, id, plain := duckDBObject(t, query, opts)
	r, err := reader.Open(context.Background(), st, id, st.Keys)
	if err != nil {
		t.Fatal(err)
	}
	if r.NumRowGroups() < 3 {
		t.Fatalf("%d row groups", r.NumRowGroups())
	}
	ds := r.DictionarySchema(r.Schema().Fields())
	for i, want := range []bool{false, true, true, true, false} {
		if got := ds.Field(i).Type.ID() == arrow.DICTIONARY; got != want {
			t.Errorf("column %s read as %s", ds.Field(i).Name, ds.Field(i).Type)
		}
	}
	db, native := openDB(t, st, st, WithThreads(2)), openNative(t, 1)
	q := "SELECT * FROM %s ORDER BY l_orderkey"
	compareRows(t, "lineitem", ducktest.MustQuery(t, native, fmt.Sprintf(q, "read_parquet("+ducktest.SQLString(plain)+")")),
		ducktest.MustQuery(t, db.SQL(), fmt.Sprintf(q, sopScan(id))))
}
