// Package thrift is a strict, lossless codec for the Apache Thrift compact
// protocol, as used by Parquet's metadata structures (FileMetaData, PageHeader,
// FileCryptoMetaData, …).
//
// It decodes untrusted bytes into a generic tree of [Struct], [Value], [List]
// and [Map] values that carries no schema, lets the caller read and edit the
// tree by field ID, and encodes it again. It is a hand-written replacement for
// generated Thrift code, just large enough for decode → edit → encode.
//
// # Canonical encoding
//
// Decode accepts only the bytes that the canonical Apache Thrift compact
// encoder (TCompactProtocol in Go, C++ and Java) produces, and rejects every
// other spelling of the same data with an error matching [ErrNonCanonical].
// Because each accepted tree has exactly one encoding, decoding then encoding
// is the identity: bytes that the caller did not edit are reproduced exactly,
// and nobody can produce two different byte strings that decode to the same
// tree. The rules, in the terms of the [compact protocol specification]:
//
//   - Field headers use the short form (delta<<4 | type) if and only if
//     0 < id − lastID ≤ 15, where lastID is 0 at the start of each struct and
//     then the ID of the previous field; otherwise the long form (type, then the
//     ID as a zigzag varint). Field IDs need not ascend, but an ID may not
//     appear twice in one struct ([ErrMalformed]).
//   - A bool field is the type nibble alone: 1 is true, 2 is false. A bool
//     inside a list, set or map is one byte, 1 or 2, and the container's
//     element type for bool is 1.
//   - Varints are minimal (no trailing 0x00 byte), at most 10 bytes, and fit
//     their type: an i16 or i32 fits after zigzag decoding, and lengths and
//     sizes are non-negative int32 values.
//   - A list or set of fewer than 15 elements has the one-byte header
//     size<<4 | type; from 15 on it is 0xF0 | type and then the size as a varint.
//   - An empty map is the single byte 0x00; a non-empty map is the size as a
//     varint, then keyType<<4 | valueType.
//   - A double is 8 bytes little-endian, kept as raw bits, so NaN payloads
//     survive.
//   - Type IDs 0 (except as the stop byte 0x00), 13 (UUID), 14 and 15 are
//     rejected ([ErrMalformed]); Parquet does not use UUID.
//
// # Limits
//
// Decode works on a byte slice that is already in memory and bounds the work
// and memory it spends on it (see [Limits] and [DefaultLimits]): nesting deeper
// than Limits.MaxDepth fails with [ErrTooDeep], and more than Limits.MaxNodes
// values with [ErrTooLarge]. Every value takes at least one input byte, and a
// length or element count that the rest of the input cannot hold (after
// setting aside the bytes that elements already announced by enclosing lists
// and maps need) fails with [ErrTruncated] before anything is allocated for
// it. So the decoded tree takes at most 128 bytes of memory per input byte,
// and decoding allocates at most 512 bytes per input byte in total. Decode
// never panics. All decoding errors are a [*ParseError] that wraps one of the
// sentinel errors, so [errors.Is] works.
//
// # Views
//
// [DecodeView] decodes under the same rules into a [View]: a compact,
// read-only form of 16 bytes per value that reads numbers and binaries from
// the input when asked, at most 16 bytes per input byte. It is for bytes
// that are only read, such as a footer a reader opens; [AppendView] encodes
// a View again, leaving out the fields and elements a function selects.
//
// # Aliasing and concurrency
//
// Decoded [Value.Bin] slices alias the input buffer: the caller must not
// modify the input while the tree is in use. A tree is a plain data structure
// with no locking; it may be read concurrently but not edited concurrently.
//
// [compact protocol specification]: https://github.com/apache/thrift/blob/master/doc/specs/thrift-compact-protocol.md
package thrift

import (
	"errors"
	"fmt"
	"math"
)

// Type is a Thrift element or field type. Its values are the compact
// protocol's type IDs.
type Type uint8

