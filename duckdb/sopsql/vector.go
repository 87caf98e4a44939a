package sopsql

import (
	"fmt"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/duckdb/duckdb-go/v2/mapping"
)

// This file and vector_*.go are the bulk path into DuckDB's vectors: each
// writer fills a whole vector of a chunk with the elements of an Arrow
// array, its validity mask with one copy, fixed-width values with one copy
// or one tight loop over the memory duckdb_vector_get_data returns, strings
// with one cgo call per vector (vector_string.go), lists, structs and maps
// through their child vectors (vector_nested.go). Go writes into memory
// DuckDB owns; no Go pointer is kept by C.
//
// A writer writes exactly what the value-by-value path of types.go and
// convert.go writes (the tests compare the two on every type), and refuses
// what it refuses: a value its DuckDB type cannot hold fails with ErrData.
// Types without a writer (dictionaries of other values than strings and
// binaries, list views, and what nests them) take that path.

// writeState is a thread's scratch memory for the writers.
type writeState struct {
	pairs []int64    // (start, length) per string, for vector_string.go
	dicts dictStates // for vector_dict.go
}

// A vecWriter writes the elements [off, off+n) of arr as rows 0..n-1 of the
// DuckDB vector v, data and validity, and no other rows.
type vecWriter func(ws *writeState, v mapping.Vector, arr arrow.Array, off, n int) error

// bulkWriter returns the writer of Arrow type dt, in the DuckDB type
// newConv gives dt, or nil if dt has none.
func bulkWriter(dt arrow.DataType) vecWriter {
	if w := fixedWriter(dt); w != nil {
		return w
	}
	if w := stringWriter(dt); w != nil {
		return w
	}
	return nestedWriter(dt)
}

// validity returns the validity mask of v for n rows: DuckDB's uint64
// words, bit r%64 of word r/64 set for a valid row r.
func validity(v mapping.Vector, n int) []uint64 {
	mask := mapping.VectorGetValidity(v)
	if mask == nil {
		// NULL until a writable mask is asked for (duckdb-go asks for
		// every vector it initialises, but not for the children of a list
		// it reserved for).
		mapping.VectorEnsureValidityWritable(v)
		mask = mapping.VectorGetValidity(v)
	}
	return unsafe.Slice((*uint64)(mask), (n+63)/64)
}

// writeValidity writes the validity of the elements [off, off+n) of arr
// into v, and returns the mask and whether any row is null.
func writeValidity(v mapping.Vector, arr arrow.Array, off, n int) ([]uint64, bool, error) {
	if n == 0 {
		return nil, false, nil
	}
	mask := validity(v, n)
	for i := range mask {
		mask[i] = ^uint64(0)
	}
	if arr.DataType().ID() == arrow.NULL {
		clear(mask)
		return mask, true, nil
	}
	bits := arr.NullBitmapBytes()
	if arr.NullN() == 0 || bits == nil {
		return mask, false, nil
	}
	start := arr.Data().Offset() + off
	if start < 0 || (start+n+7)/8 > len(bits) {
		return nil, false, fmt.Errorf("%w: validity bitmap of %d bytes for rows [%d, %d)", ErrData, len(bits), start, start+n)
	}
	dst := unsafe.Slice((*byte)(unsafe.Pointer(&mask[0])), len(mask)*8)
	if start%8 == 0 {
		copy(dst, bits[start/8:(start+n+7)/8])
		if r := n % 8; r != 0 {
			dst[n/8] |= ^byte(0) << r // rows past n stay valid
		}
	} else {
		bitutil.CopyBitmap(bits, start, n, dst, 0)
	}
	return mask, true, nil
}

// valid reports whether row i is valid in mask (nil: every row).
func valid(mask []uint64, i int) bool {
	return mask == nil || mask[i/64]>>(i%64)&1 != 0
}

// values returns the elements [off, off+n) of the fixed-width buffer 1 of
// arr as a []T, or ErrData if the buffer is shorter than arr claims.
func values[T any](arr arrow.Array, off, n int) ([]T, error) {
	d := arr.Data()
	if n == 0 {
		return nil, nil
	}
	size := int(unsafe.Sizeof(*new(T)))
	bufs := d.Buffers()
	start := d.Offset() + off
	if off < 0 || off+n > d.Len() || len(bufs) < 2 || bufs[1] == nil || start < 0 || (start+n)*size > bufs[1].Len() {
		return nil, fmt.Errorf("%w: %s array of %d values, elements [%d, %d) asked", ErrData, arr.DataType(), d.Len(), off, off+n)
	}
	raw := bufs[1].Bytes()
	return unsafe.Slice((*T)(unsafe.Pointer(&raw[0])), start+n)[start:], nil
}

// vecData returns the first n elements of v's data as a []T.
func vecData[T any](v mapping.Vector, n int) []T {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(mapping.VectorGetData(v)), n)
}
