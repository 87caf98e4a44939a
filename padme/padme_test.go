package padme

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"math/big"
	"math/bits"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// refTarget is an independent reference for Padmé(l), written from the
// paper's definition with arbitrary-precision arithmetic and no math/bits, so
// that it cannot share an off-by-one or an overflow with Target. The result
// may exceed 2^64 − 1.
func refTarget(l uint64) *big.Int {
	L := new(big.Int).SetUint64(l)
	if l < 2 {
		return L
	}
	e := 0 // ⌊log2 l⌋
	for x := l; x > 1; x >>= 1 {
		e++
	}
	s := 1 // ⌊log2 e⌋ + 1
	for x := e; x > 1; x >>= 1 {
		s++
	}
	step := new(big.Int).Lsh(big.NewInt(1), uint(e-s)) // 2^lastBits
	// Round L up to a multiple of step.
	q, r := new(big.Int).QuoRem(L, step, new(big.Int))
	if r.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	return q.Mul(q, step)
}

// checkTarget compares Target(l) with refTarget(l), including the error for
// lengths whose target does not fit in a uint64.
func checkTarget(t *testing.T, l uint64) {
	t.Helper()
	want := refTarget(l)
	got, err := Target(l)
	if !want.IsUint64() {
		if !errors.Is(err, ErrTooLarge) {
			t.Fatalf("Target(%d) = %d, %v; want ErrTooLarge (Padmé = %v)", l, got, err, want)
		}
		if l <= MaxLength {
			t.Fatalf("Target(%d): target %v overflows but l <= MaxLength", l, want)
		}
		return
	}
	if err != nil || got != want.Uint64() {
		t.Fatalf("Target(%d) = %d, %v; want %v", l, got, err, want)
	}
}

// params returns E, S and lastBits of the Padmé definition for l ≥ 2.
func params(l uint64) (e, s, lastBits int) {
	e = bits.Len64(l) - 1
	s = bits.Len(uint(e))
	return e, s, e - s
}

func TestTargetVectors(t *testing.T) {
	t.Parallel()
	// Padmé(L) by the paper's formula (Nikitin et al., "Reducing Metadata
	// Leakage from Encrypted Files and Communication with PURBs", PoPETs
	// 2019(4)): E = ⌊log2 L⌋, S = ⌊log2 E⌋ + 1, mask = 2^(E−S) − 1,
	// Padmé(L) = (L + mask) &^ mask.
	vectors := []struct{ l, want uint64 }{
		{9, 10}, {11, 12}, {17, 18}, {33, 36}, {65, 72}, {67, 72}, {74, 80},
		{100, 104}, {129, 144}, {257, 272}, {1000, 1024}, {1025, 1088},
		{4097, 4352}, {10000, 10240}, {65537, 67584}, {100000, 100352},
		{1000000, 1015808}, {1048577, 1081344}, {1000000000, 1006632960},
		{1073741825, 1107296256},
	}
	for _, v := range vectors {
		got, err := Target(v.l)
		if err != nil || got != v.want {
			t.Errorf("Target(%d) = %d, %v; want %d", v.l, got, err, v.want)
		}
	}
	for k := range 64 {
		p := uint64(1) << k
		if got, err := Target(p); err != nil || got != p {
			t.Errorf("Target(2^%d) = %d, %v; want %d", k, got, err, p)
		}
	}
}

