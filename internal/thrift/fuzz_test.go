package thrift

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// FuzzDecode checks, for any input, that Decode does not panic; that an
// error is a *ParseError wrapping a sentinel; and that an accepted input
// re-encodes to exactly the bytes consumed, decodes again to the same tree,
// and reads the same with Apache Thrift (which accepts a superset).
//
// Seeds: the golden files in testdata, and testdata/fuzz/FuzzDecode (which
// go test adds by itself); the test fails if either is missing.
func FuzzDecode(f *testing.F) {
	for _, b := range golden(f) {
		f.Add(b)
	}
	corpus, err := os.ReadDir(filepath.Join("testdata", "fuzz", "FuzzDecode"))
	if err != nil || len(corpus) == 0 {
		f.Fatalf("no seeds in testdata/fuzz/FuzzDecode: %v", err)
	}
	sentinels := []error{ErrTruncated, ErrMalformed, ErrNonCanonical, ErrTooDeep, ErrTooLarge}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, n, err := Decode(b, Limits{MaxNodes: 1 << 16})
		_, verr := DecodeView(b, Limits{MaxNodes: 1 << 16})
		_, xerr := DecodeExact(b, Limits{MaxNodes: 1 << 16})
		if (verr == nil) != (xerr == nil) || (verr != nil && verr.Error() != xerr.Error()) {
			t.Fatalf("DecodeView: %v; DecodeExact: %v", verr, xerr)
		}
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Offset < 0 || pe.Offset > len(b) {
				t.Fatalf("bad error %v", err)
			}
			if !slices.ContainsFunc(sentinels, func(e error) bool { return errors.Is(err, e) }) {
				t.Fatalf("error %v wraps no sentinel", err)
			}
			return
		}
		out := s.Append(nil)
		if !bytes.Equal(out, b[:n]) {
			t.Fatalf("Append differs from the input:\n got % x\nwant % x", out, b[:n])
		}
		if l := s.EncodedLen(); l != n {
			t.Fatalf("EncodedLen = %d, want %d", l, n)
		}
		again, err := DecodeExact(out, Limits{})
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if !equalStruct(s, again) {
			t.Fatal("re-decoded tree differs")
		}
		ref, rn, err := apacheRead(b)
		if err != nil || rn != n || !equalStruct(ref, s) {
			t.Fatalf("Apache Thrift reads it differently: n=%d/%d err=%v", rn, n, err)
		}
		checkView(t, b[:n], s)
	})
}

// checkView checks that DecodeView agrees with DecodeExact on b, which
// decodes to s: the same tree, the same bytes, and AppendView dropping
// fields agrees with deleting them from the tree.
func checkView(t *testing.T, b []byte, s *Struct) {
	t.Helper()
	v, err := DecodeView(b, Limits{MaxNodes: 1 << 16})
	if err != nil {
		t.Fatalf("DecodeView: %v", err)
	}
	if !equalStruct(v.Tree(), s) {
		t.Fatal("DecodeView's tree differs")
	}
	if got := AppendView(nil, v.Root(), nil); !bytes.Equal(got, b) {
		t.Fatalf("AppendView differs:\n got % x\nwant % x", got, b)
	}
	if !equalNode(v.Root(), &Value{Type: TypeStruct, Struct: s}) {
		t.Fatal("a View's accessors read another tree")
	}
	// Drop every field with an odd ID and every list item that is odd (see
	// oddNode), at every depth, in the View and in the tree.
	drop := func(path []Node) bool {
		c := path[len(path)-1]
		if path[len(path)-2].Type() == TypeStruct {
			return c.ID()%2 != 0
		}
		if e := path[len(path)-2].Type(); e == TypeList || e == TypeSet {
			return oddNode(c)
		}
		return false
	}
	want := dropTree(v.Tree())
	if got := AppendView(nil, v.Root(), drop); !bytes.Equal(got, want.Append(nil)) {
		t.Fatalf("AppendView with drops differs:\n got % x\nwant % x", got, want.Append(nil))
	}
}

