package thrift

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
)

// Sentinel errors. Every error returned by Decode is a *ParseError wrapping
// one of them.
var (
	// ErrTruncated means that the input ends inside a value, or that a
	// length or element count is larger than the rest of the input.
	ErrTruncated = errors.New("thrift: truncated input")
	// ErrMalformed means that the input is not valid compact protocol, or
	// uses something this package does not support (UUID, a duplicate field
	// ID, trailing data after DecodeExact's struct).
	ErrMalformed = errors.New("thrift: malformed input")
	// ErrNonCanonical means that the input is valid compact protocol but not
	// the encoding the canonical encoder produces for it.
	ErrNonCanonical = errors.New("thrift: non-canonical encoding")
	// ErrTooDeep means that structs and containers nest deeper than
	// Limits.MaxDepth.
	ErrTooDeep = errors.New("thrift: nesting too deep")
	// ErrTooLarge means that the input holds more than Limits.MaxNodes values.
	ErrTooLarge = errors.New("thrift: too many values")
)

// ParseError is the error returned by Decode.
type ParseError struct {
	Offset int   // offset in the input, in bytes, of the offending value
	Err    error // wraps one of the sentinel errors
}

// Error returns the sentinel's text and the offset.
func (e *ParseError) Error() string {
	return fmt.Sprintf("%v (at offset %d)", e.Err, e.Offset)
}

// Unwrap returns the sentinel error, for errors.Is.
func (e *ParseError) Unwrap() error { return e.Err }

// Limits bounds the work Decode does. A zero or negative field means its
// default.
type Limits struct {
	// MaxDepth is the deepest nesting of structs, lists, sets and maps: the
	// top-level struct is at depth 1, a struct in one of its fields at
	// depth 2. Parquet's FileMetaData nests about 9 deep.
	MaxDepth int
	// MaxNodes is the largest number of values (fields, and list, set and
	// map elements, keys and values) in one decoded tree. Each costs 72 to
	// 104 bytes of memory (on 64-bit platforms).
	MaxNodes int
}

// Defaults for Limits.
const (
	DefaultMaxDepth = 32
	DefaultMaxNodes = 1 << 22
)

// DefaultLimits returns the limits that Decode uses for zero fields:
// MaxDepth 32 and MaxNodes 1<<22 (about 4 million values, which bounds the
// tree at a few hundred MiB).
func DefaultLimits() Limits {
	return Limits{MaxDepth: DefaultMaxDepth, MaxNodes: DefaultMaxNodes}
}

func (l Limits) withDefaults() Limits {
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	if l.MaxNodes <= 0 {
		l.MaxNodes = DefaultMaxNodes
	}
	return l
}

// Decode decodes one struct from the start of b and returns it together with
// the number of bytes it used. Bytes after the struct are allowed and ignored
// (a Parquet page header is followed by its page body); use DecodeExact to
// reject them. The tree aliases b.
func Decode(b []byte, lim Limits) (s *Struct, n int, err error) {
	d := decoder{buf: b, lim: lim.withDefaults()}
	s, err = d.readStruct(1)
	if err != nil {
		return nil, 0, err
	}
	return s, d.pos, nil
}

// DecodeExact is like Decode, but b must hold exactly one struct: trailing
// bytes are an error wrapping ErrMalformed.
func DecodeExact(b []byte, lim Limits) (*Struct, error) {
	s, n, err := Decode(b, lim)
	if err != nil {
		return nil, err
	}
	if n != len(b) {
		return nil, &ParseError{Offset: n, Err: fmt.Errorf("%w: %d bytes after the struct", ErrMalformed, len(b)-n)}
	}
	return s, nil
}

type decoder struct {
	buf   []byte
	pos   int
	lim   Limits
	nodes int
	// pending is the number of input bytes that the elements promised by
	// open lists, sets and maps, and not yet begun, take at least. A valid
	// input always has that many bytes left, so a count or length that
	// would need more than the bytes left minus pending is rejected before
	// anything is allocated for it. This also bounds the capacity that
	// containers allocate up front, all open ones together, by the input.
	pending int
	stack   []Field // fields of the structs being decoded, innermost last
	ids     []int16 // scratch space for the duplicate field ID check
}

func (d *decoder) fail(off int, sentinel error, format string, args ...any) error {
	return &ParseError{Offset: off, Err: fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)}
}

func (d *decoder) truncated(off int, what string) error {
	return d.fail(off, ErrTruncated, "%s", what)
}

// node counts one value against MaxNodes.
func (d *decoder) node(off int) error {
	d.nodes++
	if d.nodes > d.lim.MaxNodes {
		return d.fail(off, ErrTooLarge, "more than %d values", d.lim.MaxNodes)
	}
	return nil
}

// avail is the number of input bytes that the value being decoded may still
// use: what is left minus what promised elements will need.
func (d *decoder) avail() int { return len(d.buf) - d.pos - d.pending }