func TestTargetGolden(t *testing.T) {
	t.Parallel()
	f, err := os.Open("testdata/padme-vectors.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Fields(text)
		if len(fields) != 2 {
			t.Fatalf("line %d: want 2 fields, got %q", line, text)
		}
		l, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			t.Fatalf("line %d: %v", line, err)
		}
		n++
		got, err := Target(l)
		if fields[1] == "too-large" {
			if !errors.Is(err, ErrTooLarge) {
				t.Errorf("line %d: Target(%d) = %d, %v; want ErrTooLarge", line, l, got, err)
			}
			continue
		}
		want, err2 := strconv.ParseUint(fields[1], 10, 64)
		if err2 != nil {
			t.Fatalf("line %d: %v", line, err2)
		}
		if err != nil || got != want {
			t.Errorf("line %d: Target(%d) = %d, %v; want %d", line, l, got, err, want)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	// The file holds 40 vectors; a truncated or emptied file must not pass.
	if n < 40 {
		t.Fatalf("read %d vectors from testdata/padme-vectors.txt, want at least 40", n)
	}
}

func TestTargetLimits(t *testing.T) {
	t.Parallel()
	if MaxLength != math.MaxUint64-(1<<57-1) {
		t.Fatalf("MaxLength = %d, want 2^64 - 2^57", MaxLength)
	}
	// MaxLength is the largest length whose target fits.
	if !refTarget(MaxLength).IsUint64() || refTarget(MaxLength+1).IsUint64() {
		t.Fatalf("MaxLength = %d is not the largest length with a uint64 target", MaxLength)
	}
	if got, err := Target(MaxLength); err != nil || got != MaxLength {
		t.Errorf("Target(MaxLength) = %d, %v; want %d", got, err, MaxLength)
	}
	if got, err := Target(MaxLength - 1); err != nil || got != MaxLength {
		t.Errorf("Target(MaxLength-1) = %d, %v; want %d", got, err, MaxLength)
	}
	for _, l := range []uint64{MaxLength + 1, MaxLength + 2, math.MaxUint64 - 1, math.MaxUint64} {
		got, err := Target(l)
		if !errors.Is(err, ErrTooLarge) || got != 0 {
			t.Errorf("Target(%d) = %d, %v; want 0, ErrTooLarge", l, got, err)
		}
	}
	for d := range uint64(64) {
		checkTarget(t, MaxLength-d)
		checkTarget(t, MaxLength+1+d)
		checkTarget(t, math.MaxUint64-d)
	}
	// The previous multiple of 2^57 is also reachable from just above.
	if got, err := Target(MaxLength - 1<<57 + 1); err != nil || got != MaxLength {
		t.Errorf("Target(MaxLength-2^57+1) = %d, %v; want %d", got, err, MaxLength)
	}
}

func TestTargetAroundPowersOfTwo(t *testing.T) {
	t.Parallel()
	for k := range 64 {
		p := uint64(1) << k
		for d := uint64(0); d <= 4; d++ {
			checkTarget(t, p+d)
			checkTarget(t, p-d)
		}
		if k >= 2 {
			// One above 2^k rounds up to the next multiple of 2^lastBits.
			_, _, lastBits := params(p)
			if got, _ := Target(p + 1); got != p+1<<lastBits {
				t.Errorf("Target(2^%d+1) = %d, want 2^%d+2^%d", k, got, k, lastBits)
			}
		}
	}
}

func TestTargetExhaustiveSmall(t *testing.T) {
	t.Parallel()
	const limit = 1 << 16
	prev := uint64(0)
	for l := range uint64(limit + 1) {
		checkTarget(t, l)
		got, _ := Target(l)
		if got < prev {
			t.Fatalf("Target(%d) = %d < Target(%d) = %d", l, got, l-1, prev)
		}
		prev = got
	}
}

// randomLength draws a length whose bit length is uniform in [0, 64], so
// that every magnitude is exercised, not just lengths near 2^64.
func randomLength(r *rand.Rand) uint64 {
	n := r.IntN(65)
	if n == 0 {
		return 0
	}
	return r.Uint64()>>(64-n) | 1<<(n-1)
}

func TestTargetProperties(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(0x5eed, 0x9ad3e))
	for range 20000 {
		l := randomLength(r)
		if l > MaxLength {
			checkTarget(t, l)
			continue
		}
		got, err := Target(l)
		if err != nil {
			t.Fatalf("Target(%d): %v", l, err)
		}
		if want := refTarget(l); got != want.Uint64() {
			t.Fatalf("Target(%d) = %d, want %v", l, got, want)
		}
		if got < l {
			t.Fatalf("Target(%d) = %d < L", l, got)
		}
		if again, err := Target(got); err != nil || again != got {
			t.Fatalf("Target(Target(%d)) = %d, %v; want %d", l, again, err, got)
		}
		if l < 2 {
			if got != l {
				t.Fatalf("Target(%d) = %d", l, got)
			}
			continue
		}
		e, s, lastBits := params(l)
		// Overhead: (T − L)/L < 2^−S, that is (T − L)·2^S < L. T − L < 2^57
		// and S ≤ 6, so the product cannot overflow.
		if (got-l)<<s >= l {
			t.Fatalf("Target(%d) = %d: overhead %d is not below L/2^%d", l, got, got-l, s)
		}
		// The low lastBits bits are zero.
		if got&(1<<lastBits-1) != 0 {
			t.Fatalf("Target(%d) = %#x: low %d bits not zero", l, got, lastBits)
		}
		// A floating-point number with exponent E or E+1 and a mantissa of at
		// most S bits below the leading 1: at most S+1 significant bits.
		if exp := bits.Len64(got) - 1; exp != e && exp != e+1 {
			t.Fatalf("Target(%d) = %d has exponent %d, want %d or %d", l, got, exp, e, e+1)
		}
		if sig := bits.Len64(got) - bits.TrailingZeros64(got); sig > s+1 {
			t.Fatalf("Target(%d) = %#x has %d significant bits, want at most S+1 = %d", l, got, sig, s+1)
		}
	}
}

