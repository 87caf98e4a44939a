package sopsql

/*
#cgo CPPFLAGS: -I${SRCDIR}/include -DDUCKDB_STATIC_BUILD
#include <duckdb.h>
#include <string.h>

// sop_put writes one string into element i of v: inline, zero-padded (DuckDB
// compares inlined strings as two 8-byte words), when it has at most 12
// bytes, else copied by DuckDB into the vector's heap. The caller checked
// UTF-8 where the type needs it.
static inline void sop_put(duckdb_vector v, duckdb_string_t *dst, idx_t i, const char *s, uint32_t len) {
	if (len <= 12) {
		memset(&dst[i], 0, sizeof(duckdb_string_t));
		dst[i].value.inlined.length = len;
		if (len > 0) memcpy(dst[i].value.inlined.inlined, s, len);
	} else {
		duckdb_unsafe_vector_assign_string_element_len(v, i, s, len);
	}
}

// sop_fill_str32 writes the n strings data[offs[i], offs[i+1]) into
// elements 0..n-1 of v. The caller checked the offsets against data.
static void sop_fill_str32(void *vp, const char *data, const int32_t *offs, idx_t n) {
	duckdb_vector v = (duckdb_vector)vp;
	duckdb_string_t *dst = (duckdb_string_t *)duckdb_vector_get_data(v);
	for (idx_t i = 0; i < n; i++) {
		sop_put(v, dst, i, data + offs[i], (uint32_t)(offs[i + 1] - offs[i]));
	}
}

// sop_fill_pairs writes the n strings data[pairs[2i], pairs[2i] +
// pairs[2i+1]) into elements 0..n-1 of v. The caller checked the pairs
// against data.
static void sop_fill_pairs(void *vp, const char *data, const int64_t *pairs, idx_t n) {
	duckdb_vector v = (duckdb_vector)vp;
	duckdb_string_t *dst = (duckdb_string_t *)duckdb_vector_get_data(v);
	for (idx_t i = 0; i < n; i++) {
		sop_put(v, dst, i, data + pairs[2 * i], (uint32_t)pairs[2 * i + 1]);
	}
}

// sop_put_one writes one string into element i of v.
static void sop_put_one(void *vp, idx_t i, const char *s, uint32_t len) {
	duckdb_vector v = (duckdb_vector)vp;
	sop_put(v, (duckdb_string_t *)duckdb_vector_get_data(v), i, s, len);
}

// sop_fill_dict writes, into elements from..n-1 of v, the dictionary's
// string idx[i], data[pairs[2j], pairs[2j] + pairs[2j+1]) for j = idx[i],
// or an empty string where bit i of mask is clear (a NULL), and clears
// bit i where state[j] says the dictionary's value is NULL. It stops at
// the first valid row whose index is beyond the nd entries or whose entry
// Go has not checked yet (state 0), and returns that row, or n. Each
// distinct string is written once per vector: tab[j] keeps element j's
// DuckDB string (into the vector's heap when it is longer than 12 bytes),
// valid while gen[j] is cur (the vector) or all ones (an inlined string,
// valid in any vector). Declared in vector_dict.go.
idx_t sop_fill_dict(void *vp, const char *data, const int64_t *pairs, const int32_t *idx, uint64_t *mask, idx_t from, idx_t n,
                    const uint8_t *state, int32_t nd, duckdb_string_t *tab, uint32_t *gen, uint32_t cur) {
	duckdb_vector v = (duckdb_vector)vp;
	duckdb_string_t *dst = (duckdb_string_t *)duckdb_vector_get_data(v);
	for (idx_t i = from; i < n; i++) {
		if (!((mask[i >> 6] >> (i & 63)) & 1)) {
			memset(&dst[i], 0, sizeof(duckdb_string_t));
			continue;
		}
		int32_t j = idx[i];
		if (j < 0 || j >= nd || state[j] == 0) {
			return i;
		}
		if (state[j] != 1) {
			mask[i >> 6] &= ~((uint64_t)1 << (i & 63));
			memset(&dst[i], 0, sizeof(duckdb_string_t));
			continue;
		}
		if (gen[j] == cur || gen[j] == 0xFFFFFFFFu) {
			dst[i] = tab[j];
			continue;
		}
		uint32_t len = (uint32_t)pairs[2 * j + 1];
		sop_put(v, dst, i, data + pairs[2 * j], len);
		tab[j] = dst[i];
		gen[j] = len <= 12 ? 0xFFFFFFFFu : cur;
	}
	return n;
}

// sop_library_version is the linked library's version, for the test that
// the vendored header matches it.
static const char *sop_library_version(void) { return duckdb_library_version(); }
static int sop_header_version(void) {
	return DUCKDB_API_VERSION_MAJOR * 10000 + DUCKDB_API_VERSION_MINOR * 100 + DUCKDB_API_VERSION_PATCH;
}
*/
import "C"

