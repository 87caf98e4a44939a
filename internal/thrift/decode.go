package thrift

import (
	"fmt"
	"math"
	"slices"
)

// Decode decodes one struct from the start of b and returns it together with
// the number of bytes it used. Bytes after the struct are allowed and ignored
// (a Parquet page header is followed by its page body); use DecodeExact to
// reject them. The tree aliases b.
func Decode(b []byte, lim Limits) (s *Struct, n int, err error) {
	d := decoder{buf: b, lim: lim.withDefaults()}
	if err := d.readStruct(1, 0); err != nil {
		return nil, 0, err
	}
	v, _ := d.tree(0)
	return v.Struct, d.pos, nil
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

// decoder decodes into nodes (see View), which Decode then turns into a
// tree of Values.
type decoder struct {
	buf   []byte
	pos   int
	lim   Limits
	nodes int // values counted against MaxNodes
	// pending is the number of input bytes that the elements promised by
	// open lists, sets and maps, and not yet begun, take at least. A valid
	// input always has that many bytes left, so a count or length that
	// would need more than the bytes left minus pending is rejected before
	// anything is allocated for it.
	pending int
	out     nodes
	ids     []int16 // field IDs of the structs being decoded, innermost last
	sorted  []int16 // scratch space for the duplicate field ID check
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

// done closes node k: its value ends here, and so does its subtree.
func (d *decoder) done(k int) {
	n := d.out.at(k)
	n.end = uint32(d.pos)
	n.next = uint32(d.out.len())
}

// readStruct reads a struct at nesting depth depth, as field id of its
// parent (0 at the top or in a container).
func (d *decoder) readStruct(depth int, id int16) error {
	start := d.pos
	if depth > d.lim.MaxDepth {
		return d.fail(start, ErrTooDeep, "deeper than %d", d.lim.MaxDepth)
	}
	if uint64(len(d.buf)) > math.MaxUint32 {
		return d.fail(start, ErrTooLarge, "input of %d bytes", len(d.buf))
	}
	k := d.out.push(node{typ: TypeStruct, id: id})
	base := len(d.ids) // on error, the stack is left as it is
	last := 0
	ascending := true
	for {
		off := d.pos
		h, err := d.readByte("field header")
		if err != nil {
			return err
		}
		if h == 0 {
			break
		}
		t, delta := h&0x0f, int(h>>4)
		if t == 0 || t > byte(TypeStruct) {
			return d.fail(off, ErrMalformed, "field type %d", t)
		}
		var fid int
		if delta != 0 {
			fid = last + delta
			if fid > math.MaxInt16 {
				return d.fail(off, ErrMalformed, "field ID %d out of range", fid)
			}
		} else {
			id16, err := d.readI16("field ID")
			if err != nil {
				return err
			}
			fid = int(id16)
			if fid > last && fid-last <= 15 {
				return d.fail(off, ErrNonCanonical, "long field header for ID delta %d", fid-last)
			}
		}
		if fid <= last && len(d.ids) > base {
			ascending = false
		}
		last = fid
		if err := d.node(off); err != nil {
			return err
		}
		switch Type(t) {
		case TypeBool, 2:
			b := uint8(0)
			if t == byte(TypeBool) {
				b = 1
			}
			d.done(d.out.push(node{typ: TypeBool, id: int16(fid), aux: b}))
		default:
			if err := d.readValue(Type(t), depth, int16(fid)); err != nil {
				return err
			}
		}
		d.ids = append(d.ids, int16(fid))
	}
	fields := d.ids[base:]
	if !ascending {
		d.sorted = append(d.sorted[:0], fields...)
		slices.Sort(d.sorted)
		for i := 1; i < len(d.sorted); i++ {
			if d.sorted[i] == d.sorted[i-1] {
				return d.fail(start, ErrMalformed, "duplicate field ID %d", d.sorted[i])
			}
		}
	}
	d.out.at(k).val = uint32(len(fields))
	d.ids = d.ids[:base]
	d.done(k)
	return nil
}

// readValue reads a value of type t (not a bool field) at nesting depth depth
// of its parent, as field id (0 in a container).
func (d *decoder) readValue(t Type, depth int, id int16) error {
	off := d.pos
	if t == TypeStruct {
		return d.readStruct(depth+1, id)
	}
	k := d.out.push(node{typ: t, id: id})
	if t != TypeList && t != TypeSet && t != TypeMap {
		d.out.at(k).val = uint32(off)
	}
	var err error
	switch t {
	case TypeBool:
		var c byte
		if c, err = d.readByte("bool"); err == nil {
			switch c {
			case 1:
				d.out.at(k).aux = 1
			case 2:
			default:
				err = d.fail(off, ErrNonCanonical, "bool byte %#02x", c)
			}
		}
	case TypeByte:
		_, err = d.readByte("byte")
	case TypeI16:
		_, err = d.readI16("i16")
	case TypeI32:
		_, err = d.readI32("i32")
	case TypeI64:
		_, err = d.readI64("i64")
	case TypeDouble:
		if d.avail() < 8 {
			return d.truncated(off, "double")
		}
		d.pos += 8
	case TypeBinary:
		var n int
		if n, err = d.readSize("binary length"); err == nil {
			if n > d.avail() {
				return d.truncated(off, "binary")
			}
			d.pos += n
			d.out.at(k).val = uint32(n)
		}
	case TypeList, TypeSet:
		err = d.readList(depth+1, k)
	case TypeMap:
		err = d.readMap(depth+1, k)
	default:
		// Unreachable: callers check types.
		err = d.fail(off, ErrMalformed, "type %d", t)
	}
	if err != nil {
		return err
	}
	d.done(k)
	return nil
}

func (d *decoder) readList(depth, k int) error {
	off := d.pos
	if depth > d.lim.MaxDepth {
		return d.fail(off, ErrTooDeep, "deeper than %d", d.lim.MaxDepth)
	}
	h, err := d.readByte("list header")
	if err != nil {
		return err
	}
	elem, err := d.elemType(off, h&0x0f)
	if err != nil {
		return err
	}
	n := int(h >> 4)
	if n == 15 {
		if n, err = d.readSize("list size"); err != nil {
			return err
		}
		if n < 15 {
			return d.fail(off, ErrNonCanonical, "long list header for %d elements", n)
		}
	}
	m := minSize(elem)
	if n > d.avail()/m {
		return d.fail(off, ErrTruncated, "%d list elements in %d bytes", n, d.avail())
	}
	nd := d.out.at(k)
	nd.val, nd.aux = uint32(n), uint8(elem)
	d.pending += n * m
	for range n {
		if err := d.node(d.pos); err != nil {
			return err
		}
		d.pending -= m
		if err := d.readValue(elem, depth, 0); err != nil {
			return err
		}
	}
	return nil
}

func (d *decoder) readMap(depth, k int) error {
	off := d.pos
	if depth > d.lim.MaxDepth {
		return d.fail(off, ErrTooDeep, "deeper than %d", d.lim.MaxDepth)
	}
	n, err := d.readSize("map size")
	if err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	h, err := d.readByte("map types")
	if err != nil {
		return err
	}
	kt, err := d.elemType(off, h>>4)
	if err != nil {
		return err
	}
	vt, err := d.elemType(off, h&0x0f)
	if err != nil {
		return err
	}
	mk, mv := minSize(kt), minSize(vt)
	if n > d.avail()/(mk+mv) {
		return d.fail(off, ErrTruncated, "%d map entries in %d bytes", n, d.avail())
	}
	nd := d.out.at(k)
	nd.val, nd.aux = uint32(n), h
	d.pending += n * (mk + mv)
	for range n {
		if err := d.node(d.pos); err != nil {
			return err
		}
		d.pending -= mk
		if err := d.readValue(kt, depth, 0); err != nil {
			return err
		}
		if err := d.node(d.pos); err != nil {
			return err
		}
		d.pending -= mv
		if err := d.readValue(vt, depth, 0); err != nil {
			return err
		}
	}
	return nil
}

// minSize is the fewest bytes a value of type t takes inside a container.
func minSize(t Type) int {
	if t == TypeDouble {
		return 8
	}
	return 1
}
