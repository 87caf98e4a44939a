package thrift

import (
	"encoding/binary"
	"math"
)

// Append appends the canonical compact encoding of s to dst and returns the
// extended buffer. For a tree returned by Decode and not edited since, the
// result is exactly the bytes Decode consumed.
//
// Append panics if the tree is invalid (see Value): an unknown type, an item
// whose type differs from its container's, an integer out of its type's
// range, a nil Struct, List or Map pointer, or a length beyond int32. These
// are programming errors; decoded trees are always valid.
func (s *Struct) Append(dst []byte) []byte {
	if s == nil {
		panic("thrift: Append on nil Struct")
	}
	last := 0
	for i := range s.Fields {
		f := &s.Fields[i]
		t := byte(f.Type)
		if f.Type == TypeBool {
			checkBool(&f.Value)
			if f.Int == 0 {
				t = 2
			}
		} else if !f.Type.valid() {
			panic("thrift: invalid field type " + f.Type.String())
		}
		id := int(f.ID)
		if id > last && id-last <= 15 {
			dst = append(dst, byte(id-last)<<4|t)
		} else {
			dst = append(dst, t)
			dst = appendUvarint(dst, zigzag(int64(f.ID)))
		}
		last = id
		if f.Type != TypeBool {
			dst = f.Value.appendTo(dst)
		}
	}
	return append(dst, 0)
}

// appendTo appends v as a container element or non-bool field value.
func (v *Value) appendTo(dst []byte) []byte {
	switch v.Type {
	case TypeBool:
		checkBool(v)
		return append(dst, byte(2-v.Int))
	case TypeByte:
		checkRange(v, math.MinInt8, math.MaxInt8)
		return append(dst, byte(v.Int))
	case TypeI16:
		checkRange(v, math.MinInt16, math.MaxInt16)
		return appendUvarint(dst, zigzag(v.Int))
	case TypeI32:
		checkRange(v, math.MinInt32, math.MaxInt32)
		return appendUvarint(dst, zigzag(v.Int))
	case TypeI64:
		return appendUvarint(dst, zigzag(v.Int))
	case TypeDouble:
		return binary.LittleEndian.AppendUint64(dst, v.Bits)
	case TypeBinary:
		checkLen(len(v.Bin))
		dst = appendUvarint(dst, uint64(len(v.Bin)))
		return append(dst, v.Bin...)
	case TypeList, TypeSet:
		l := v.List
		if l == nil {
			panic("thrift: nil List in " + v.Type.String() + " value")
		}
		n := len(l.Items)
		checkLen(n)
		checkElem(l.Elem)
		if n < 15 {
			dst = append(dst, byte(n)<<4|byte(l.Elem))
		} else {
			dst = append(dst, 0xf0|byte(l.Elem))
			dst = appendUvarint(dst, uint64(n))
		}
		for i := range l.Items {
			checkItem(l.Elem, &l.Items[i])
			dst = l.Items[i].appendTo(dst)
		}
		return dst
	case TypeMap:
		m := v.Map
		if m == nil {
			panic("thrift: nil Map in map value")
		}
		n := len(m.Keys)
		if len(m.Vals) != n {
			panic("thrift: map with different numbers of keys and values")
		}
		checkLen(n)
		if n == 0 {
			return append(dst, 0)
		}
		checkElem(m.Key)
		checkElem(m.Val)
		dst = appendUvarint(dst, uint64(n))
		dst = append(dst, byte(m.Key)<<4|byte(m.Val))
		for i := range m.Keys {
			checkItem(m.Key, &m.Keys[i])
			dst = m.Keys[i].appendTo(dst)
			checkItem(m.Val, &m.Vals[i])
			dst = m.Vals[i].appendTo(dst)
		}
		return dst
	case TypeStruct:
		return v.Struct.Append(dst)
	}
	panic("thrift: invalid value type " + v.Type.String())
}

// EncodedLen returns len(s.Append(nil)) without encoding. It does not check
// that the tree is valid.
func (s *Struct) EncodedLen() int {
	n, last := 1, 0 // the stop byte
	for i := range s.Fields {
		f := &s.Fields[i]
		id := int(f.ID)
		if id > last && id-last <= 15 {
			n++
		} else {
			n += 1 + uvarintLen(zigzag(int64(f.ID)))
		}
		last = id
		if f.Type != TypeBool {
			n += f.Value.encodedLen()
		}
	}
	return n
}

func (v *Value) encodedLen() int {
	switch v.Type {
	case TypeBool, TypeByte:
		return 1
	case TypeI16, TypeI32, TypeI64:
		return uvarintLen(zigzag(v.Int))
	case TypeDouble:
		return 8
	case TypeBinary:
		return uvarintLen(uint64(len(v.Bin))) + len(v.Bin)
	case TypeList, TypeSet:
		n := 1
		if len(v.List.Items) >= 15 {
			n += uvarintLen(uint64(len(v.List.Items)))
		}
		for i := range v.List.Items {
			n += v.List.Items[i].encodedLen()
		}
		return n
	case TypeMap:
		if len(v.Map.Keys) == 0 {
			return 1
		}
		n := uvarintLen(uint64(len(v.Map.Keys))) + 1
		for i := range v.Map.Keys {
			n += v.Map.Keys[i].encodedLen() + v.Map.Vals[i].encodedLen()
		}
		return n
	case TypeStruct:
		return v.Struct.EncodedLen()
	}
	return 0
}

func zigzag(v int64) uint64 { return uint64(v<<1) ^ uint64(v>>63) }

func appendUvarint(dst []byte, u uint64) []byte {
	for u >= 0x80 {
		dst = append(dst, byte(u)|0x80)
		u >>= 7
	}
	return append(dst, byte(u))
}

func uvarintLen(u uint64) int {
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

func checkBool(v *Value) {
	if v.Int != 0 && v.Int != 1 {
		panic("thrift: bool value with Int not 0 or 1")
	}
}

func checkRange(v *Value, lo, hi int64) {
	if v.Int < lo || v.Int > hi {
		panic("thrift: " + v.Type.String() + " value out of range")
	}
}

func checkLen(n int) {
	if n > math.MaxInt32 {
		panic("thrift: length beyond int32")
	}
}

func checkElem(t Type) {
	if !t.valid() {
		panic("thrift: invalid element type " + t.String())
	}
}

func checkItem(elem Type, v *Value) {
	if v.Type != elem {
		panic("thrift: " + v.Type.String() + " item in a container of " + elem.String())
	}
}
