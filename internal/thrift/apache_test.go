package thrift

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apache/thrift/lib/go/thrift"
)

// Differential tests against Apache Thrift's Go TCompactProtocol, the
// reference implementation of the compact protocol.

var toTType = [...]thrift.TType{
	TypeBool: thrift.BOOL, TypeByte: thrift.BYTE, TypeI16: thrift.I16,
	TypeI32: thrift.I32, TypeI64: thrift.I64, TypeDouble: thrift.DOUBLE,
	TypeBinary: thrift.STRING, TypeList: thrift.LIST, TypeSet: thrift.SET,
	TypeMap: thrift.MAP, TypeStruct: thrift.STRUCT,
}

func fromTType(t thrift.TType) (Type, error) {
	if t == thrift.STOP {
		return 0, nil // the types of an empty map
	}
	for i, tt := range toTType {
		if tt == t && i != 0 {
			return Type(i), nil
		}
	}
	return 0, fmt.Errorf("unsupported type %v", t)
}

// apacheRead reads one struct from the start of b with Apache Thrift into
// our tree type, and returns the number of bytes it used.
func apacheRead(b []byte) (*Struct, int, error) {
	buf := &thrift.TMemoryBuffer{Buffer: bytes.NewBuffer(b)}
	p := thrift.NewTCompactProtocolConf(buf, nil)
	s, err := apacheReadStruct(context.Background(), p, 0)
	return s, len(b) - buf.Len(), err
}

func apacheReadStruct(ctx context.Context, p *thrift.TCompactProtocol, depth int) (*Struct, error) {
	if depth > 64 {
		return nil, fmt.Errorf("too deep")
	}
	if _, err := p.ReadStructBegin(ctx); err != nil {
		return nil, err
	}
	s := NewStruct()
	for {
		_, tt, id, err := p.ReadFieldBegin(ctx)
		if err != nil {
			return nil, err
		}
		if tt == thrift.STOP {
			break
		}
		t, err := fromTType(tt)
		if err != nil {
			return nil, err
		}
		v, err := apacheReadValue(ctx, p, t, depth)
		if err != nil {
			return nil, err
		}
		s.Fields = append(s.Fields, Field{ID: id, Value: v})
		if err := p.ReadFieldEnd(ctx); err != nil {
			return nil, err
		}
	}
	return s, p.ReadStructEnd(ctx)
}

func apacheReadValue(ctx context.Context, p *thrift.TCompactProtocol, t Type, depth int) (v Value, err error) {
	v.Type = t
	switch t {
	case TypeBool:
		var b bool
		b, err = p.ReadBool(ctx)
		v = Bool(b)
	case TypeByte:
		var x int8
		x, err = p.ReadByte(ctx)
		v.Int = int64(x)
	case TypeI16:
		var x int16
		x, err = p.ReadI16(ctx)
		v.Int = int64(x)
	case TypeI32:
		var x int32
		x, err = p.ReadI32(ctx)
		v.Int = int64(x)
	case TypeI64:
		v.Int, err = p.ReadI64(ctx)
	case TypeDouble:
		var x float64
		x, err = p.ReadDouble(ctx)
		v.Bits = math.Float64bits(x)
	case TypeBinary:
		v.Bin, err = p.ReadBinary(ctx)
	case TypeList, TypeSet:
		var et thrift.TType
		var n int
		if t == TypeList {
			et, n, err = p.ReadListBegin(ctx)
		} else {
			et, n, err = p.ReadSetBegin(ctx)
		}
		if err != nil {
			return v, err
		}
		v.List = &List{}
		if v.List.Elem, err = fromTType(et); err != nil {
			return v, err
		}
		for range n {
			it, err := apacheReadValue(ctx, p, v.List.Elem, depth+1)
			if err != nil {
				return v, err
			}
			v.List.Items = append(v.List.Items, it)
		}
		if t == TypeList {
			err = p.ReadListEnd(ctx)
		} else {
			err = p.ReadSetEnd(ctx)
		}
	case TypeMap:
		var kt, vt thrift.TType
		var n int
		kt, vt, n, err = p.ReadMapBegin(ctx)
		if err != nil {
			return v, err
		}
		v.Map = &Map{}
		if v.Map.Key, err = fromTType(kt); err != nil {
			return v, err
		}
		if v.Map.Val, err = fromTType(vt); err != nil {
			return v, err
		}
		for range n {
			k, err := apacheReadValue(ctx, p, v.Map.Key, depth+1)
			if err != nil {
				return v, err
			}
			x, err := apacheReadValue(ctx, p, v.Map.Val, depth+1)
			if err != nil {
				return v, err
			}
			v.Map.Keys, v.Map.Vals = append(v.Map.Keys, k), append(v.Map.Vals, x)
		}
		err = p.ReadMapEnd(ctx)
	case TypeStruct:
		v.Struct, err = apacheReadStruct(ctx, p, depth+1)
	default:
		err = fmt.Errorf("type %v", t)
	}
	return v, err
}

