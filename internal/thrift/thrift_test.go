package thrift

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
)

// unhex decodes hex with spaces allowed.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// equalStruct reports whether two trees are equal (nil and empty binaries
// are equal).
func equalStruct(a, b *Struct) bool {
	if a == nil || b == nil {
		return a == b
	}
	if len(a.Fields) != len(b.Fields) {
		return false
	}
	for i := range a.Fields {
		if a.Fields[i].ID != b.Fields[i].ID || !equalValue(&a.Fields[i].Value, &b.Fields[i].Value) {
			return false
		}
	}
	return true
}

func equalValue(a, b *Value) bool {
	if a.Type != b.Type {
		return false
	}
	switch a.Type {
	case TypeBool, TypeByte, TypeI16, TypeI32, TypeI64:
		return a.Int == b.Int
	case TypeDouble:
		return a.Bits == b.Bits
	case TypeBinary:
		return bytes.Equal(a.Bin, b.Bin)
	case TypeList, TypeSet:
		return equalValues(a.List.Elem, b.List.Elem, a.List.Items, b.List.Items)
	case TypeMap:
		return a.Map.Key == b.Map.Key && a.Map.Val == b.Map.Val &&
			equalValues(0, 0, a.Map.Keys, b.Map.Keys) &&
			equalValues(0, 0, a.Map.Vals, b.Map.Vals)
	case TypeStruct:
		return equalStruct(a.Struct, b.Struct)
	}
	return false
}

func equalValues(ea, eb Type, a, b []Value) bool {
	if ea != eb || len(a) != len(b) {
		return false
	}
	for i := range a {
		if !equalValue(&a[i], &b[i]) {
			return false
		}
	}
	return true
}

func f(id int16, v Value) Field { return Field{ID: id, Value: v} }

// TestAccept checks inputs that follow every rule: they decode to the
// expected tree, and that tree encodes back to the same bytes.
func TestAccept(t *testing.T) {
	t.Parallel()
	emptyStruct := StructValue(NewStruct())
	for _, c := range []struct {
		name string
		in   string
		want *Struct
	}{
		{"empty", "00", NewStruct()},
		{"i32 short", "15 02 00", NewStruct(f(1, I32(1)))},
		{"max short delta", "f5 02 00", NewStruct(f(15, I32(1)))},
		{"long delta 16", "05 20 02 00", NewStruct(f(16, I32(1)))},
		{"long id 0", "05 00 02 00", NewStruct(f(0, I32(1)))},
		{"long negative id", "05 01 02 00", NewStruct(f(-1, I32(1)))},
		{"descending ids", "25 02 05 02 04 00", NewStruct(f(2, I32(1)), f(1, I32(2)))},
		{"short after long", "05 20 02 15 04 00", NewStruct(f(16, I32(1)), f(17, I32(2)))},
		{"min id", "05 ff ff 03 02 00", NewStruct(f(math.MinInt16, I32(1)))},
		{"max id", "05 fe ff 03 02 00", NewStruct(f(math.MaxInt16, I32(1)))},
		{"bool fields", "11 22 00", NewStruct(f(1, Bool(true)), f(3, Bool(false)))},
		{"byte", "13 ff 23 7f 00", NewStruct(f(1, Byte(-1)), f(3, Byte(127)))},
		{"i16 extremes", "14 ff ff 03 14 fe ff 03 00", NewStruct(f(1, I16(math.MinInt16)), f(2, I16(math.MaxInt16)))},
		{"i32 extremes", "15 ff ff ff ff 0f 15 fe ff ff ff 0f 00", NewStruct(f(1, I32(math.MinInt32)), f(2, I32(math.MaxInt32)))},
		{"i64 extremes", "16 ff ff ff ff ff ff ff ff ff 01 16 fe ff ff ff ff ff ff ff ff 01 16 01 00",
			NewStruct(f(1, I64(math.MinInt64)), f(2, I64(math.MaxInt64)), f(3, I64(-1)))},
		{"double NaN payload", "17 01 00 00 00 00 00 f8 7f 00", NewStruct(f(1, Value{Type: TypeDouble, Bits: 0x7ff8000000000001}))},
		{"binary", "18 03 61 62 63 18 00 00", NewStruct(f(1, Binary([]byte("abc"))), f(2, Binary(nil)))},
		{"binary len 128", "18 80 01" + strings.Repeat(" 00", 128) + " 00", NewStruct(f(1, Binary(make([]byte, 128))))},
		{"list of bool", "19 21 01 02 00", NewStruct(f(1, ListOf(TypeBool, Bool(true), Bool(false))))},
		{"empty list", "19 05 00", NewStruct(f(1, ListOf(TypeI32)))},
		{"list of 14", "19 e3" + strings.Repeat(" 07", 14) + " 00", NewStruct(f(1, ListOf(TypeByte, repeat(Byte(7), 14)...)))},
		{"list of 15", "19 f3 0f" + strings.Repeat(" 07", 15) + " 00", NewStruct(f(1, ListOf(TypeByte, repeat(Byte(7), 15)...)))},
		{"set", "1a 15 02 00", NewStruct(f(1, Value{Type: TypeSet, List: &List{Elem: TypeI32, Items: []Value{I32(1)}}}))},
		{"list of empty structs", "19 2c 00 00 00", NewStruct(f(1, ListOf(TypeStruct, emptyStruct, emptyStruct)))},
		{"list of lists", "19 19 15 02 00", NewStruct(f(1, ListOf(TypeList, ListOf(TypeI32, I32(1)))))},
		{"empty map", "1b 00 00", NewStruct(f(1, Value{Type: TypeMap, Map: &Map{}}))},
		{"map", "1b 02 81 01 61 01 01 62 02 00", NewStruct(f(1, Value{Type: TypeMap, Map: &Map{
			Key: TypeBinary, Val: TypeBool,
			Keys: []Value{Binary([]byte("a")), Binary([]byte("b"))},
			Vals: []Value{Bool(true), Bool(false)},
		}}))},
		{"nested struct", "1c 15 02 00 00", NewStruct(f(1, StructValue(NewStruct(f(1, I32(1))))))},
		{"field IDs restart per struct", "5c 15 02 00 15 04 00", NewStruct(f(5, StructValue(NewStruct(f(1, I32(1))))), f(6, I32(2)))},
		{"duckdb FileCryptoMetaData", "1c 1c 00 00 00", NewStruct(f(1, StructValue(NewStruct(f(1, emptyStruct)))))},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := unhex(t, c.in)
			got, n, err := Decode(in, Limits{})
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if n != len(in) {
				t.Errorf("n = %d, want %d", n, len(in))
			}
			if !equalStruct(got, c.want) {
				t.Errorf("Decode = %+v, want %+v", got, c.want)
			}
			if out := c.want.Append(nil); !bytes.Equal(out, in) {
				t.Errorf("Append = % x, want % x", out, in)
			}
			if l := c.want.EncodedLen(); l != len(in) {
				t.Errorf("EncodedLen = %d, want %d", l, len(in))
			}
		})
	}
}