// The types. TypeBool is the compact ID for "true"; on the wire a bool
// field's type nibble also carries its value (1 true, 2 false), which Decode
// folds into Value.Int.
const (
	TypeBool   Type = 1
	TypeByte   Type = 3 // Thrift i8 (called byte in IDL)
	TypeI16    Type = 4
	TypeI32    Type = 5
	TypeI64    Type = 6
	TypeDouble Type = 7
	TypeBinary Type = 8 // Thrift string and binary
	TypeList   Type = 9
	TypeSet    Type = 10
	TypeMap    Type = 11
	TypeStruct Type = 12
)

var typeNames = [...]string{
	TypeBool: "bool", TypeByte: "byte", TypeI16: "i16", TypeI32: "i32",
	TypeI64: "i64", TypeDouble: "double", TypeBinary: "binary",
	TypeList: "list", TypeSet: "set", TypeMap: "map", TypeStruct: "struct",
}

// String returns the IDL name of t, such as "i32".
func (t Type) String() string {
	if int(t) < len(typeNames) && typeNames[t] != "" {
		return typeNames[t]
	}
	return fmt.Sprintf("Type(%d)", uint8(t))
}

// valid reports whether t is one of the types above.
func (t Type) valid() bool {
	return t == TypeBool || (t >= TypeByte && t <= TypeStruct)
}

// Value is one Thrift value. Which of the other fields is used depends on Type:
//
//   - TypeBool: Int is 0 (false) or 1 (true).
//   - TypeByte, TypeI16, TypeI32, TypeI64: Int, within the range of the type.
//   - TypeDouble: Bits, the raw IEEE 754 bits.
//   - TypeBinary: Bin (nil and empty are the same).
//   - TypeList, TypeSet: List, whose items all have type List.Elem.
//   - TypeMap: Map.
//   - TypeStruct: Struct.
//
// The zero Value is not valid. Encoding a Value that breaks these rules
// panics; decoded trees always follow them.
type Value struct {
	Type   Type
	Int    int64
	Bits   uint64
	Bin    []byte
	List   *List
	Map    *Map
	Struct *Struct
}

// Field is a struct field: an ID and a value.
type Field struct {
	ID int16
	Value
}

// Struct is a Thrift struct (or union, or exception): its fields in wire
// order.
type Struct struct {
	Fields []Field
}

// List is a Thrift list or set. Every item has type Elem.
type List struct {
	Elem  Type
	Items []Value
}

// Map is a Thrift map. Keys[i] maps to Vals[i]; every key has type Key and
// every value type Val. An empty map is encoded without its types, so a
// decoded empty map has Key and Val 0.
type Map struct {
	Key, Val   Type
	Keys, Vals []Value
}

// Bool returns a bool value.
func Bool(b bool) Value {
	if b {
		return Value{Type: TypeBool, Int: 1}
	}
	return Value{Type: TypeBool}
}

// Byte returns an i8 value.
func Byte(v int8) Value { return Value{Type: TypeByte, Int: int64(v)} }

// I16 returns an i16 value.
func I16(v int16) Value { return Value{Type: TypeI16, Int: int64(v)} }

// I32 returns an i32 value.
func I32(v int32) Value { return Value{Type: TypeI32, Int: int64(v)} }

// I64 returns an i64 value.
func I64(v int64) Value { return Value{Type: TypeI64, Int: v} }

// Double returns a double value.
func Double(f float64) Value { return Value{Type: TypeDouble, Bits: math.Float64bits(f)} }

// Binary returns a binary (or string) value. It aliases b.
func Binary(b []byte) Value { return Value{Type: TypeBinary, Bin: b} }

// StructValue returns a struct value holding s.
func StructValue(s *Struct) Value { return Value{Type: TypeStruct, Struct: s} }

// ListOf returns a list value with element type elem. It panics if an item
// does not have type elem.
func ListOf(elem Type, items ...Value) Value {
	for _, it := range items {
		if it.Type != elem {
			panic("thrift: ListOf: " + it.Type.String() + " item in list<" + elem.String() + ">")
		}
	}
	return Value{Type: TypeList, List: &List{Elem: elem, Items: items}}
}

// NewStruct returns a struct with the given fields, in the given order.
func NewStruct(fields ...Field) *Struct {
	return &Struct{Fields: fields}
}

