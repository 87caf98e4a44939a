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
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
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
// the same plaintext file, row by row: nulls, strings inlined (up to 12
// bytes) and not, repeated within and across vectors, binaries, and a
// column whose chunks fall back to plain pages (read as strings) beside
// them; in every projection of them.
func TestDictionaryColumns(t *testing.T) {
	t.Parallel()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "flag", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: testtables.FieldID(1)},
		{Name: "mode", Type: arrow.BinaryTypes.Binary, Metadata: testtables.FieldID(2)},
		{Name: "comment", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: testtables.FieldID(3)},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64, Metadata: testtables.FieldID(4)},
		{Name: "ship", Type: arrow.BinaryTypes.String, Metadata: testtables.FieldID(5)},
	}, nil)
	b := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
	defer b.Release()
	flags := []string{"A", "N", "R", "a string longer than twelve bytes", "", "exactly12byt", "thirteen byte"}
	ships := []string{"REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB", "DELIVER IN PERSON"}
	const rows = 20000
	for i := range rows {
		if i%13 == 0 {
			b.Field(0).AppendNull()
		} else {
			b.Field(0).(*array.StringBuilder).Append(flags[i*7%len(flags)])
		}
		b.Field(1).(*array.BinaryBuilder).Append([]byte(fmt.Sprintf("MODE\x00%d", i%7)))
		if i%17 == 0 {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("comment number %d, somewhat long", i/3))
		}
		b.Field(3).(*array.Int64Builder).Append(int64(i))
		b.Field(4).(*array.StringBuilder).Append(ships[i*5%len(ships)])
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	tbl := array.NewTableFromRecords(schema, []arrow.RecordBatch{rec})
	defer tbl.Release()
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithDictionaryDefault(true), parquet.WithDictionaryPageSizeLimit(1<<10), parquet.WithDataPageSize(1<<10))
	if err := pqarrow.WriteTable(tbl, &buf, 7000, props, pqarrow.NewArrowWriterProperties()); err != nil {
		t.Fatal(err)
	}
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
	for i, want := range []bool{true, true, false, false, true} {
		if got := ds.Field(i).Type.ID() == arrow.DICTIONARY; got != want {
			t.Fatalf("column %s read as %s", ds.Field(i).Name, ds.Field(i).Type)
		}
	}
	db, native := openDB(t, st, st, WithThreads(2)), openNative(t, 1)
	plainScan := "read_parquet(" + ducktest.SQLString(plain) + ")"
	for _, cols := range []string{"*", "flag, n", "ship, mode, flag", "comment, ship", "flag", "count(*), count(flag), max(ship), min(mode)"} {
		q := "SELECT " + cols + " FROM %s"
		if cols[0] != 'c' || cols == "comment, ship" {
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
	for i, s := range vecData[[16]byte](v, n) {
		if !valid(mask, i) {
			out[i] = "<null>"
			continue
		}
		l := binary.LittleEndian.Uint32(s[:4])
		if l <= 12 {
			out[i] = string(s[4 : 4+l])
			continue
		}
		p := *(*unsafe.Pointer)(unsafe.Pointer(&s[8]))
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