func (d *decoder) readByte(what string) (byte, error) {
	if d.pos >= len(d.buf) {
		return 0, d.truncated(d.pos, what)
	}
	c := d.buf[d.pos]
	d.pos++
	return c, nil
}

// readUvarint reads a minimal unsigned LEB128 varint of at most maxBytes
// bytes whose value is at most max.
func (d *decoder) readUvarint(maxBytes int, max uint64, what string) (uint64, error) {
	start := d.pos
	var v uint64
	for i := 0; ; i++ {
		if d.pos >= len(d.buf) {
			return 0, d.truncated(start, what)
		}
		c := d.buf[d.pos]
		d.pos++
		if i == 9 && c > 1 {
			return 0, d.fail(start, ErrMalformed, "%s: varint overflows 64 bits", what)
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			if c == 0 && i > 0 {
				return 0, d.fail(start, ErrNonCanonical, "%s: varint is not minimal", what)
			}
			if v > max {
				return 0, d.fail(start, ErrMalformed, "%s: %d out of range", what, v)
			}
			return v, nil
		}
		if i+1 == maxBytes {
			return 0, d.fail(start, ErrMalformed, "%s: varint longer than %d bytes", what, maxBytes)
		}
	}
}

func (d *decoder) readI16(what string) (int16, error) {
	u, err := d.readUvarint(3, math.MaxUint16, what)
	return int16(unzigzag(u)), err
}

func (d *decoder) readI32(what string) (int32, error) {
	u, err := d.readUvarint(5, math.MaxUint32, what)
	return int32(unzigzag(u)), err
}

func (d *decoder) readI64(what string) (int64, error) {
	u, err := d.readUvarint(10, math.MaxUint64, what)
	return unzigzag(u), err
}

// readSize reads a length or element count: a non-negative int32 as a varint.
func (d *decoder) readSize(what string) (int, error) {
	u, err := d.readUvarint(5, math.MaxInt32, what)
	return int(u), err
}

func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// elemType checks a type nibble of a list, set or map header.
func (d *decoder) elemType(off int, t byte) (Type, error) {
	switch {
	case t == 2:
		return 0, d.fail(off, ErrNonCanonical, "bool element type 2")
	case !Type(t).valid():
		return 0, d.fail(off, ErrMalformed, "element type %d", t)
	}
	return Type(t), nil
}

func (d *decoder) readStruct(depth int) (*Struct, error) {
	start := d.pos
	if depth > d.lim.MaxDepth {
		return nil, d.fail(start, ErrTooDeep, "deeper than %d", d.lim.MaxDepth)
	}
	base := len(d.stack) // on error, the stack is left as it is
	last := 0
	ascending := true
	for {
		off := d.pos
		h, err := d.readByte("field header")
		if err != nil {
			return nil, err
		}
		if h == 0 {
			break
		}
		t, delta := h&0x0f, int(h>>4)
		if t == 0 || t > byte(TypeStruct) {
			return nil, d.fail(off, ErrMalformed, "field type %d", t)
		}
		var id int
		if delta != 0 {
			id = last + delta
			if id > math.MaxInt16 {
				return nil, d.fail(off, ErrMalformed, "field ID %d out of range", id)
			}
		} else {
			id16, err := d.readI16("field ID")
			if err != nil {
				return nil, err
			}
			id = int(id16)
			if id > last && id-last <= 15 {
				return nil, d.fail(off, ErrNonCanonical, "long field header for ID delta %d", id-last)
			}
		}
		if id <= last && len(d.stack) > base {
			ascending = false
		}
		last = id
		if err := d.node(off); err != nil {
			return nil, err
		}
		f := Field{ID: int16(id)}
		switch Type(t) {
		case TypeBool:
			f.Value = Value{Type: TypeBool, Int: 1}
		case 2:
			f.Value = Value{Type: TypeBool}
		default:
			f.Value, err = d.readValue(Type(t), depth)
			if err != nil {
				return nil, err
			}
		}
		if len(d.stack) == cap(d.stack) {
			// Double (append grows large slices by 1.25), which halves
			// the garbage a struct with thousands of fields leaves.
			d.stack = slices.Grow(d.stack, max(16, len(d.stack)))
		}
		d.stack = append(d.stack, f)
	}
	fields := d.stack[base:]
	if !ascending {
		d.ids = d.ids[:0]
		for _, f := range fields {
			d.ids = append(d.ids, f.ID)
		}
		slices.Sort(d.ids)
		for i := 1; i < len(d.ids); i++ {
			if d.ids[i] == d.ids[i-1] {
				return nil, d.fail(start, ErrMalformed, "duplicate field ID %d", d.ids[i])
			}
		}
	}
	s := new(Struct)
	if len(fields) > 0 {
		s.Fields = slices.Clone(fields)
	}
	d.stack = d.stack[:base]
	return s, nil
}

