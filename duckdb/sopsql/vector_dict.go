package sopsql

/*
#cgo CPPFLAGS: -I${SRCDIR}/include -DDUCKDB_STATIC_BUILD
#include <duckdb.h>

// Defined in vector_string.go.
idx_t sop_fill_dict(void *vp, const char *data, const int64_t *pairs, const int32_t *idx, uint64_t *mask, idx_t from, idx_t n,
                    const uint8_t *state, int32_t nd, duckdb_string_t *tab, uint32_t *gen, uint32_t cur);
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

// The writer of dictionary-encoded strings and binaries (what
// reader.WithDictionaries reads): one cgo call per vector, into a C loop
// that writes each distinct string of the vector once (a 12-byte one once
// per dictionary) and copies DuckDB's string of it into the rows that
// repeat it. Each dictionary entry a valid row refers to is checked once
// per dictionary (its bounds, UTF-8 for VARCHAR, NULL): the dictionary of
// a batch is read once, whatever the number of rows that use it.

// Dictionary entry states.
const (
	entryUnchecked = iota
	entryValid
	entryNull // the dictionary's value is NULL: so is the row (sop_fill_dict)
)

// dictSlots is how many dictionaries a thread remembers: one a column of
// the chunk it writes, up to that many.
const dictSlots = 16

// dictState is a thread's memory of a dictionary it writes from.
type dictState struct {
	dict  arrow.ArrayData // the dictionary the rest describes
	used  uint64          // when it was last used (dictStates.clock)
	data  []byte
	pairs []int64  // (start, length) of each entry in data
	state []uint8  // entry*
	tab   []uint64 // sop_fill_dict's strings, two words each
	gen   []uint32 // sop_fill_dict's generations
	cur   uint32   // the vector being written
	idx   []int32  // scratch for indices that are not int32
}

// dictStates are a thread's dictionaries.
type dictStates struct {
	slots []*dictState
	clock uint64
}

// of returns the state of dictionary d: the one kept for it, or else the
// least recently used one reset for it.
func (s *dictStates) of(d arrow.Array) (*dictState, error) {
	s.clock++
	var lru *dictState
	for _, ds := range s.slots {
		if ds.dict == d.Data() {
			ds.used = s.clock
			return ds, nil
		}
		if lru == nil || ds.used < lru.used {
			lru = ds
		}
	}
	if len(s.slots) < dictSlots {
		lru = &dictState{}
		s.slots = append(s.slots, lru)
	}
	lru.used = s.clock
	return lru, lru.reset(d)
}

// reset makes ds describe dictionary d.
func (ds *dictState) reset(d arrow.Array) error {
	nd := d.Len()
	ds.dict, ds.cur = nil, 0
	ds.pairs = grow(ds.pairs, 2*nd)
	ds.state, ds.gen, ds.tab = grow(ds.state, nd), grow(ds.gen, nd), grow(ds.tab, 2*nd)
	clear(ds.state)
	clear(ds.gen)
	var err error
	switch d.(type) {
	case *array.String, *array.Binary:
		var o []int32
		if o, ds.data, err = offsets[int32](d, 0, nd); err == nil {
			for j := range nd {
				ds.pairs[2*j], ds.pairs[2*j+1] = int64(o[j]), int64(o[j+1]-o[j])
			}
		}
	case *array.LargeString, *array.LargeBinary:
		var o []int64
		if o, ds.data, err = offsets[int64](d, 0, nd); err == nil {
			for j := range nd {
				ds.pairs[2*j], ds.pairs[2*j+1] = o[j], o[j+1]-o[j]
			}
		}
	default:
		return mismatch(d)
	}
	if err != nil {
		return err
	}
	ds.dict = d.Data()
	return nil
}

// first returns a pointer to s[0], or nil if s is empty (a dictionary of
// no entries, whose rows are all NULL: C reads none).
func first[T any](s []T) unsafe.Pointer {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Pointer(&s[0])
}

// grow returns s with length n, reusing its memory if it can.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// check checks entry j of dictionary d the first time a row uses it.
func (ds *dictState) check(d arrow.Array, j int, text bool) error {
	if d.IsNull(j) {
		ds.state[j] = entryNull
		return nil
	}
	s, l := ds.pairs[2*j], ds.pairs[2*j+1]
	if l > math.MaxUint32 {
		return fmt.Errorf("%w: a string of %d bytes", ErrData, l)
	}
	if text && !utf8.Valid(ds.data[s:s+l]) {
		return fmt.Errorf("%w: string %q is not UTF-8", ErrData, ds.data[s:s+l])
	}
	ds.state[j] = entryValid
	return nil
}

// dictWriter writes dictionary-encoded strings (text: VARCHAR, checked
// for UTF-8) or binaries: a row's value is the dictionary's at its index,
// NULL where the row or that value is.
func dictWriter(text bool) vecWriter {
	return func(ws *writeState, v mapping.Vector, arr arrow.Array, off, n int) error {
		a, ok := arr.(*array.Dictionary)
		if !ok || off < 0 || off+n > a.Len() {
			return mismatch(arr)
		}
		if n == 0 {
			return nil
		}
		d := a.Dictionary()
		ds, err := ws.dicts.of(d)
		if err != nil {
			return err
		}
		mask, _, err := writeValidity(v, arr, off, n)
		if err != nil {
			return err
		}
		var idx []int32
		if a.Indices().DataType().ID() == arrow.INT32 {
			if idx, err = values[int32](a.Indices(), off, n); err != nil {
				return err
			}
		} else {
			idx = grow(ds.idx, n)
			ds.idx = idx
			for i := range n {
				if valid(mask, i) {
					j := a.GetValueIndex(off + i)
					if j < 0 || j > math.MaxInt32 {
						return fmt.Errorf("%w: dictionary index %d of %d", ErrData, j, d.Len())
					}
					idx[i] = int32(j)
				}
			}
		}
		ds.cur++
		if ds.cur == math.MaxUint32 {
			ds.cur = 1
			clear(ds.gen) // no vector's strings are reused in another
		}
		nd := d.Len()
		if nd > math.MaxInt32 {
			return fmt.Errorf("%w: a dictionary of %d entries", ErrData, nd)
		}
		// C writes the rows, and stops where an entry needs checking: the
		// first time a row of this dictionary uses it.
		for i := 0; ; {
			i = int(C.sop_fill_dict(v.Ptr, (*C.char)(first(ds.data)), (*C.int64_t)(first(ds.pairs)), (*C.int32_t)(first(idx)),
				(*C.uint64_t)(first(mask)), C.idx_t(i), C.idx_t(n), (*C.uint8_t)(first(ds.state)), C.int32_t(nd),
				(*C.duckdb_string_t)(first(ds.tab)), (*C.uint32_t)(first(ds.gen)), C.uint32_t(ds.cur)))
			if i >= n {
				break
			}
			j := int(idx[i])
			if j < 0 || j >= nd || ds.state[j] != entryUnchecked {
				return fmt.Errorf("%w: dictionary index %d of %d", ErrData, j, nd)
			}
			if err := ds.check(d, j, text); err != nil {
				return err
			}
		}
		return nil
	}
}