import (
	"fmt"
	"math"
	"unicode/utf8"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/duckdb/duckdb-go/v2/mapping"
)

// The writers of VARCHAR and BLOB: one cgo call per vector, into a C loop
// that inlines strings of up to 12 bytes itself and has DuckDB copy longer
// ones (duckdb_unsafe_vector_assign_string_element_len, which copies
// without the UTF-8 check of duckdb_vector_assign_string_element_len).
// VARCHAR values are checked for UTF-8 here first: an invalid one fails
// the query with ErrData, as read_parquet fails on it (DuckDB's checked
// assignment would write a NULL instead, silently). Every offset is checked
// against the data before C reads it.

// stringWriter returns the writer of dt if its DuckDB type is VARCHAR or
// BLOB and it has a bulk path.
func stringWriter(dt arrow.DataType) vecWriter {
	switch dt := dt.(type) {
	case *arrow.StringType:
		return offsetWriter[int32](true)
	case *arrow.BinaryType:
		return offsetWriter[int32](false)
	case *arrow.LargeStringType:
		return offsetWriter[int64](true)
	case *arrow.LargeBinaryType:
		return offsetWriter[int64](false)
	case *arrow.FixedSizeBinaryType:
		return fixedBinaryWriter(dt.ByteWidth)
	case *arrow.StringViewType:
		return viewWriter(true)
	case *arrow.BinaryViewType:
		return viewWriter(false)
	case *arrow.DictionaryType:
		switch dt.ValueType.ID() {
		case arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY:
			return dictWriter(dt.ValueType.ID() == arrow.STRING || dt.ValueType.ID() == arrow.LARGE_STRING)
		}
	}
	return nil
}

// binaryLike is an Arrow array of strings or binaries with offsets of O.
type binaryLike[O int32 | int64] interface {
	arrow.Array
	ValueOffsets() []O
}

// offsets returns the offsets of the elements [off, off+n] of arr, into
// its whole data buffer, and that buffer; checked: non-decreasing, within
// the buffer.
func offsets[O int32 | int64](arr arrow.Array, off, n int) ([]O, []byte, error) {
	a, ok := arr.(binaryLike[O])
	if !ok {
		return nil, nil, mismatch(arr)
	}
	offs := a.ValueOffsets() // from the array's first element
	if off < 0 || n < 0 || off+n > arr.Len() || off+n >= len(offs) {
		return nil, nil, fmt.Errorf("%w: %d offsets for elements [%d, %d)", ErrData, len(offs), off, off+n)
	}
	offs = offs[off : off+n+1]
	var data []byte
	if bufs := arr.Data().Buffers(); len(bufs) > 2 && bufs[2] != nil {
		data = bufs[2].Bytes()
	}
	prev := offs[0]
	if prev < 0 {
		return nil, nil, fmt.Errorf("%w: offset %d", ErrData, prev)
	}
	for _, o := range offs[1:] {
		if o < prev {
			return nil, nil, fmt.Errorf("%w: decreasing offsets %d, %d", ErrData, prev, o)
		}
		prev = o
	}
	if int64(prev) > int64(len(data)) {
		return nil, nil, fmt.Errorf("%w: offset %d beyond %d bytes", ErrData, prev, len(data))
	}
	return offs, data, nil
}

// offsetWriter writes strings (text: VARCHAR, checked for UTF-8) or
// binaries with offsets of O.
func offsetWriter[O int32 | int64](text bool) vecWriter {
	return func(ws *writeState, v mapping.Vector, arr arrow.Array, off, n int) error {
		if n == 0 {
			return nil
		}
		offs, data, err := offsets[O](arr, off, n)
		if err != nil {
			return err
		}
		mask, nulls, err := writeValidity(v, arr, off, n)
		if err != nil {
			return err
		}
		if text {
			if err := checkUTF8(data, offs, mask, nulls); err != nil {
				return err
			}
		}
		var dp *C.char
		if len(data) > 0 {
			dp = (*C.char)(unsafe.Pointer(&data[0]))
		}
		if o32, ok := any(offs).([]int32); ok {
			C.sop_fill_str32(v.Ptr, dp, (*C.int32_t)(unsafe.Pointer(&o32[0])), C.idx_t(n))
			return nil
		}
		pairs := ws.pairsFor(n)
		for i := range n {
			s, e := int64(offs[i]), int64(offs[i+1])
			if e-s > math.MaxUint32 {
				return fmt.Errorf("%w: a string of %d bytes", ErrData, e-s)
			}
			pairs[2*i], pairs[2*i+1] = s, e-s
		}
		C.sop_fill_pairs(v.Ptr, dp, (*C.int64_t)(unsafe.Pointer(&pairs[0])), C.idx_t(n))
		return nil
	}
}

