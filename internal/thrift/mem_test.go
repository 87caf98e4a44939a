package thrift

import (
	"runtime"
	"testing"
)

// worstCases are inputs that pack the most values into the fewest bytes.
func worstCases(n int) map[string][]byte {
	list := func(header byte, elem []byte) []byte {
		b := []byte{0x19, 0xf0 | header}
		b = appendUvarint(b, uint64(n))
		for range n {
			b = append(b, elem...)
		}
		return append(b, 0)
	}
	bools := []byte{}
	for range min(n, 32767) {
		bools = append(bools, 0x11)
	}
	bools = append(bools, 0)
	m := []byte{0x1b}
	m = appendUvarint(m, uint64(n))
	m = append(m, 0xcc)
	for range n {
		m = append(m, 0, 0)
	}
	m = append(m, 0)
	return map[string][]byte{
		"empty structs":  list(byte(TypeStruct), []byte{0}),
		"empty lists":    list(byte(TypeList), []byte{0x05}),
		"bools":          list(byte(TypeBool), []byte{1}),
		"bool fields":    bools,
		"struct map":     m,
		"one-item lists": list(byte(TypeList), []byte{0x13, 0x00}),
	}
}

// TestMemoryBound checks the bounds the package doc gives, on inputs made of
// the smallest possible values: the tree keeps at most 128 bytes per input
// byte alive, and decoding allocates at most 512 bytes per input byte in
// total.
func TestMemoryBound(t *testing.T) {
	for name, in := range worstCases(50000) {
		var before, after, kept runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		s, _, err := Decode(in, Limits{})
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		runtime.GC()
		runtime.ReadMemStats(&kept)
		runtime.KeepAlive(s)
		total := float64(after.TotalAlloc-before.TotalAlloc) / float64(len(in))
		live := (float64(kept.HeapAlloc) - float64(before.HeapAlloc)) / float64(len(in))
		t.Logf("%-15s %7d bytes in; per input byte: %5.1f allocated, %5.1f kept", name, len(in), total, live)
		if total > 512 || live > 128 {
			t.Errorf("%s: %.1f bytes allocated, %.1f kept per input byte", name, total, live)
		}
	}
}

// TestViewMemoryBound checks the bounds DecodeView documents on the same
// inputs: the View keeps 16 bytes per value (at most one per input byte),
// and decoding allocates at most 24 per input byte in all, each plus 64 KiB.
func TestViewMemoryBound(t *testing.T) {
	for name, in := range worstCases(50000) {
		var before, after, kept runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		v, err := DecodeView(in, Limits{})
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		runtime.GC()
		runtime.ReadMemStats(&kept)
		runtime.KeepAlive(v)
		total := float64(after.TotalAlloc - before.TotalAlloc)
		live := float64(kept.HeapAlloc) - float64(before.HeapAlloc)
		t.Logf("%-15s %7d bytes in; per input byte: %5.1f allocated, %5.1f kept", name, len(in), total/float64(len(in)), live/float64(len(in)))
		if total > 24*float64(len(in))+64<<10 || live > 16*float64(len(in))+64<<10 {
			t.Errorf("%s: %.0f bytes allocated, %.0f kept", name, total, live)
		}
	}
}
