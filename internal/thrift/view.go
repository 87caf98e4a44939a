package thrift

import (
	"encoding/binary"
	"fmt"
	"iter"
)

// node is one decoded value in compact form, 16 bytes: a View keeps one per
// value and aliases the input for the rest. Nodes are in pre-order: a
// struct's fields, and a container's elements (a map's keys and values
// alternately), follow it, each with its own subtree.
type node struct {
	end  uint32 // offset in the input just past the value
	next uint32 // index of the node after this one's subtree
	// val is, for a binary, its length; for a list, set, map or struct,
	// its number of elements (a map's entries, a struct's fields); for an
	// integer or a byte, the offset of its first byte.
	val uint32
	id  int16 // the field ID of a struct field, 0 otherwise
	typ Type
	// aux is, for a bool, its value (0 or 1); for a list or set, the
	// element type; for a map, key type << 4 | value type.
	aux uint8
}

// nodeBlock is the number of nodes in each block of a node store: the first
// block grows by appending, up to nodeBlock nodes; later blocks are
// allocated whole and never copied as the store grows.
const nodeBlock = 1024

// nodes is an append-only store of nodes. Pointers from at are valid
// until the next push.
type nodes struct {
	first  []node
	blocks [][]node
	n      int
}

func (s *nodes) len() int { return s.n }

func (s *nodes) push(nd node) int {
	i := s.n
	s.n++
	if i < nodeBlock {
		s.first = append(s.first, nd)
		return i
	}
	j := i - nodeBlock
	if j%nodeBlock == 0 {
		s.blocks = append(s.blocks, make([]node, 0, nodeBlock))
	}
	b := &s.blocks[j/nodeBlock]
	*b = append(*b, nd)
	return i
}

func (s *nodes) at(i int) *node {
	if i < nodeBlock {
		return &s.first[i]
	}
	j := i - nodeBlock
	return &s.blocks[j/nodeBlock][j%nodeBlock]
}

// A View is a struct decoded into compact form: 16 bytes per value, with
// binaries and numbers read from the input, which it aliases. It is
// read-only; Tree makes an editable copy. A View is safe for concurrent
// reads.
//
// A View takes 16 bytes of memory per value, and each value takes at least
// one input byte: a View of n bytes and at most Limits.MaxNodes values
// keeps at most 16 × min(n, MaxNodes+1) bytes (plus a partly used block of
// 16 KiB), and decoding it allocates at most 24 bytes per input byte in all.
// A tree (Decode) costs 72 to 104 bytes per value.
type View struct {
	buf   []byte
	nodes nodes
}

// DecodeView decodes b, which must hold exactly one struct, into a View
// under the same rules, limits and errors as DecodeExact.
func DecodeView(b []byte, lim Limits) (*View, error) {
	d := decoder{buf: b, lim: lim.withDefaults()}
	if err := d.readStruct(1, 0); err != nil {
		return nil, err
	}
	if d.pos != len(b) {
		return nil, &ParseError{Offset: d.pos, Err: fmt.Errorf("%w: %d bytes after the struct", ErrMalformed, len(b)-d.pos)}
	}
	return &View{buf: b, nodes: d.out}, nil
}

// Len returns the length of the encoded struct, in bytes.
func (v *View) Len() int { return len(v.buf) }

// Bytes returns the encoded struct (aliased, not copied).
func (v *View) Bytes() []byte { return v.buf }

// Root returns the struct.
func (v *View) Root() Node { return Node{v, 0} }

// Tree returns the struct as an editable tree, as DecodeExact would return
// it.
func (v *View) Tree() *Struct {
	d := decoder{buf: v.buf, out: v.nodes}
	t, _ := d.tree(0)
	return t.Struct
}

// A Node is one value of a View. The zero Node is no value: its methods
// return zero values.
type Node struct {
	v *View
	i int
}

func (n Node) nd() node {
	if n.v == nil {
		return node{}
	}
	return *n.v.nodes.at(n.i)
}

// Type returns the value's type (0 for the zero Node).
func (n Node) Type() Type { return n.nd().typ }

// ID returns the field ID of a struct field, or 0.
func (n Node) ID() int16 { return n.nd().id }

// Int returns the value of a bool (0 or 1), byte, i16, i32 or i64, or 0.
func (n Node) Int() int64 {
	nd := n.nd()
	switch nd.typ {
	case TypeBool:
		return int64(nd.aux)
	case TypeByte, TypeI16, TypeI32, TypeI64:
		return scalar(n.v.buf, nd)
	}
	return 0
}

// Bits returns the raw bits of a double, or 0.
func (n Node) Bits() uint64 {
	nd := n.nd()
	if nd.typ != TypeDouble {
		return 0
	}
	return binary.LittleEndian.Uint64(n.v.buf[nd.end-8:])
}

// Bin returns the bytes of a binary (aliasing the input), or nil.
func (n Node) Bin() []byte {
	nd := n.nd()
	if nd.typ != TypeBinary {
		return nil
	}
	return n.v.buf[nd.end-nd.val : nd.end : nd.end]
}

// Len returns the number of fields of a struct, elements of a list or set,
// or entries of a map; 0 for other values.
func (n Node) Len() int {
	switch nd := n.nd(); nd.typ {
	case TypeList, TypeSet, TypeMap, TypeStruct:
		return int(nd.val)
	}
	return 0
}

// Elem returns the element type of a list or set, or 0.
func (n Node) Elem() Type {
	switch nd := n.nd(); nd.typ {
	case TypeList, TypeSet:
		return Type(nd.aux)
	}
	return 0
}