func repeat(v Value, n int) []Value {
	vs := make([]Value, n)
	for i := range vs {
		vs[i] = v
	}
	return vs
}

// TestReject checks that every non-canonical or malformed spelling is
// rejected with the right sentinel and offset.
func TestReject(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		in   string
		want error
		off  int // -1: don't check
	}{
		// Truncation.
		{"empty input", "", ErrTruncated, 0},
		{"no stop", "15 02", ErrTruncated, 2},
		{"no value", "15", ErrTruncated, 1},
		{"varint cut", "15 80", ErrTruncated, 1},
		{"long id cut", "05", ErrTruncated, 1},
		{"double cut", "17 00 00 00 00 00 00 00", ErrTruncated, 1},
		{"binary beyond input", "18 05 61 00", ErrTruncated, 1},
		{"list count beyond input", "19 f5 ff ff ff 07 00", ErrTruncated, 1},
		{"list of doubles beyond input", "19 27 00 00 00 00 00 00 00 00 00 00", ErrTruncated, 1},
		{"map count beyond input", "1b ff ff ff ff 07 55 00", ErrTruncated, 1},
		{"map entries beyond input", "1b 02 55 02 02 00", ErrTruncated, 1},
		{"nested struct cut", "1c 15 02", ErrTruncated, 3},
		// 40 lists; the first claims 30 of the 60 bytes left, but the
		// other 39 need at least 39 of them.
		{"list needs bytes promised to siblings", "19 f9 28 f5 1e" + strings.Repeat(" 02", 60), ErrTruncated, 3},
		{"binary needs bytes promised to siblings", "19 38 04 61 62 63 00 00", ErrTruncated, 2},

		// Rule 1: field headers.
		{"long form for delta 1", "05 02 02 00", ErrNonCanonical, 0},
		{"long form for delta 15", "05 1e 02 00", ErrNonCanonical, 0},
		{"long form after long", "05 20 02 05 22 02 00", ErrNonCanonical, 3},
		{"duplicate ID, long form", "15 02 05 02 04 00", ErrMalformed, 0},
		{"duplicate ID, later", "15 02 25 02 05 02 02 00", ErrMalformed, 0},
		{"duplicate ID 0", "05 00 02 05 00 02 00", ErrMalformed, 0},
		{"short form past max ID", "05 fe ff 03 02 15 02 00", ErrMalformed, 5},
		{"long ID out of i16", "05 80 80 04 02 00", ErrMalformed, 1},
		{"long ID not minimal", "05 a0 00 02 00", ErrNonCanonical, 1},

		// Rule 2: bools.
		{"bool element type 2", "19 12 01 00", ErrNonCanonical, 1},
		{"empty list of bool type 2", "19 02 00", ErrNonCanonical, 1},
		{"bool element 0", "19 11 00 00", ErrNonCanonical, 2},
		{"bool element 3", "19 11 03 00", ErrNonCanonical, 2},
		{"map bool key type 2", "1b 01 25 01 02 00", ErrNonCanonical, 1},
		{"map bool value type 2", "1b 01 52 02 01 00", ErrNonCanonical, 1},

		// Rule 3: varints.
		{"i32 not minimal", "15 80 00 00", ErrNonCanonical, 1},
		{"i32 not minimal, 5 bytes", "15 81 80 80 80 00 00", ErrNonCanonical, 1},
		{"i32 beyond 32 bits", "15 80 80 80 80 10 00", ErrMalformed, 1},
		{"i32 6 bytes", "15 80 80 80 80 80 01 00", ErrMalformed, 1},
		{"i16 beyond 16 bits", "14 80 80 04 00", ErrMalformed, 1},
		{"i16 4 bytes", "14 80 80 80 01 00", ErrMalformed, 1},
		{"i64 not minimal", "16 ff ff ff ff ff ff ff ff ff 00 00", ErrNonCanonical, 1},
		{"i64 beyond 64 bits", "16 ff ff ff ff ff ff ff ff ff 02 00", ErrMalformed, 1},
		{"i64 11 bytes", "16 ff ff ff ff ff ff ff ff ff 81 00", ErrMalformed, 1},
		{"binary length not minimal", "18 81 00 61 00", ErrNonCanonical, 1},
		{"binary length beyond int32", "18 80 80 80 80 08 00", ErrMalformed, 1},
		{"list size beyond int32", "19 f5 80 80 80 80 08 00", ErrMalformed, 2},
		{"map size not minimal", "1b 80 00 00", ErrNonCanonical, 1},

		// Rule 4: list and set headers.
		{"long list header for 14", "19 f3 0e" + strings.Repeat(" 07", 14) + " 00", ErrNonCanonical, 1},
		{"long list header for 0", "19 f5 00 00", ErrNonCanonical, 1},
		{"long set header for 1", "1a f5 01 02 00", ErrNonCanonical, 1},

		// Rule 5: maps.
		{"map key type 0", "1b 01 05 02 02 00", ErrMalformed, 1},
		{"map value type 13", "1b 01 5d 02 00", ErrMalformed, 1},

		// Rule 7: types.
		{"field type 13", "1d 00", ErrMalformed, 0},
		{"field type 14", "1e 00", ErrMalformed, 0},
		{"field type 15", "0f 00 00", ErrMalformed, 0},
		{"stop with delta", "10", ErrMalformed, 0},
		{"list element type 0", "19 10 00 00", ErrMalformed, 1},
		{"list element type 13", "19 0d 00", ErrMalformed, 1},
		{"list element type 15", "19 0f 00", ErrMalformed, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := unhex(t, c.in)
			s, n, err := Decode(in, Limits{})
			checkErr(t, s, n, err, c.want, c.off)
		})
	}
}