func TestTargetMonotone(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(0x5eed, 0x307070))
	for range 20000 {
		l1, l2 := randomLength(r), randomLength(r)
		if r.IntN(2) == 0 {
			// Nearby pairs, where a violation would actually show.
			l2 = l1 + uint64(r.IntN(1<<10))
			if l2 < l1 {
				continue
			}
		}
		if l1 > l2 {
			l1, l2 = l2, l1
		}
		if l2 > MaxLength {
			continue
		}
		t1, err1 := Target(l1)
		t2, err2 := Target(l2)
		if err1 != nil || err2 != nil || t1 > t2 {
			t.Fatalf("Target(%d) = %d, %v; Target(%d) = %d, %v: not monotone", l1, t1, err1, l2, t2, err2)
		}
	}
}

// growthByValue is an independent reference for the growth of a value of v
// bytes: the length of its Thrift compact encoding (uvarint length, bytes)
// minus that of an empty one.
func growthByValue(v uint64) uint64 {
	return v + uint64(len(binary.AppendUvarint(nil, v))) - 1
}

// reachableByValue reports whether some value length alone grows the entry
// by exactly n. A value of v bytes grows it by between v and v+9, so only
// v in [n−9, n] can reach n.
func reachableByValue(n uint64) bool {
	for d := range uint64(10) {
		if d <= n && growthByValue(n-d) == n {
			return true
		}
	}
	return false
}

func checkSolve(t *testing.T, n uint64) Pad {
	t.Helper()
	p := Solve(n)
	if got := p.Growth(); got != n {
		t.Fatalf("Solve(%d) = %+v with Growth %d", n, p, got)
	}
	want := 0
	if !reachableByValue(n) {
		want = 1
	}
	if p.KeyTail != want {
		t.Fatalf("Solve(%d) = %+v, want KeyTail %d", n, p, want)
	}
	if !ValidKey(p.Key()) {
		t.Fatalf("Solve(%d).Key() = %q is not a valid pad key", n, p.Key())
	}
	return p
}

func TestSolveExhaustive(t *testing.T) {
	t.Parallel()
	var unreachable []uint64
	for n := range uint64(70001) {
		if checkSolve(t, n).KeyTail == 1 {
			unreachable = append(unreachable, n)
		}
	}
	if want := []uint64{128, 16385}; !slices.Equal(unreachable, want) {
		t.Fatalf("KeyTail 1 at %v in [0, 70000], want %v", unreachable, want)
	}
}

// stepDeltas are the deltas that no value length reaches: one just above each
// step of the value's length prefix, 2^(7w) + w − 1 for w = 1..9.
// TestSolveSteps recomputes them by brute force rather than trusting this list.
var stepDeltas = []uint64{
	128, 16385, 2097154, 268435459, 34359738372, 4398046511109,
	562949953421318, 72057594037927943, 9223372036854775816,
}