// apacheWrite encodes s with Apache Thrift.
func apacheWrite(t testing.TB, s *Struct) []byte {
	t.Helper()
	ctx := context.Background()
	buf := thrift.NewTMemoryBuffer()
	p := thrift.NewTCompactProtocolConf(buf, nil)
	if err := apacheWriteStruct(ctx, p, s); err != nil {
		t.Fatal(err)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func apacheWriteStruct(ctx context.Context, p *thrift.TCompactProtocol, s *Struct) error {
	if err := p.WriteStructBegin(ctx, ""); err != nil {
		return err
	}
	for _, fl := range s.Fields {
		if err := p.WriteFieldBegin(ctx, "", toTType[fl.Type], fl.ID); err != nil {
			return err
		}
		if err := apacheWriteValue(ctx, p, &fl.Value); err != nil {
			return err
		}
		if err := p.WriteFieldEnd(ctx); err != nil {
			return err
		}
	}
	if err := p.WriteFieldStop(ctx); err != nil {
		return err
	}
	return p.WriteStructEnd(ctx)
}

func apacheWriteValue(ctx context.Context, p *thrift.TCompactProtocol, v *Value) error {
	switch v.Type {
	case TypeBool:
		return p.WriteBool(ctx, v.Int != 0)
	case TypeByte:
		return p.WriteByte(ctx, int8(v.Int))
	case TypeI16:
		return p.WriteI16(ctx, int16(v.Int))
	case TypeI32:
		return p.WriteI32(ctx, int32(v.Int))
	case TypeI64:
		return p.WriteI64(ctx, v.Int)
	case TypeDouble:
		return p.WriteDouble(ctx, math.Float64frombits(v.Bits))
	case TypeBinary:
		return p.WriteBinary(ctx, v.Bin)
	case TypeList, TypeSet:
		var err error
		if v.Type == TypeList {
			err = p.WriteListBegin(ctx, toTType[v.List.Elem], len(v.List.Items))
		} else {
			err = p.WriteSetBegin(ctx, toTType[v.List.Elem], len(v.List.Items))
		}
		if err != nil {
			return err
		}
		for i := range v.List.Items {
			if err := apacheWriteValue(ctx, p, &v.List.Items[i]); err != nil {
				return err
			}
		}
		return nil
	case TypeMap:
		var kt, vt thrift.TType
		if len(v.Map.Keys) > 0 {
			kt, vt = toTType[v.Map.Key], toTType[v.Map.Val]
		}
		if err := p.WriteMapBegin(ctx, kt, vt, len(v.Map.Keys)); err != nil {
			return err
		}
		for i := range v.Map.Keys {
			if err := apacheWriteValue(ctx, p, &v.Map.Keys[i]); err != nil {
				return err
			}
			if err := apacheWriteValue(ctx, p, &v.Map.Vals[i]); err != nil {
				return err
			}
		}
		return nil
	case TypeStruct:
		return apacheWriteStruct(ctx, p, v.Struct)
	}
	return fmt.Errorf("type %v", v.Type)
}

// treeGen makes random trees that exercise the edges of the encoding:
// field ID deltas around 15, negative and extreme IDs, integers at the
// limits of their varint lengths, lists around 15 items, binaries around
// 128 bytes, NaN doubles, empty maps and structs.
type treeGen struct {
	r     *rand.Rand
	nodes int
}

var allTypes = []Type{TypeBool, TypeByte, TypeI16, TypeI32, TypeI64, TypeDouble,
	TypeBinary, TypeList, TypeSet, TypeMap, TypeStruct}

func (g *treeGen) typ(depth int) Type {
	if depth >= 6 || g.nodes > 2000 {
		return allTypes[g.r.IntN(7)] // scalars only
	}
	return allTypes[g.r.IntN(len(allTypes))]
}

func (g *treeGen) structure(depth int) *Struct {
	s := NewStruct()
	n := g.r.IntN(6)
	if g.r.IntN(8) == 0 {
		n = g.r.IntN(30)
	}
	seen := map[int16]bool{}
	last := 0
	for range n {
		var id int
		switch g.r.IntN(6) {
		case 0, 1, 2:
			id = last + 1 + g.r.IntN(3)
		case 3:
			id = last + 14 + g.r.IntN(4) // around the short-form limit
		case 4:
			id = last - g.r.IntN(3) // repeats and descents
		default:
			id = g.r.IntN(1<<16) - 1<<15
		}
		if id < math.MinInt16 || id > math.MaxInt16 || seen[int16(id)] {
			continue
		}
		seen[int16(id)] = true
		last = id
		s.Fields = append(s.Fields, Field{ID: int16(id), Value: g.value(g.typ(depth), depth)})
	}
	return s
}

func (g *treeGen) count() int {
	switch g.r.IntN(4) {
	case 0:
		return 0
	case 1:
		return 13 + g.r.IntN(4) // around the short list header limit
	}
	return 1 + g.r.IntN(4)
}

func (g *treeGen) elemType(depth int) Type {
	t := g.typ(depth)
	return t
}

func (g *treeGen) int(bits int) int64 {
	switch g.r.IntN(5) {
	case 0:
		return -1 << (bits - 1) // min
	case 1:
		return 1<<(bits-1) - 1 // max
	case 2:
		// around a varint length boundary of the zigzag encoding
		k := 7 * (1 + g.r.IntN(max(1, bits/7)))
		if k >= bits {
			k = bits - 1
		}
		return int64(1)<<(k-1) - 1 + int64(g.r.IntN(3)) - 1 - int64(g.r.IntN(2))<<k
	}
	return int64(g.r.Uint64()) >> (64 - bits)
}

func (g *treeGen) value(t Type, depth int) Value {
	g.nodes++
	switch t {
	case TypeBool:
		return Bool(g.r.IntN(2) == 0)
	case TypeByte:
		return Byte(int8(g.int(8)))
	case TypeI16:
		return I16(int16(g.int(16)))
	case TypeI32:
		return I32(int32(g.int(32)))
	case TypeI64:
		return I64(g.int(64))
	case TypeDouble:
		bits := g.r.Uint64()
		if g.r.IntN(3) == 0 {
			bits |= 0x7ff0000000000001 // a NaN with a payload
		}
		return Value{Type: TypeDouble, Bits: bits}
	case TypeBinary:
		n := g.r.IntN(10)
		if g.r.IntN(4) == 0 {
			n = 126 + g.r.IntN(4)
		}
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(g.r.Uint32())
		}
		return Binary(b)
	case TypeList, TypeSet:
		l := &List{Elem: g.elemType(depth + 1)}
		for range g.count() {
			l.Items = append(l.Items, g.value(l.Elem, depth+1))
		}
		return Value{Type: t, List: l}
	case TypeMap:
		m := &Map{}
		n := g.count()
		if n > 0 {
			m.Key, m.Val = g.elemType(depth+1), g.elemType(depth+1)
		}
		for range n {
			m.Keys = append(m.Keys, g.value(m.Key, depth+1))
			m.Vals = append(m.Vals, g.value(m.Val, depth+1))
		}
		return Value{Type: TypeMap, Map: m}
	case TypeStruct:
		return StructValue(g.structure(depth + 1))
	}
	panic("unreachable")
}

// TestDifferentialApache encodes random trees with our encoder and with
// Apache Thrift's, requires the same bytes, and decodes them with both
// decoders.
func TestDifferentialApache(t *testing.T) {
	t.Parallel()
	n := 3000
	if testing.Short() {
		n = 300
	}
	g := &treeGen{r: rand.New(rand.NewPCG(1, 2))}
	var total int
	for i := range n {
		g.nodes = 0
		s := g.structure(1)
		ours := s.Append(nil)
		total += len(ours)
		if l := s.EncodedLen(); l != len(ours) {
			t.Fatalf("tree %d: EncodedLen %d, Append %d", i, l, len(ours))
		}
		theirs := apacheWrite(t, s)
		if !bytes.Equal(ours, theirs) {
			t.Fatalf("tree %d: encodings differ\nours   % x\ntheirs % x", i, ours, theirs)
		}
		ref, n, err := apacheRead(ours)
		if err != nil || n != len(ours) {
			t.Fatalf("tree %d: Apache read: n=%d/%d, %v", i, n, len(ours), err)
		}
		if !equalStruct(ref, s) {
			t.Fatalf("tree %d: Apache reads a different tree", i)
		}
		got, err := DecodeExact(ours, Limits{})
		if err != nil {
			t.Fatalf("tree %d: %v\n% x", i, err, ours)
		}
		if !equalStruct(got, s) {
			t.Fatalf("tree %d: we decode a different tree", i)
		}
	}
	t.Logf("%d random trees, %d bytes", n, total)
}
