package interop

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/sovm/sop-pme/duckdb/internal/ducktest"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/writer"
)

// This file holds what the tests of the reader share: scans collected into
// one record, and the comparison of Arrow arrays.

// openReader opens object id of st with dek.
func openReader(t *testing.T, st *ducktest.Store, id storageid.ID, dek pme.DEK) *reader.Reader {
	t.Helper()
	r, err := reader.Open(context.Background(), st, id, ducktest.Keys{id: dek})
	if err != nil {
		t.Fatalf("reader.Open: %v", err)
	}
	return r
}

// scan reads everything Scan(opts...) returns into one record: the
// concatenation of its records, in order. It returns the number of records
// read before an error, and the error, which matches what the record reader
// reported.
func scan(r *reader.Reader, opts ...reader.ScanOption) (arrow.RecordBatch, int, error) {
	rr, err := r.Scan(context.Background(), opts...)
	if err != nil {
		return nil, 0, err
	}
	defer rr.Release()
	var recs []arrow.RecordBatch
	defer func() {
		for _, rec := range recs {
			rec.Release()
		}
	}()
	for rr.Next() {
		rec := rr.RecordBatch()
		rec.Retain()
		recs = append(recs, rec)
	}
	if err := rr.Err(); err != nil {
		return nil, len(recs), err
	}
	cols := make([]arrow.Array, rr.Schema().NumFields())
	var rows int64
	for _, rec := range recs {
		rows += rec.NumRows()
	}
	for c, f := range rr.Schema().Fields() {
		parts := make([]arrow.Array, len(recs))
		for i, rec := range recs {
			parts[i] = rec.Column(c)
		}
		var col arrow.Array
		if len(parts) == 0 {
			col = array.MakeArrayOfNull(memory.DefaultAllocator, f.Type, 0)
		} else if col, err = array.Concatenate(parts, memory.DefaultAllocator); err != nil {
			return nil, len(recs), fmt.Errorf("concatenating column %s: %w", f.Name, err)
		}
		defer col.Release()
		cols[c] = col
	}
	return array.NewRecordBatch(rr.Schema(), cols, rows), len(recs), nil
}

// mustScan is scan for reads that must succeed.
func mustScan(t *testing.T, r *reader.Reader, opts ...reader.ScanOption) arrow.RecordBatch {
	t.Helper()
	rec, _, err := scan(r, opts...)
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	return rec
}

// equalArrays reports whether got holds exactly the values of want, with
// the same type. It is array.Equal, except for floating-point columns,
// which compare bit for bit (array.Equal uses ==, for which NaN differs from
// itself and -0 equals 0); any NaN equals any NaN, as in sameValue.
func equalArrays(want, got arrow.Array) bool {
	if !arrow.TypeEqual(want.DataType(), got.DataType()) || want.Len() != got.Len() {
		return false
	}
	switch w := want.(type) {
	case *array.Float32:
		g := got.(*array.Float32)
		for i := range w.Len() {
			if w.IsNull(i) != g.IsNull(i) {
				return false
			}
			a, b := w.Value(i), g.Value(i)
			if !w.IsNull(i) && math.Float32bits(a) != math.Float32bits(b) && !(a != a && b != b) {
				return false
			}
		}
		return true
	case *array.Float64:
		g := got.(*array.Float64)
		for i := range w.Len() {
			if w.IsNull(i) != g.IsNull(i) {
				return false
			}
			a, b := w.Value(i), g.Value(i)
			if !w.IsNull(i) && math.Float64bits(a) != math.Float64bits(b) && !(a != a && b != b) {
				return false
			}
		}
		return true
	}
	return array.Equal(want, got)
}

