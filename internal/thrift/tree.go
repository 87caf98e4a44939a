package thrift

import "encoding/binary"

// tree returns the Value of node i, built from the nodes, and the index of
// the node after its subtree.
func (d *decoder) tree(i int) (Value, int) {
	n := *d.out.at(i)
	v := Value{Type: n.typ}
	next := i + 1
	switch n.typ {
	case TypeBool:
		v.Int = int64(n.aux)
	case TypeByte, TypeI16, TypeI32, TypeI64:
		v.Int = scalar(d.buf, n)
	case TypeDouble:
		v.Bits = binary.LittleEndian.Uint64(d.buf[n.end-8:])
	case TypeBinary:
		v.Bin = d.buf[n.end-n.val : n.end : n.end]
	case TypeList, TypeSet:
		v.List = &List{Elem: Type(n.aux)}
		if n.val > 0 {
			v.List.Items = make([]Value, n.val)
			for j := range v.List.Items {
				v.List.Items[j], next = d.tree(next)
			}
		}
	case TypeMap:
		v.Map = new(Map)
		if n.val > 0 {
			v.Map.Key, v.Map.Val = Type(n.aux>>4), Type(n.aux&0x0f)
			v.Map.Keys, v.Map.Vals = make([]Value, n.val), make([]Value, n.val)
			for j := range v.Map.Keys {
				v.Map.Keys[j], next = d.tree(next)
				v.Map.Vals[j], next = d.tree(next)
			}
		}
	case TypeStruct:
		v.Struct = new(Struct)
		if n.val > 0 {
			v.Struct.Fields = make([]Field, n.val)
			for j := range v.Struct.Fields {
				id := d.out.at(next).id
				v.Struct.Fields[j].ID = id
				v.Struct.Fields[j].Value, next = d.tree(next)
			}
		}
	}
	return v, next
}

// scalar decodes the byte or integer value of n.
func scalar(buf []byte, n node) int64 {
	if n.typ == TypeByte {
		return int64(int8(buf[n.end-1]))
	}
	var u uint64
	for i, c := range buf[n.val:n.end] {
		u |= uint64(c&0x7f) << (7 * i)
	}
	return unzigzag(u)
}
