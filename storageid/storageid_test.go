package storageid_test

import (
	"bytes"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sovm/sop-pme/storageid"
)

// TestOfficialVectors checks Sum and SumReader against the BLAKE3 team's
// test vectors (input: bytes 0, 1, ..., 250, 0, 1, ... of each length; the
// storage_id is the first 32 bytes of the extended hash).
func TestOfficialVectors(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("testdata/blake3-vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Cases []struct {
			InputLen int    `json:"input_len"`
			Hash     string `json:"hash"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Cases) < 20 {
		t.Fatalf("only %d vectors", len(v.Cases))
	}
	for _, c := range v.Cases {
		in := make([]byte, c.InputLen)
		for i := range in {
			in[i] = byte(i % 251)
		}
		want := c.Hash[:64]
		if got := storageid.Sum(in).String(); got != want {
			t.Errorf("Sum(len %d) = %s, want %s", c.InputLen, got, want)
		}
		id, n, err := storageid.SumReader(bytes.NewReader(in))
		if err != nil || n != int64(c.InputLen) || id.String() != want {
			t.Errorf("SumReader(len %d) = %s, %d, %v", c.InputLen, id, n, err)
		}
	}
}

// TestEmptyBlob pins the iroh-blobs hash of the empty blob.
func TestEmptyBlob(t *testing.T) {
	t.Parallel()
	if got := storageid.Sum(nil).String(); got != "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262" {
		t.Fatal(got)
	}
}

// TestB3sum cross-checks against Debian's b3sum, an independent
// implementation, on generated files around the chunk and group sizes.
func TestB3sum(t *testing.T) {
	t.Parallel()
	b3sum, err := exec.LookPath("b3sum")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("b3sum is not installed (Debian package b3sum)")
		}
		t.Skip("not under CI: b3sum not installed")
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(11, 12))
	var files []string
	want := map[string]storageid.ID{}
	for _, n := range []int{0, 1, 1023, 1024, 1025, 16383, 16384, 16385, 65536, 1<<20 + 7, 3 << 20} {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		p := filepath.Join(dir, fmt.Sprintf("f%d", n))
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
		want[p] = storageid.Sum(b)
	}
	out, err := exec.Command(b3sum, files...).Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(files) {
		t.Fatalf("b3sum printed %d lines for %d files", len(lines), len(files))
	}
	for _, l := range lines {
		hash, path, ok := strings.Cut(l, "  ")
		if !ok {
			t.Fatalf("b3sum line %q", l)
		}
		if want[path].String() != hash {
			t.Errorf("%s: b3sum %s, storageid %s", path, hash, want[path])
		}
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	id := storageid.Sum([]byte("hello"))
	for _, s := range []string{id.String(), strings.ToUpper(id.String())} {
		got, err := storageid.Parse(s)
		if err != nil || got != id {
			t.Errorf("Parse(%q) = %v, %v", s, got, err)
		}
	}
	// The 52-character base32 form iroh-blobs 0.35 printed.
	b32 := strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(id[:]))
	if len(b32) != 52 {
		t.Fatalf("base32 form has %d characters", len(b32))
	}
	for _, s := range []string{b32, strings.ToUpper(b32)} {
		got, err := storageid.Parse(s)
		if err != nil || got != id {
			t.Errorf("Parse(%q) = %v, %v", s, got, err)
		}
	}
	// The last base32 character carries 4 unused bits: a non-zero one is
	// another spelling of the same bytes, and refused.
	last := b32[51]
	alt := strings.IndexByte("abcdefghijklmnopqrstuvwxyz234567", last) ^ 1
	bad := b32[:51] + string("abcdefghijklmnopqrstuvwxyz234567"[alt])
	for _, s := range []string{"", "xyz", id.String()[:63], id.String() + "0", "g" + id.String()[1:], bad, b32[:51] + "!"} {
		if _, err := storageid.Parse(s); !errors.Is(err, storageid.ErrSyntax) {
			t.Errorf("Parse(%q) = %v, want ErrSyntax", s, err)
		}
	}
	var u storageid.ID
	if err := u.UnmarshalText([]byte(id.String())); err != nil || u != id {
		t.Fatal(err)
	}
	if txt, _ := id.MarshalText(); string(txt) != id.String() {
		t.Fatal(string(txt))
	}
}