func checkErr(t *testing.T, s *Struct, n int, err, want error, off int) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("err = %v, want %v", err, want)
	}
	if s != nil || n != 0 {
		t.Errorf("got a result with an error: %v, %d", s, n)
	}
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("err is %T, not *ParseError", err)
	}
	if !strings.HasPrefix(err.Error(), "thrift: ") {
		t.Errorf("error %q lacks the package prefix", err)
	}
	if off >= 0 && pe.Offset != off {
		t.Errorf("Offset = %d, want %d (%v)", pe.Offset, off, err)
	}
}

func TestLimits(t *testing.T) {
	t.Parallel()
	nest := func(open, close string, n int) []byte {
		return unhex(t, strings.Repeat(open, n)+close+strings.Repeat("00", n))
	}
	// depth 32 of structs is fine: the top-level struct and 31 nested ones.
	if _, _, err := Decode(nest("1c", "00", 31), Limits{}); err != nil {
		t.Fatalf("depth 32: %v", err)
	}
	_, _, err := Decode(nest("1c", "00", 32), Limits{})
	checkErr(t, nil, 0, err, ErrTooDeep, 32)
	_, _, err = Decode(nest("1c", "00", 3), Limits{MaxDepth: 3})
	checkErr(t, nil, 0, err, ErrTooDeep, 3)

	// Lists count as levels too: struct, list, list, ...
	lists := unhex(t, "19"+strings.Repeat("19", 40)+"05 00")
	_, _, err = Decode(lists, Limits{})
	checkErr(t, nil, 0, err, ErrTooDeep, -1)
	maps := unhex(t, "1b"+strings.Repeat("01 b5", 40)+"00"+strings.Repeat("02", 40)+"00")
	_, _, err = Decode(maps, Limits{})
	checkErr(t, nil, 0, err, ErrTooDeep, -1)

	// MaxNodes counts fields and elements.
	four := unhex(t, "15 02 15 02 15 02 15 02 00")
	if _, _, err := Decode(four, Limits{MaxNodes: 4}); err != nil {
		t.Fatalf("4 nodes: %v", err)
	}
	_, _, err = Decode(four, Limits{MaxNodes: 3})
	checkErr(t, nil, 0, err, ErrTooLarge, 6)
	list := unhex(t, "19 35 02 02 02 00")
	_, _, err = Decode(list, Limits{MaxNodes: 3})
	checkErr(t, nil, 0, err, ErrTooLarge, 4)

	if l := DefaultLimits(); l.MaxDepth != DefaultMaxDepth || l.MaxNodes != DefaultMaxNodes {
		t.Errorf("DefaultLimits() = %+v", l)
	}
}