// Errors returned by the typed getters of Struct.
var (
	// ErrMissing means that a struct has no field with the requested ID.
	ErrMissing = errors.New("thrift: field missing")
	// ErrWrongType means that a field exists but has another type than the
	// one requested.
	ErrWrongType = errors.New("thrift: field has wrong type")
)

// Field returns a pointer to the value of the field with the given ID, or nil
// if there is none. The pointer is valid until the next Set or Delete on s.
func (s *Struct) Field(id int16) *Value {
	for i := range s.Fields {
		if s.Fields[i].ID == id {
			return &s.Fields[i].Value
		}
	}
	return nil
}

// Set sets the field with the given ID to v. An existing field is replaced in
// place; a new one is inserted before the first field with a larger ID, which
// keeps ascending IDs ascending.
func (s *Struct) Set(id int16, v Value) {
	at := -1
	for i := range s.Fields {
		if s.Fields[i].ID == id {
			s.Fields[i].Value = v
			return
		}
		if at < 0 && s.Fields[i].ID > id {
			at = i
		}
	}
	if at < 0 {
		s.Fields = append(s.Fields, Field{ID: id, Value: v})
		return
	}
	s.Fields = append(s.Fields, Field{})
	copy(s.Fields[at+1:], s.Fields[at:])
	s.Fields[at] = Field{ID: id, Value: v}
}

// Delete removes the field with the given ID and reports whether it existed.
// The other fields keep their order.
func (s *Struct) Delete(id int16) bool {
	for i := range s.Fields {
		if s.Fields[i].ID == id {
			s.Fields = append(s.Fields[:i], s.Fields[i+1:]...)
			return true
		}
	}
	return false
}

// get returns field id if it has type t. The error wraps ErrMissing or
// ErrWrongType.
func (s *Struct) get(id int16, t Type) (*Value, error) {
	v := s.Field(id)
	if v == nil {
		return nil, fmt.Errorf("%w: %v field %d", ErrMissing, t, id)
	}
	if v.Type != t {
		return nil, fmt.Errorf("%w: field %d is %v, want %v", ErrWrongType, id, v.Type, t)
	}
	return v, nil
}

// Bool returns the value of bool field id. The error wraps ErrMissing if there
// is no such field, or ErrWrongType if it is not a bool.
func (s *Struct) Bool(id int16) (bool, error) {
	v, err := s.get(id, TypeBool)
	if err != nil {
		return false, err
	}
	return v.Int != 0, nil
}

// I32 returns the value of i32 field id. The error wraps ErrMissing if there
// is no such field, or ErrWrongType if it is not an i32.
func (s *Struct) I32(id int16) (int32, error) {
	v, err := s.get(id, TypeI32)
	if err != nil {
		return 0, err
	}
	return int32(v.Int), nil
}

// I64 returns the value of i64 field id. The error wraps ErrMissing if there
// is no such field, or ErrWrongType if it is not an i64.
func (s *Struct) I64(id int16) (int64, error) {
	v, err := s.get(id, TypeI64)
	if err != nil {
		return 0, err
	}
	return v.Int, nil
}

// Binary returns the value of binary (or string) field id, aliasing the tree.
// The error wraps ErrMissing if there is no such field, or ErrWrongType if it
// is not a binary.
func (s *Struct) Binary(id int16) ([]byte, error) {
	v, err := s.get(id, TypeBinary)
	if err != nil {
		return nil, err
	}
	return v.Bin, nil
}

// Struct returns the value of struct field id, which the caller may edit in
// place. The error wraps ErrMissing if there is no such field, or ErrWrongType
// if it is not a struct.
func (s *Struct) Struct(id int16) (*Struct, error) {
	v, err := s.get(id, TypeStruct)
	if err != nil {
		return nil, err
	}
	return v.Struct, nil
}

// List returns the value of list field id, which the caller may edit in place.
// The error wraps ErrMissing if there is no such field, or ErrWrongType if it
// is not a list (a set is not a list).
func (s *Struct) List(id int16) (*List, error) {
	v, err := s.get(id, TypeList)
	if err != nil {
		return nil, err
	}
	return v.List, nil
}