// compareRecords checks got against want column by column, by name, with
// equalArrays, and reports the first differing row of each column.
func compareRecords(t *testing.T, want, got arrow.RecordBatch) {
	t.Helper()
	if want.NumRows() != got.NumRows() || want.NumCols() != got.NumCols() {
		t.Fatalf("read %d rows × %d columns, want %d × %d", got.NumRows(), got.NumCols(), want.NumRows(), want.NumCols())
	}
	for c, f := range want.Schema().Fields() {
		g := got.Column(c)
		if name := got.Schema().Field(c).Name; name != f.Name {
			t.Errorf("column %d is %s, want %s", c, name, f.Name)
			continue
		}
		w := want.Column(c)
		if equalArrays(w, g) {
			continue
		}
		if !arrow.TypeEqual(w.DataType(), g.DataType()) {
			t.Errorf("column %s: type %v, want %v", f.Name, g.DataType(), w.DataType())
			continue
		}
		for i := range w.Len() {
			ws, gs := array.NewSlice(w, int64(i), int64(i+1)), array.NewSlice(g, int64(i), int64(i+1))
			same := equalArrays(ws, gs)
			if !same {
				t.Errorf("column %s row %d: read %v, want %v", f.Name, i, gs, ws)
			}
			ws.Release()
			gs.Release()
			if !same {
				break
			}
		}
	}
}

// fieldIDsOf returns the Parquet field IDs a schema's fields carry, by
// dotted path (list elements as .element, map keys and values as .key and
// .value). Fields without an ID (none, or arrow-go's -1) are left out.
func fieldIDsOf(t *testing.T, s *arrow.Schema) map[string]int {
	t.Helper()
	out := map[string]int{}
	var walk func(prefix string, f arrow.Field)
	walk = func(prefix string, f arrow.Field) {
		path := prefix + f.Name
		if v, ok := f.Metadata.GetValue(writer.FieldIDKey); ok {
			id, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("field %s: field ID %q", path, v)
			}
			if id >= 0 {
				out[path] = id
			}
		}
		switch dt := f.Type.(type) {
		case *arrow.MapType:
			walk(path+".", dt.KeyField())
			walk(path+".", dt.ItemField())
		case *arrow.ListType:
			walk(path+".", dt.ElemField())
		case *arrow.StructType:
			for _, c := range dt.Fields() {
				walk(path+".", c)
			}
		}
	}
	for _, f := range s.Fields() {
		walk("", f)
	}
	return out
}

// fieldID returns the field ID of a field of schema by dotted path.
func fieldID(t *testing.T, schema *arrow.Schema, path string) int32 {
	t.Helper()
	id, ok := fieldIDsOf(t, schema)[path]
	if !ok {
		t.Fatalf("no field ID for %s", path)
	}
	return int32(id)
}

// checkConformant checks that reader.Check reports a written object
// conformant, with the key_ref and unpadded size the writer reported.
func checkConformant(t *testing.T, st *ducktest.Store, obj writer.Object) {
	t.Helper()
	rep, err := reader.Check(context.Background(), st, obj.StorageID, ducktest.Keys{obj.StorageID: obj.DEK})
	if err != nil {
		t.Fatalf("reader.Check: %v", err)
	}
	if !rep.Conformant() {
		t.Fatalf("reader.Check of a written object: %v (checked %v)", rep, rep.Checked)
	}
	if rep.Size != int64(obj.Size) || rep.UnpaddedSize != int64(obj.UnpaddedSize) || rep.KeyRef != obj.KeyRef {
		t.Errorf("reader.Check: size %d, unpadded %d, key_ref %x; the writer reported %d, %d, %x",
			rep.Size, rep.UnpaddedSize, rep.KeyRef, obj.Size, obj.UnpaddedSize, obj.KeyRef)
	}
}

// failedRequirements returns the requirements a report fails, in order.
func failedRequirements(rep *reader.Report) []reader.Requirement {
	var out []reader.Requirement
	for _, f := range rep.Findings {
		if !slices.Contains(out, f.Requirement) {
			out = append(out, f.Requirement)
		}
	}
	slices.Sort(out)
	return out
}