func TestSolveSteps(t *testing.T) {
	t.Parallel()
	for w := 1; w <= 9; w++ {
		// The longest value with a w-byte prefix and the shortest with w+1.
		v := uint64(1)<<(7*w) - 1
		lo, hi := growthByValue(v), growthByValue(v+1)
		if hi != lo+2 {
			t.Fatalf("w=%d: growth jumps from %d to %d, want a gap of one", w, lo, hi)
		}
		if gap := lo + 1; gap != stepDeltas[w-1] {
			t.Fatalf("w=%d: unreachable delta %d, want %d", w, gap, stepDeltas[w-1])
		}
	}
	var around []uint64
	for _, s := range stepDeltas {
		for d := uint64(0); d <= 6; d++ {
			around = append(around, s-d, s+d)
		}
	}
	// The ranges named in the brief, and the top of the uint64 range.
	for _, r := range [][2]uint64{
		{125, 131}, {16380, 16390}, {2097148, 2097160}, {268435452, 268435465},
		{math.MaxUint64 - 40, math.MaxUint64},
	} {
		for n := r[0]; ; n++ {
			around = append(around, n)
			if n == r[1] {
				break
			}
		}
	}
	for _, n := range around {
		p := checkSolve(t, n)
		if (p.KeyTail == 1) != slices.Contains(stepDeltas, n) {
			t.Fatalf("Solve(%d) = %+v: KeyTail 1 must occur exactly at the step deltas", n, p)
		}
	}
	if p := Solve(math.MaxUint64); p != (Pad{ValueLen: math.MaxUint64 - 9}) {
		t.Fatalf("Solve(MaxUint64) = %+v", p)
	}
}

func TestSolveRandom(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(0x5eed, 0x501e))
	for range 20000 {
		checkSolve(t, randomLength(r))
	}
}

func TestUvarintLen(t *testing.T) {
	t.Parallel()
	check := func(v uint64) {
		if got, want := UvarintLen(v), len(binary.AppendUvarint(nil, v)); got != want {
			t.Fatalf("UvarintLen(%d) = %d, want %d", v, got, want)
		}
	}
	for k := range 64 {
		p := uint64(1) << k
		check(p - 1)
		check(p)
		check(p + 1)
	}
	check(math.MaxUint64)
	for v := range uint64(1 << 15) {
		check(v)
	}
}

// A tiny Thrift compact-protocol encoder for KeyValue {1: key string,
// 2: value binary}, independent of the package, to check that Growth counts
// the bytes a writer actually produces.
const (
	fieldHeader = 0x18 // field-id delta 1, type 8 (binary)
	fieldStop   = 0x00
)

// writeKeyValue writes the compact encoding of a KeyValue whose value is
// valueLen zero bytes, streaming the value so that multi-hundred-megabyte
// values need no buffer of that size.
func writeKeyValue(w io.Writer, key string, valueLen uint64) error {
	var hdr []byte
	hdr = append(hdr, fieldHeader)
	hdr = binary.AppendUvarint(hdr, uint64(len(key)))
	hdr = append(hdr, key...)
	hdr = append(hdr, fieldHeader)
	hdr = binary.AppendUvarint(hdr, valueLen)
	if _, err := w.Write(hdr); err != nil {
		return err
	}
	zeros := make([]byte, 64<<10)
	for valueLen > 0 {
		n := min(valueLen, uint64(len(zeros)))
		if _, err := w.Write(zeros[:n]); err != nil {
			return err
		}
		valueLen -= n
	}
	_, err := w.Write([]byte{fieldStop})
	return err
}

type countingWriter struct{ n uint64 }

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n += uint64(len(p))
	return len(p), nil
}

func encodedLen(t *testing.T, p Pad) uint64 {
	t.Helper()
	var c countingWriter
	if err := writeKeyValue(&c, p.Key(), p.ValueLen); err != nil {
		t.Fatal(err)
	}
	return c.n
}

// checkEncoding encodes p into buf, checks the bytes field by field, and
// returns the encoded length.
func checkEncoding(t *testing.T, buf *bytes.Buffer, p Pad) int {
	t.Helper()
	buf.Reset()
	if err := writeKeyValue(buf, p.Key(), p.ValueLen); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	readBinary := func() []byte {
		t.Helper()
		if len(b) == 0 || b[0] != fieldHeader {
			t.Fatalf("%+v: want field header %#x", p, fieldHeader)
		}
		n, m := binary.Uvarint(b[1:])
		if m <= 0 || uint64(len(b)-1-m) < n {
			t.Fatalf("%+v: bad length prefix", p)
		}
		field := b[1+m : 1+m+int(n)]
		b = b[1+m+int(n):]
		return field
	}
	if key := readBinary(); string(key) != p.Key() || !ValidKey(string(key)) {
		t.Fatalf("%+v: key %q", p, key)
	}
	if value := readBinary(); uint64(len(value)) != p.ValueLen || bytes.Count(value, []byte{0}) != len(value) {
		t.Fatalf("%+v: value is not %d zero bytes", p, p.ValueLen)
	}
	if !bytes.Equal(b, []byte{fieldStop}) {
		t.Fatalf("%+v: trailing bytes %x after the value, want stop", p, b)
	}
	return buf.Len()
}