// oddNode and oddValue say whether a list item is dropped: an odd number, or
// a binary, container or struct of odd length.
func oddNode(n Node) bool {
	switch n.Type() {
	case TypeBinary:
		return len(n.Bin())%2 == 1
	case TypeList, TypeSet, TypeMap, TypeStruct:
		return n.Len()%2 == 1
	case TypeDouble:
		return n.Bits()%2 == 1
	}
	return n.Int()%2 != 0
}

func oddValue(v Value) bool {
	switch v.Type {
	case TypeBinary:
		return len(v.Bin)%2 == 1
	case TypeList, TypeSet:
		return len(v.List.Items)%2 == 1
	case TypeMap:
		return len(v.Map.Keys)%2 == 1
	case TypeStruct:
		return len(v.Struct.Fields)%2 == 1
	case TypeDouble:
		return v.Bits%2 == 1
	}
	return v.Int%2 != 0
}

// dropTree deletes, at every depth, the fields with an odd ID and the odd
// items of lists and sets.
func dropTree(s *Struct) *Struct {
	out := &Struct{}
	for _, f := range s.Fields {
		if f.ID%2 != 0 {
			continue
		}
		f.Value = dropValue(f.Value)
		out.Fields = append(out.Fields, f)
	}
	return out
}

func dropValue(v Value) Value {
	switch v.Type {
	case TypeStruct:
		v.Struct = dropTree(v.Struct)
	case TypeList, TypeSet:
		l := &List{Elem: v.List.Elem}
		for _, it := range v.List.Items {
			if !oddValue(it) {
				l.Items = append(l.Items, dropValue(it))
			}
		}
		v.List = l
	case TypeMap:
		m := &Map{Key: v.Map.Key, Val: v.Map.Val}
		for k := range v.Map.Keys {
			m.Keys = append(m.Keys, dropValue(v.Map.Keys[k]))
			m.Vals = append(m.Vals, dropValue(v.Map.Vals[k]))
		}
		v.Map = m
	}
	return v
}

// equalNode reports whether the View node n reads as the tree value w.
func equalNode(n Node, w *Value) bool {
	if n.Type() != w.Type {
		return false
	}
	switch w.Type {
	case TypeBool, TypeByte, TypeI16, TypeI32, TypeI64:
		return n.Int() == w.Int
	case TypeDouble:
		return n.Bits() == w.Bits
	case TypeBinary:
		return bytes.Equal(n.Bin(), w.Bin)
	case TypeList, TypeSet:
		if n.Elem() != w.List.Elem || n.Len() != len(w.List.Items) {
			return false
		}
		k := 0
		for c := range n.Children() {
			if c.ID() != 0 || !equalNode(c, &w.List.Items[k]) {
				return false
			}
			k++
		}
		return k == len(w.List.Items)
	case TypeMap:
		if n.Len() != len(w.Map.Keys) {
			return false
		}
		k := 0
		for c := range n.Children() {
			want := &w.Map.Keys[k/2]
			if k%2 == 1 {
				want = &w.Map.Vals[k/2]
			}
			if !equalNode(c, want) {
				return false
			}
			k++
		}
		return k == 2*len(w.Map.Keys)
	case TypeStruct:
		if n.Len() != len(w.Struct.Fields) {
			return false
		}
		k := 0
		for c := range n.Children() {
			f := &w.Struct.Fields[k]
			if c.ID() != f.ID || !equalNode(c, &f.Value) {
				return false
			}
			if got, ok := n.Field(f.ID); !ok || got != c {
				return false
			}
			k++
		}
		return k == len(w.Struct.Fields)
	}
	return false
}

func benchFooter(b *testing.B) []byte {
	var largest []byte
	for name, data := range golden(b) {
		if len(name) > 7 && name[:7] == "footer-" && len(data) > len(largest) {
			largest = data
		}
	}
	return largest
}

func BenchmarkDecodeFooter(b *testing.B) {
	in := benchFooter(b)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Decode(in, Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendFooter(b *testing.B) {
	in := benchFooter(b)
	s, err := DecodeExact(in, Limits{})
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 0, len(in))
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		buf = s.Append(buf[:0])
	}
}