// Children yields the fields of a struct, the elements of a list or set, or
// the keys and values of a map, alternately, in order.
func (n Node) Children() iter.Seq[Node] {
	return func(yield func(Node) bool) {
		nd := n.nd()
		count := 0
		switch nd.typ {
		case TypeList, TypeSet, TypeStruct:
			count = int(nd.val)
		case TypeMap:
			count = 2 * int(nd.val)
		}
		for i, k := n.i+1, 0; k < count; k++ {
			c := Node{n.v, i}
			if !yield(c) {
				return
			}
			i = int(n.v.nodes.at(i).next)
		}
	}
}

// Field returns the field of a struct with the given ID.
func (n Node) Field(id int16) (Node, bool) {
	if n.Type() != TypeStruct {
		return Node{}, false
	}
	for c := range n.Children() {
		if c.ID() == id {
			return c, true
		}
	}
	return Node{}, false
}

// get returns field id of a struct if it has type t. The error wraps
// ErrMissing or ErrWrongType.
func (n Node) get(id int16, t Type) (Node, error) {
	c, ok := n.Field(id)
	if !ok {
		return Node{}, fmt.Errorf("%w: %v field %d", ErrMissing, t, id)
	}
	if c.Type() != t {
		return Node{}, fmt.Errorf("%w: field %d is %v, want %v", ErrWrongType, id, c.Type(), t)
	}
	return c, nil
}

// I32 returns the value of i32 field id of a struct, as Struct.I32 does.
func (n Node) I32(id int16) (int32, error) {
	c, err := n.get(id, TypeI32)
	return int32(c.Int()), err
}

// I64 returns the value of i64 field id of a struct, as Struct.I64 does.
func (n Node) I64(id int16) (int64, error) {
	c, err := n.get(id, TypeI64)
	return c.Int(), err
}

// Binary returns the value of binary field id of a struct, as
// Struct.Binary does.
func (n Node) Binary(id int16) ([]byte, error) {
	c, err := n.get(id, TypeBinary)
	return c.Bin(), err
}

// Struct returns struct field id of a struct, as Struct.Struct does.
func (n Node) Struct(id int16) (Node, error) { return n.get(id, TypeStruct) }

// List returns list field id of a struct, as Struct.List does.
func (n Node) List(id int16) (Node, error) { return n.get(id, TypeList) }

// AppendView appends the canonical encoding of the struct n to dst, leaving
// out every struct field and every list or set element for which drop
// reports true. drop is given the path from n to the candidate: path[0] is
// n, path[len(path)-1] the field or element. With a nil drop, the result is
// the input bytes of n.
func AppendView(dst []byte, n Node, drop func(path []Node) bool) []byte {
	if n.Type() != TypeStruct {
		panic("thrift: AppendView of a " + n.Type().String())
	}
	e := viewEncoder{drop: drop, path: []Node{n}}
	return e.appendStruct(dst)
}

type viewEncoder struct {
	drop func(path []Node) bool
	path []Node
}

func (e *viewEncoder) dropped(c Node) bool {
	if e.drop == nil {
		return false
	}
	e.path = append(e.path, c)
	d := e.drop(e.path)
	e.path = e.path[:len(e.path)-1]
	return d
}

// appendStruct encodes the struct at the end of e.path.
func (e *viewEncoder) appendStruct(dst []byte) []byte {
	n := e.path[len(e.path)-1]
	last := 0
	for c := range n.Children() {
		if e.dropped(c) {
			continue
		}
		t := byte(c.Type())
		if c.Type() == TypeBool && c.Int() == 0 {
			t = 2
		}
		id := int(c.ID())
		if id > last && id-last <= 15 {
			dst = append(dst, byte(id-last)<<4|t)
		} else {
			dst = append(dst, t)
			dst = appendUvarint(dst, zigzag(int64(id)))
		}
		last = id
		if c.Type() != TypeBool {
			dst = e.appendValue(dst, c)
		}
	}
	return append(dst, 0)
}

// appendValue encodes c, a child of the node at the end of e.path.
func (e *viewEncoder) appendValue(dst []byte, c Node) []byte {
	nd := c.nd()
	buf := c.v.buf
	switch nd.typ {
	case TypeBool:
		return append(dst, byte(2-nd.aux))
	case TypeByte, TypeI16, TypeI32, TypeI64:
		return append(dst, buf[nd.val:nd.end]...)
	case TypeDouble:
		return append(dst, buf[nd.end-8:nd.end]...)
	case TypeBinary:
		dst = appendUvarint(dst, uint64(nd.val))
		return append(dst, buf[nd.end-nd.val:nd.end]...)
	case TypeStruct, TypeList, TypeSet, TypeMap:
		e.path = append(e.path, c)
		defer func() { e.path = e.path[:len(e.path)-1] }()
		switch nd.typ {
		case TypeStruct:
			return e.appendStruct(dst)
		case TypeMap:
			if nd.val == 0 {
				return append(dst, 0)
			}
			dst = appendUvarint(dst, uint64(nd.val))
			dst = append(dst, nd.aux)
			for k := range c.Children() {
				dst = e.appendValue(dst, k)
			}
			return dst
		}
		kept := 0
		for k := range c.Children() {
			if !e.dropped(k) {
				kept++
			}
		}
		if kept < 15 {
			dst = append(dst, byte(kept)<<4|nd.aux)
		} else {
			dst = append(dst, 0xf0|nd.aux)
			dst = appendUvarint(dst, uint64(kept))
		}
		for k := range c.Children() {
			if !e.dropped(k) {
				dst = e.appendValue(dst, k)
			}
		}
		return dst
	}
	panic("thrift: internal error: node of type " + nd.typ.String())
}