func TestSolveEncoding(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	empty := checkEncoding(t, &buf, Pad{})
	if want := 1 + 1 + len(PadKey) + 1 + 1 + 1; empty != want {
		t.Fatalf("empty entry encodes to %d bytes, want %d", empty, want)
	}
	check := func(n uint64) {
		t.Helper()
		if got := checkEncoding(t, &buf, Solve(n)) - empty; uint64(got) != n {
			t.Fatalf("Solve(%d) = %+v encodes %d bytes longer than the empty entry", n, Solve(n), got)
		}
	}
	for n := range uint64(20001) {
		check(n)
	}
	for _, s := range stepDeltas[:3] {
		for d := uint64(0); d <= 3; d++ {
			check(s - d)
			check(s + d)
		}
	}
	// Around 268 435 459 the values are 256 MiB: count the bytes rather
	// than hold them.
	for _, n := range []uint64{268435455, 268435458, 268435459, 268435460} {
		if got := encodedLen(t, Solve(n)) - uint64(empty); got != n {
			t.Fatalf("Solve(%d) = %+v encodes %d bytes longer than the empty entry", n, Solve(n), got)
		}
	}
}

func TestGrowthLongKeys(t *testing.T) {
	t.Parallel()
	// Past 112 tail characters the key reaches 128 bytes and its own length
	// prefix grows; Growth must still count the bytes exactly.
	var buf bytes.Buffer
	empty := checkEncoding(t, &buf, Pad{})
	for k := range 300 {
		for _, v := range []uint64{0, 1, 127, 128, 16383, 16384} {
			p := Pad{ValueLen: v, KeyTail: k}
			if got := checkEncoding(t, &buf, p) - empty; uint64(got) != p.Growth() {
				t.Fatalf("%+v: encodes %d bytes longer than the empty entry, Growth says %d", p, got, p.Growth())
			}
		}
	}
}

func TestNegativeKeyTailPanics(t *testing.T) {
	t.Parallel()
	for name, f := range map[string]func(Pad){
		"Key":    func(p Pad) { _ = p.Key() },
		"Growth": func(p Pad) { _ = p.Growth() },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s with KeyTail -1 did not panic", name)
				}
			}()
			f(Pad{KeyTail: -1})
		}()
	}
}

func TestKeys(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		key             string
		reserved, valid bool
	}{
		{"sovm:sop-pad-v1", true, true},
		{"sovm:sop-pad-v1-", true, true},
		{"sovm:sop-pad-v1---", true, true},
		{"sovm:sop-pad-v1x", true, false},
		{"sovm:sop-pad-v1-x", true, false},
		{"sovm:sop-pad-v1--_", true, false},
		{"sovm:sop-pad-v1 ", true, false},
		{"sovm:sop-pad-v12", true, false},
		{"sovm:sop-pad-v1-\x00", true, false},
		{"sovm:sop-pad-v", false, false},
		{"SOVM:SOP-PAD-V1", false, false},
		{" sovm:sop-pad-v1", false, false},
		{"-sovm:sop-pad-v1", false, false},
		{"", false, false},
		{"org.apache.spark.version", false, false},
	} {
		if got := IsReserved(tc.key); got != tc.reserved {
			t.Errorf("IsReserved(%q) = %v, want %v", tc.key, got, tc.reserved)
		}
		if got := ValidKey(tc.key); got != tc.valid {
			t.Errorf("ValidKey(%q) = %v, want %v", tc.key, got, tc.valid)
		}
		if tc.valid && !tc.reserved {
			t.Errorf("%q: a valid key must be reserved", tc.key)
		}
	}
	for k := range 5 {
		key := Pad{KeyTail: k}.Key()
		if key != PadKey+strings.Repeat("-", k) || !ValidKey(key) || !IsReserved(key) {
			t.Errorf("Pad{KeyTail: %d}.Key() = %q", k, key)
		}
	}
}

func BenchmarkTarget(b *testing.B) {
	l := uint64(1000000)
	for b.Loop() {
		l, _ = Target(l + 1)
		if l > MaxLength-1 {
			l = 0
		}
	}
}

func BenchmarkSolve(b *testing.B) {
	n := uint64(0)
	for b.Loop() {
		_ = Solve(n)
		n += 7919
	}
}
