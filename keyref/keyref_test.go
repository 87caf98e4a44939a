package keyref

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

var (
	_ encoding.TextMarshaler   = Ref{}
	_ encoding.TextAppender    = Ref{}
	_ encoding.TextUnmarshaler = (*Ref)(nil)
	_ fmt.Stringer             = Ref{}
)

func TestSize(t *testing.T) {
	t.Parallel()
	var r Ref
	if len(r) != 16 || Size != 16 {
		t.Fatalf("len(Ref) = %d, Size = %d, want 16", len(r), Size)
	}
	if s := New().String(); len(s) != 32 {
		t.Fatalf("String() = %q, %d characters, want 32", s, len(s))
	}
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	for range 1000 {
		r := New()
		s := r.String()
		if s != strings.ToLower(s) {
			t.Fatalf("String() = %q is not lowercase", s)
		}
		got, err := Parse(s)
		if err != nil || got != r {
			t.Fatalf("Parse(%q) = %v, %v; want %v", s, got, err, r)
		}
		text, err := r.MarshalText()
		if err != nil || string(text) != s {
			t.Fatalf("MarshalText() = %q, %v; want %q", text, err, s)
		}
		appended, err := r.AppendText([]byte("x"))
		if err != nil || string(appended) != "x"+s {
			t.Fatalf("AppendText() = %q, %v", appended, err)
		}
		var u Ref
		if err := u.UnmarshalText(text); err != nil || u != r {
			t.Fatalf("UnmarshalText(%q) = %v, %v; want %v", text, u, err, r)
		}
	}
}

func TestKnownValue(t *testing.T) {
	t.Parallel()
	r := Ref{0x00, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x10, 0x32, 0x54, 0x76, 0x98, 0xba, 0xff}
	const s = "000123456789abcdef1032547698baff"
	if got := r.String(); got != s {
		t.Fatalf("String() = %q, want %q", got, s)
	}
	if got, err := Parse(s); err != nil || got != r {
		t.Fatalf("Parse(%q) = %v, %v; want %v", s, got, err, r)
	}
	b, err := json.Marshal(r)
	if err != nil || string(b) != `"`+s+`"` {
		t.Fatalf("json.Marshal = %s, %v", b, err)
	}
	var u Ref
	if err := json.Unmarshal(b, &u); err != nil || u != r {
		t.Fatalf("json.Unmarshal(%s) = %v, %v", b, u, err)
	}
}

func TestDistinct(t *testing.T) {
	t.Parallel()
	const n = 10000
	seen := make(map[Ref]struct{}, n)
	for range n {
		r := New()
		if r.IsZero() {
			t.Fatal("New returned the zero Ref")
		}
		if _, dup := seen[r]; dup {
			t.Fatalf("New returned %v twice", r)
		}
		seen[r] = struct{}{}
	}
}

// TestUniformity is a crude check that every bit of a Ref varies: each of
// the 128 bits must be set in 40–60 % of 10 000 refs. For a uniform source
// the count is 5 000 ± 50 (one standard deviation), so a failure means a
// constant, structured or biased generator, not bad luck.
func TestUniformity(t *testing.T) {
	t.Parallel()
	const n = 10000
	var counts [Size * 8]int
	for range n {
		r := New()
		for i := range counts {
			if r[i/8]>>(i%8)&1 == 1 {
				counts[i]++
			}
		}
	}
	for i, c := range counts {
		if c < n*40/100 || c > n*60/100 {
			t.Errorf("bit %d set in %d of %d refs, want 40-60 %%", i, c, n)
		}
	}
}

func TestIsZero(t *testing.T) {
	t.Parallel()
	if !(Ref{}).IsZero() {
		t.Error("Ref{}.IsZero() = false")
	}
	r := Ref{Size - 1: 1}
	if r.IsZero() {
		t.Errorf("%v.IsZero() = true", r)
	}
	if r, err := Parse(strings.Repeat("0", 32)); err != nil || !r.IsZero() {
		t.Errorf("Parse(zeros) = %v, %v", r, err)
	}
}

// TestNotRandom: a key_ref of 16 zero bytes or of printable ASCII (a name
// such as "health-key-2026!") is flagged; drawn ones are not, and New never
// returns a flagged one.
func TestNotRandom(t *testing.T) {
	t.Parallel()
	for _, r := range []Ref{{}, Ref([]byte("health-key-2026!")), Ref([]byte("                ")), Ref([]byte("~~~~~~~~~~~~~~~~"))} {
		if r.NotRandom() == "" {
			t.Errorf("%q is not flagged", r[:])
		}
	}
	for _, r := range []Ref{{Size - 1: 1}, Ref([]byte("health-key-2026\x00")), Ref([]byte("health-key-2026\x7f")), Ref([]byte("health-key-2026\x80"))} {
		if why := r.NotRandom(); why != "" {
			t.Errorf("%q is flagged: %s", r[:], why)
		}
	}
	for range 10000 {
		if r := New(); r.NotRandom() != "" {
			t.Fatalf("New() = %v: %s", r, r.NotRandom())
		}
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	valid := "000123456789abcdef1032547698baff"
	for _, s := range []string{
		"",
		"0",
		valid[:31],
		valid + "0",
		valid + "00",
		valid[:30],
		strings.ToUpper(valid),
		"000123456789ABCDEF1032547698baff",
		"000123456789abcdef1032547698baf" + "F",
		"000123456789abcdef1032547698bafg",
		"g00123456789abcdef1032547698baff",
		"0x0123456789abcdef1032547698baff",
		" 00123456789abcdef1032547698baff",
		"000123456789abcdef1032547698baf ",
		"000123456789abcd-f1032547698baff",
		"00012345-6789-abcd-ef10-32547698baff",
		"000123456789abcdef1032547698baf\x00",
		"000123456789abcdef1032547698ba\xc3\xbf",
		"AAECAwQFBgcICQoLDA0ODw==",
		strings.Repeat("z", 32),
	} {
		r, err := Parse(s)
		if !errors.Is(err, ErrSyntax) || !r.IsZero() {
			t.Errorf("Parse(%q) = %v, %v; want zero Ref and ErrSyntax", s, r, err)
		}
		u := Ref{1}
		if err := u.UnmarshalText([]byte(s)); !errors.Is(err, ErrSyntax) || u != (Ref{1}) {
			t.Errorf("UnmarshalText(%q) = %v, modified Ref to %v", s, err, u)
		}
	}
	if _, err := Parse(valid); err != nil {
		t.Fatalf("Parse(%q): %v", valid, err)
	}
}

func BenchmarkNew(b *testing.B) {
	for b.Loop() {
		_ = New()
	}
}
