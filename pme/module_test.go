package pme_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sovm/sop-pme/pme"
)

func TestSealOpen(t *testing.T) {
	t.Parallel()
	for _, size := range []int{16, 24, 32} {
		raw := bytes.Repeat([]byte{byte(size)}, size)
		k, err := pme.DEKFromBytes(raw)
		if err != nil {
			t.Fatal(err)
		}
		for _, pt := range [][]byte{nil, {}, []byte("x"), bytes.Repeat([]byte("page"), 10000)} {
			m, err := k.Seal(nil, pt)
			if err != nil {
				t.Fatal(err)
			}
			if len(m) != len(pt)+pme.Overhead || binary.LittleEndian.Uint32(m) != uint32(len(pt)+28) {
				t.Fatalf("module of %d bytes for %d bytes of plaintext", len(m), len(pt))
			}
			body, rest, err := pme.SplitModule(m)
			if err != nil || len(rest) != 0 {
				t.Fatal(err)
			}
			got, err := k.Open(nil, body)
			if err != nil || !bytes.Equal(got, pt) {
				t.Fatalf("Open: %v", err)
			}
		}
	}
	// Each seal draws a fresh nonce.
	k := pme.NewDEK()
	a, _ := k.Seal(nil, []byte("same"))
	b, _ := k.Seal(nil, []byte("same"))
	if bytes.Equal(a[4:16], b[4:16]) || bytes.Equal(a, b) {
		t.Fatal("two seals share a nonce")
	}
	if k.Sealed() != 2 {
		t.Fatalf("Sealed() = %d", k.Sealed())
	}
}

func TestOpenFailures(t *testing.T) {
	t.Parallel()
	k := pme.NewDEK()
	m, _ := k.Seal(nil, []byte("secret page"))
	body := m[4:]
	for i := range body {
		bad := bytes.Clone(body)
		bad[i] ^= 1
		if out, err := k.Open([]byte("dst"), bad); !errors.Is(err, pme.ErrAuth) || string(out) != "dst" {
			t.Fatalf("flip at %d: %v, %q", i, err, out)
		}
	}
	if _, err := pme.NewDEK().Open(nil, body); !errors.Is(err, pme.ErrAuth) {
		t.Fatalf("wrong key: %v", err)
	}
	if _, err := k.Open(nil, body[:27]); !errors.Is(err, pme.ErrModule) {
		t.Fatalf("short body: %v", err)
	}
	if _, err := (pme.DEK{}).Open(nil, body); !errors.Is(err, pme.ErrNoKey) {
		t.Fatalf("zero DEK: %v", err)
	}
	if _, err := (pme.DEK{}).Seal(nil, body); !errors.Is(err, pme.ErrNoKey) {
		t.Fatalf("zero DEK: %v", err)
	}
	for _, n := range []int{0, 1, 15, 33} {
		if _, err := pme.DEKFromBytes(make([]byte, n)); !errors.Is(err, pme.ErrKeySize) {
			t.Fatalf("%d-byte key: %v", n, err)
		}
	}
}

func TestSplitModule(t *testing.T) {
	t.Parallel()
	k := pme.NewDEK()
	m, _ := k.Seal(nil, []byte("abc"))
	for name, b := range map[string][]byte{
		"empty":      nil,
		"3 bytes":    m[:3],
		"too short":  binary.LittleEndian.AppendUint32(nil, 27),
		"truncated":  m[:len(m)-1],
		"huge claim": binary.LittleEndian.AppendUint32(nil, 0xFFFFFFFF),
	} {
		if _, _, err := pme.SplitModule(b); !errors.Is(err, pme.ErrModule) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// OpenModules opens back-to-back modules and releases nothing on a
	// failure in any of them.
	two := append(bytes.Clone(m), m...)
	out, err := k.OpenModules(nil, two)
	if err != nil || string(out) != "abcabc" {
		t.Fatalf("%q, %v", out, err)
	}
	two[len(two)-1] ^= 1
	out, err = k.OpenModules(make([]byte, 0, 64), two)
	if !errors.Is(err, pme.ErrAuth) || len(out) != 0 || bytes.Contains(out[:cap(out)], []byte("abc")) {
		t.Fatalf("%q, %v", out, err)
	}
}

// TestNonceLimit: a DEK refuses its 2^32+1st module (NIST SP 800-38D 8.3).
func TestNonceLimit(t *testing.T) {
	t.Parallel()
	k := pme.NewDEK()
	pme.SetSealed(k, pme.MaxModules-1)
	if _, err := k.Seal(nil, nil); err != nil {
		t.Fatalf("module 2^32: %v", err)
	}
	for range 3 {
		if _, err := k.Seal(nil, nil); !errors.Is(err, pme.ErrNonceLimit) {
			t.Fatalf("past 2^32: %v", err)
		}
	}
	// Copies of a DEK share its count.
	c := k
	if _, err := c.Seal(nil, nil); !errors.Is(err, pme.ErrNonceLimit) {
		t.Fatalf("copy: %v", err)
	}
}

func TestDEKNeverPrints(t *testing.T) {
	t.Parallel()
	k := pme.NewDEK()
	raw := k.Bytes()
	for _, f := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T"} {
		out := fmt.Sprintf(f, k) + fmt.Sprintf(f, struct{ K pme.DEK }{k})
		if strings.Contains(out, fmt.Sprintf("%x", raw)[:8]) || bytes.Contains([]byte(out), raw) {
			t.Errorf("%s printed %q", f, out)
		}
	}
	if _, err := json.Marshal(struct{ K pme.DEK }{k}); !errors.Is(err, pme.ErrNoMarshal) {
		t.Errorf("json.Marshal: %v", err)
	}
	if k.Len() != pme.DEKSize || !k.Equal(k) || k.Equal(pme.NewDEK()) {
		t.Fatal("Len/Equal")
	}
}