// pairsFor returns scratch room for n (start, length) pairs.
func (ws *writeState) pairsFor(n int) []int64 {
	if cap(ws.pairs) < 2*n {
		ws.pairs = make([]int64, 2*n)
	}
	return ws.pairs[:2*n]
}

// checkUTF8 checks that every valid string data[offs[i], offs[i+1]) is
// UTF-8: the whole range at once, and that no string starts inside a
// character; if that fails (a null slot may hold any bytes), string by
// string.
func checkUTF8[O int32 | int64](data []byte, offs []O, mask []uint64, nulls bool) error {
	last := offs[len(offs)-1]
	ok := utf8.Valid(data[offs[0]:last])
	for i := 1; ok && i < len(offs)-1; i++ {
		if p := offs[i]; p < last && !utf8.RuneStart(data[p]) {
			ok = false
		}
	}
	if ok {
		return nil
	}
	for i := range len(offs) - 1 {
		if nulls && !valid(mask, i) {
			continue
		}
		if s := data[offs[i]:offs[i+1]]; !utf8.Valid(s) {
			return fmt.Errorf("%w: string %q is not UTF-8", ErrData, s)
		}
	}
	return nil
}

// fixedBinaryWriter writes fixed-size binaries as BLOBs.
func fixedBinaryWriter(width int) vecWriter {
	return func(ws *writeState, v mapping.Vector, arr arrow.Array, off, n int) error {
		if _, ok := arr.(*array.FixedSizeBinary); !ok {
			return mismatch(arr)
		}
		if n == 0 {
			return nil
		}
		var data []byte
		if bufs := arr.Data().Buffers(); len(bufs) > 1 && bufs[1] != nil {
			data = bufs[1].Bytes()
		}
		start := arr.Data().Offset() + off
		if width < 0 || off < 0 || off+n > arr.Len() || (start+n)*width > len(data) {
			return fmt.Errorf("%w: fixed-size binary of %d bytes for elements [%d, %d) of %d bytes", ErrData, len(data), off, off+n, width)
		}
		if _, _, err := writeValidity(v, arr, off, n); err != nil {
			return err
		}
		pairs := ws.pairsFor(n)
		for i := range n {
			pairs[2*i], pairs[2*i+1] = int64((start+i)*width), int64(width)
		}
		var dp *C.char
		if len(data) > 0 {
			dp = (*C.char)(unsafe.Pointer(&data[0]))
		}
		C.sop_fill_pairs(v.Ptr, dp, (*C.int64_t)(unsafe.Pointer(&pairs[0])), C.idx_t(n))
		return nil
	}
}

// viewWriter writes string and binary views, one cgo call per value: views
// point into several buffers, and pqarrow reads none (an object's stored
// Arrow schema cannot ask for them), so this path is rare.
func viewWriter(text bool) vecWriter {
	return func(_ *writeState, v mapping.Vector, arr arrow.Array, off, n int) error {
		if off < 0 || off+n > arr.Len() {
			return mismatch(arr)
		}
		mask, nulls, err := writeValidity(v, arr, off, n)
		if err != nil {
			return err
		}
		for i := range n {
			if nulls && !valid(mask, i) {
				C.sop_put_one(v.Ptr, C.idx_t(i), nil, 0)
				continue
			}
			var b []byte
			switch a := arr.(type) {
			case *array.StringView:
				b = []byte(a.Value(off + i))
			case *array.BinaryView:
				b = a.Value(off + i)
			default:
				return mismatch(arr)
			}
			if text && !utf8.Valid(b) {
				return fmt.Errorf("%w: string %q is not UTF-8", ErrData, b)
			}
			if uint64(len(b)) > math.MaxUint32 {
				return fmt.Errorf("%w: a string of %d bytes", ErrData, len(b))
			}
			var p *C.char
			if len(b) > 0 {
				p = (*C.char)(unsafe.Pointer(&b[0]))
			}
			C.sop_put_one(v.Ptr, C.idx_t(i), p, C.uint32_t(len(b)))
		}
		return nil
	}
}

// linkedVersion returns the version of the DuckDB library linked in, and
// that of the vendored duckdb.h, as major×10000 + minor×100 + patch.
func linkedVersion() (string, int) {
	return C.GoString(C.sop_library_version()), int(C.sop_header_version())
}