// readValue reads a value of type t (not a bool field) at nesting depth depth
// of its parent.
func (d *decoder) readValue(t Type, depth int) (Value, error) {
	off := d.pos
	switch t {
	case TypeBool:
		c, err := d.readByte("bool")
		if err != nil {
			return Value{}, err
		}
		switch c {
		case 1:
			return Value{Type: TypeBool, Int: 1}, nil
		case 2:
			return Value{Type: TypeBool}, nil
		}
		return Value{}, d.fail(off, ErrNonCanonical, "bool byte %#02x", c)
	case TypeByte:
		c, err := d.readByte("byte")
		return Value{Type: TypeByte, Int: int64(int8(c))}, err
	case TypeI16:
		v, err := d.readI16("i16")
		return Value{Type: TypeI16, Int: int64(v)}, err
	case TypeI32:
		v, err := d.readI32("i32")
		return Value{Type: TypeI32, Int: int64(v)}, err
	case TypeI64:
		v, err := d.readI64("i64")
		return Value{Type: TypeI64, Int: v}, err
	case TypeDouble:
		if d.avail() < 8 {
			return Value{}, d.truncated(off, "double")
		}
		bits := binary.LittleEndian.Uint64(d.buf[d.pos:])
		d.pos += 8
		return Value{Type: TypeDouble, Bits: bits}, nil
	case TypeBinary:
		n, err := d.readSize("binary length")
		if err != nil {
			return Value{}, err
		}
		if n > d.avail() {
			return Value{}, d.truncated(off, "binary")
		}
		b := d.buf[d.pos : d.pos+n : d.pos+n]
		d.pos += n
		return Value{Type: TypeBinary, Bin: b}, nil
	case TypeList, TypeSet:
		l, err := d.readList(depth + 1)
		return Value{Type: t, List: l}, err
	case TypeMap:
		m, err := d.readMap(depth + 1)
		return Value{Type: TypeMap, Map: m}, err
	case TypeStruct:
		s, err := d.readStruct(depth + 1)
		return Value{Type: TypeStruct, Struct: s}, err
	}
	// Unreachable: callers check types.
	return Value{}, d.fail(off, ErrMalformed, "type %d", t)
}

func (d *decoder) readList(depth int) (*List, error) {
	off := d.pos
	if depth > d.lim.MaxDepth {
		return nil, d.fail(off, ErrTooDeep, "deeper than %d", d.lim.MaxDepth)
	}
	h, err := d.readByte("list header")
	if err != nil {
		return nil, err
	}
	elem, err := d.elemType(off, h&0x0f)
	if err != nil {
		return nil, err
	}
	n := int(h >> 4)
	if n == 15 {
		if n, err = d.readSize("list size"); err != nil {
			return nil, err
		}
		if n < 15 {
			return nil, d.fail(off, ErrNonCanonical, "long list header for %d elements", n)
		}
	}
	m := minSize(elem)
	if n > d.avail()/m {
		return nil, d.fail(off, ErrTruncated, "%d list elements in %d bytes", n, d.avail())
	}
	d.pending += n * m
	l := &List{Elem: elem}
	if n > 0 {
		l.Items = make([]Value, 0, n)
	}
	for range n {
		if err := d.node(d.pos); err != nil {
			return nil, err
		}
		d.pending -= m
		v, err := d.readValue(elem, depth)
		if err != nil {
			return nil, err
		}
		l.Items = append(l.Items, v)
	}
	return l, nil
}

func (d *decoder) readMap(depth int) (*Map, error) {
	off := d.pos
	if depth > d.lim.MaxDepth {
		return nil, d.fail(off, ErrTooDeep, "deeper than %d", d.lim.MaxDepth)
	}
	n, err := d.readSize("map size")
	if err != nil {
		return nil, err
	}
	m := new(Map)
	if n == 0 {
		return m, nil
	}
	h, err := d.readByte("map types")
	if err != nil {
		return nil, err
	}
	if m.Key, err = d.elemType(off, h>>4); err != nil {
		return nil, err
	}
	if m.Val, err = d.elemType(off, h&0x0f); err != nil {
		return nil, err
	}
	mk, mv := minSize(m.Key), minSize(m.Val)
	if n > d.avail()/(mk+mv) {
		return nil, d.fail(off, ErrTruncated, "%d map entries in %d bytes", n, d.avail())
	}
	d.pending += n * (mk + mv)
	m.Keys, m.Vals = make([]Value, 0, n), make([]Value, 0, n)
	for range n {
		if err := d.node(d.pos); err != nil {
			return nil, err
		}
		d.pending -= mk
		k, err := d.readValue(m.Key, depth)
		if err != nil {
			return nil, err
		}
		if err := d.node(d.pos); err != nil {
			return nil, err
		}
		d.pending -= mv
		v, err := d.readValue(m.Val, depth)
		if err != nil {
			return nil, err
		}
		m.Keys, m.Vals = append(m.Keys, k), append(m.Vals, v)
	}
	return m, nil
}

// minSize is the fewest bytes a value of type t takes inside a container.
func minSize(t Type) int {
	if t == TypeDouble {
		return 8
	}
	return 1
}