// TestNoHugeAllocation checks that a count or length larger than the input
// is rejected before memory is allocated for it.
func TestNoHugeAllocation(t *testing.T) {
	for _, in := range []string{
		"19 fc ff ff ff ff 07 00",    // list of 2^31-1 structs
		"1b ff ff ff ff 07 cc 00",    // map of 2^31-1 struct pairs
		"18 ff ff ff ff 07 00",       // 2 GiB binary
		"19 f9 ff ff ff ff 07 19 00", // list of lists
	} {
		b := unhex(t, in)
		const runs = 20
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range runs {
			if _, _, err := Decode(b, Limits{}); !errors.Is(err, ErrTruncated) {
				t.Fatalf("%s: err = %v, want ErrTruncated", in, err)
			}
		}
		runtime.ReadMemStats(&after)
		// The error itself takes a few hundred bytes; the smallest
		// container that was allocated up front would take more.
		if perRun := (after.TotalAlloc - before.TotalAlloc) / runs; perRun > 1024 {
			t.Errorf("%s: %d bytes allocated", in, perRun)
		}
	}
}

func TestDecodeExact(t *testing.T) {
	t.Parallel()
	in := unhex(t, "15 02 00 ff")
	s, n, err := Decode(in, Limits{})
	if err != nil || n != 3 || len(s.Fields) != 1 {
		t.Fatalf("Decode = %v, %d, %v", s, n, err)
	}
	_, err = DecodeExact(in, Limits{})
	checkErr(t, nil, 0, err, ErrMalformed, 3)
	if _, err := DecodeExact(in[:3], Limits{}); err != nil {
		t.Fatal(err)
	}
	_, err = DecodeExact(in[:2], Limits{})
	checkErr(t, nil, 0, err, ErrTruncated, 2)
}

