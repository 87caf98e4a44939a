package sopsql

import (
	"fmt"
	"reflect"
	"unsafe"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/duckdb/duckdb-go/v2/mapping"
)

// This file reaches, under duckdb-go's DataChunk, the duckdb_data_chunk
// of DuckDB's C API and the positions of the columns DuckDB asked for, so
// that the bulk writers (vector.go) can write whole vectors through the C
// API (duckdb_vector_get_data, duckdb_vector_get_validity) instead of one
// cgo call per value through duckdb-go's SetChunkValue.
//
// duckdb-go v2.10506.0 keeps both in unexported fields of DataChunk:
// chunk (a mapping.DataChunk, whose Ptr is the duckdb_data_chunk) and
// projection (for each column of the table function, its position in the
// chunk, or -1 if DuckDB did not ask for it; nil when DuckDB asks for every
// column in order). reflect reads unexported fields by name; a duckdb-go
// that renames them makes rawChunk fail with an error (never a wrong
// pointer), and TestRawChunkFields fails first.

// Names of duckdb-go's DataChunk fields rawChunk reads.
const (
	chunkField      = "chunk"
	chunkPtrField   = "Ptr"
	projectionField = "projection"
)

// rawView is the C API's view of one output chunk.
type rawView struct {
	chunk mapping.DataChunk
	proj  []int // nil: column i is at position i
}

// rawChunk returns the C API's view of ch.
func rawChunk(ch *duckdb.DataChunk) (rawView, error) {
	v := reflect.ValueOf(ch).Elem()
	c := v.FieldByName(chunkField)
	if !c.IsValid() || c.Kind() != reflect.Struct {
		return rawView{}, fmt.Errorf("sopsql: internal error: duckdb.DataChunk has no field %q", chunkField)
	}
	p := c.FieldByName(chunkPtrField)
	if !p.IsValid() || p.Kind() != reflect.UnsafePointer || p.IsNil() {
		return rawView{}, fmt.Errorf("sopsql: internal error: duckdb.DataChunk.%s has no pointer %q", chunkField, chunkPtrField)
	}
	pv := v.FieldByName(projectionField)
	if !pv.IsValid() || pv.Kind() != reflect.Slice || pv.Type().Elem().Kind() != reflect.Int {
		return rawView{}, fmt.Errorf("sopsql: internal error: duckdb.DataChunk has no []int field %q", projectionField)
	}
	var proj []int
	if !pv.IsNil() {
		proj = make([]int, pv.Len())
		for i := range proj {
			proj[i] = int(pv.Index(i).Int())
		}
	}
	return rawView{chunk: mapping.DataChunk{Ptr: unsafe.Pointer(p.Pointer())}, proj: proj}, nil
}

// vector returns the vector of column col, which DuckDB asked for.
func (r rawView) vector(col int) (mapping.Vector, error) {
	pos := col
	if r.proj != nil {
		if col < 0 || col >= len(r.proj) || r.proj[col] < 0 {
			return mapping.Vector{}, fmt.Errorf("sopsql: internal error: column %d is not in the chunk", col)
		}
		pos = r.proj[col]
	}
	if n := int(mapping.DataChunkGetColumnCount(r.chunk)); pos < 0 || pos >= n {
		return mapping.Vector{}, fmt.Errorf("sopsql: internal error: column %d at position %d of a chunk of %d", col, pos, n)
	}
	return mapping.DataChunkGetVector(r.chunk, mapping.IdxT(pos)), nil
}