func TestFileCryptoMetaData(t *testing.T) {
	t.Parallel()
	ref := []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	b, err := pme.AppendFileCryptoMetaData(nil, ref)
	want := append([]byte{0x1c, 0x1c, 0x00, 0x00, 0x18, 0x10}, append(bytes.Clone(ref), 0x00)...)
	if err != nil || !bytes.Equal(b, want) {
		t.Fatalf("% x, %v", b, err)
	}
	if _, err := pme.AppendFileCryptoMetaData(nil, ref[:15]); !errors.Is(err, pme.ErrFormat) {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		in   []byte
		err  error
		meta []byte
	}{
		"sop":               {want, nil, ref},
		"duckdb":            {[]byte{0x1c, 0x1c, 0x00, 0x00, 0x00}, nil, nil},
		"supply false":      {[]byte{0x1c, 0x1c, 0x32, 0x00, 0x00, 0x00}, nil, nil},
		"supply true":       {[]byte{0x1c, 0x1c, 0x31, 0x00, 0x00, 0x00}, pme.ErrUnsupported, nil},
		"aad prefix":        {[]byte{0x1c, 0x1c, 0x18, 0x01, 0x61, 0x00, 0x00, 0x00}, pme.ErrUnsupported, nil},
		"aad file unique":   {[]byte{0x1c, 0x1c, 0x28, 0x01, 0x61, 0x00, 0x00, 0x00}, pme.ErrUnsupported, nil},
		"ctr":               {[]byte{0x1c, 0x2c, 0x00, 0x00, 0x00}, pme.ErrUnsupported, nil},
		"no algorithm":      {[]byte{0x28, 0x00, 0x00}, pme.ErrFormat, nil},
		"two union members": {[]byte{0x1c, 0x1c, 0x00, 0x1c, 0x00, 0x00, 0x00}, pme.ErrFormat, nil},
		"garbage":           {[]byte{0xff}, pme.ErrFormat, nil},
	} {
		cm, n, err := pme.ParseFileCryptoMetaData(tc.in)
		if !errors.Is(err, tc.err) || (err == nil && (n != len(tc.in) || !bytes.Equal(cm.KeyMetadata, tc.meta))) {
			t.Errorf("%s: %+v, %d, %v", name, cm, n, err)
		}
	}
}

func TestTrailer(t *testing.T) {
	t.Parallel()
	tr, _ := pme.AppendTrailer(nil, 1234)
	if n, err := pme.ParseTrailer(tr); err != nil || n != 1234 || string(tr[4:]) != "PARE" {
		t.Fatal(n, err)
	}
	if _, err := pme.ParseTrailer([]byte{1, 0, 0, 0, 'P', 'A', 'R', '1'}); !errors.Is(err, pme.ErrPlaintextFooter) {
		t.Fatal(err)
	}
	if _, err := pme.ParseTrailer([]byte{1, 0, 0, 0, 'P', 'A', 'R', 'X'}); !errors.Is(err, pme.ErrFormat) {
		t.Fatal(err)
	}
	if _, err := pme.ParseTrailer(tr[:7]); !errors.Is(err, pme.ErrFormat) {
		t.Fatal(err)
	}
	// The footer module must end the region: nothing may follow it.
	k := pme.NewDEK()
	cm, _ := pme.AppendFileCryptoMetaData(nil, make([]byte, 16))
	m, _ := k.Seal(nil, []byte("footer"))
	region := append(cm, m...)
	if _, err := pme.ParseFooterRegion(region); err != nil {
		t.Fatal(err)
	}
	if _, err := pme.ParseFooterRegion(append(region, 0)); !errors.Is(err, pme.ErrFormat) {
		t.Fatal(err)
	}
}