// TestBinaryAliases checks that decoded binaries alias the input, without
// room to append into the bytes that follow.
func TestBinaryAliases(t *testing.T) {
	t.Parallel()
	in := unhex(t, "18 02 61 62 18 01 63 00")
	s, _, err := Decode(in, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Binary(1)
	if err != nil {
		t.Fatal(err)
	}
	if &b[0] != &in[2] {
		t.Error("binary does not alias the input")
	}
	if cap(b) != 2 {
		t.Errorf("cap = %d, want 2", cap(b))
	}
	_ = append(b, 'x')
	if in[4] != 0x18 {
		t.Error("append to a binary overwrote the input")
	}
}

func TestStructHelpers(t *testing.T) {
	t.Parallel()
	s := NewStruct(f(1, I32(7)), f(3, I64(-9)), f(5, Binary([]byte("x"))))
	s.Set(4, Bool(true))
	s.Set(0, Byte(1))
	s.Set(9, StructValue(NewStruct()))
	s.Set(3, I64(10)) // in place
	var ids []int16
	for _, fl := range s.Fields {
		ids = append(ids, fl.ID)
	}
	if want := []int16{0, 1, 3, 4, 5, 9}; !equalIDs(ids, want) {
		t.Errorf("IDs after Set = %v, want %v", ids, want)
	}
	if v, err := s.I64(3); err != nil || v != 10 {
		t.Errorf("I64(3) = %v, %v", v, err)
	}
	if v, err := s.I32(1); err != nil || v != 7 {
		t.Errorf("I32(1) = %v, %v", v, err)
	}
	if v, err := s.Bool(4); err != nil || !v {
		t.Errorf("Bool(4) = %v, %v", v, err)
	}
	if v, err := s.Binary(5); err != nil || string(v) != "x" {
		t.Errorf("Binary(5) = %q, %v", v, err)
	}
	if v, err := s.Struct(9); err != nil || v == nil {
		t.Errorf("Struct(9) = %v, %v", v, err)
	}
	if _, err := s.I32(3); !errors.Is(err, ErrWrongType) {
		t.Errorf("I32(3) err = %v, want ErrWrongType", err)
	}
	if _, err := s.List(2); !errors.Is(err, ErrMissing) {
		t.Errorf("List(2) err = %v, want ErrMissing", err)
	}
	if s.Field(2) != nil || s.Field(5) == nil {
		t.Error("Field")
	}
	if !s.Delete(4) || s.Delete(4) || s.Field(4) != nil {
		t.Error("Delete")
	}
	if len(s.Fields) != 5 {
		t.Errorf("%d fields after Delete", len(s.Fields))
	}

	// Set on a struct whose IDs do not ascend inserts before the first
	// larger ID.
	u := NewStruct(f(5, I32(1)), f(2, I32(1)))
	u.Set(3, I32(1))
	ids = ids[:0]
	for _, fl := range u.Fields {
		ids = append(ids, fl.ID)
	}
	if want := []int16{3, 5, 2}; !equalIDs(ids, want) {
		t.Errorf("IDs = %v, want %v", ids, want)
	}
}

func equalIDs(a, b []int16) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestAppendPanicsOnInvalidTree(t *testing.T) {
	t.Parallel()
	for name, s := range map[string]*Struct{
		"zero value":        NewStruct(f(1, Value{})),
		"bool 2":            NewStruct(f(1, Value{Type: TypeBool, Int: 2})),
		"i16 out of range":  NewStruct(f(1, Value{Type: TypeI16, Int: 1 << 15})),
		"i32 out of range":  NewStruct(f(1, Value{Type: TypeI32, Int: -1 << 40})),
		"byte out of range": NewStruct(f(1, Value{Type: TypeByte, Int: 200})),
		"mixed list":        NewStruct(f(1, Value{Type: TypeList, List: &List{Elem: TypeI32, Items: []Value{I64(1)}}})),
		"nil list":          NewStruct(f(1, Value{Type: TypeList})),
		"nil struct":        NewStruct(f(1, Value{Type: TypeStruct})),
		"map mismatch":      NewStruct(f(1, Value{Type: TypeMap, Map: &Map{Key: TypeI32, Val: TypeI32, Keys: []Value{I32(1)}}})),
		"map element type":  NewStruct(f(1, Value{Type: TypeMap, Map: &Map{Key: 2, Val: TypeI32, Keys: []Value{Bool(true)}, Vals: []Value{I32(1)}}})),
		"list element type": NewStruct(f(1, Value{Type: TypeList, List: &List{Elem: 13}})),
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil {
					t.Fatal("no panic")
				}
				if msg, _ := r.(string); !strings.HasPrefix(msg, "thrift: ") {
					t.Errorf("panic %v lacks the package prefix", r)
				}
			}()
			s.Append(nil)
		})
	}
}

func TestTypeString(t *testing.T) {
	t.Parallel()
	if TypeI32.String() != "i32" || TypeStruct.String() != "struct" || Type(13).String() != "Type(13)" || Type(2).String() != "Type(2)" {
		t.Error("Type.String")
	}
}
