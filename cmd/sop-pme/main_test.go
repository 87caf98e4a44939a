package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestDemoReadVerifyCheck(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "store")
	var out bytes.Buffer
	if err := demo(ctx, &out, []string{"-store", dir, "-rows", "5000"}); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"storage_id", "size", "unpadded size", "key_ref", "pme.DEK(REDACTED)", "conformant SOP-PME-1 object", "object verified: false", "object verified: true"} {
		if !strings.Contains(text, want) {
			t.Errorf("demo output lacks %q:\n%s", want, text)
		}
	}
	kek, _ := os.ReadFile(filepath.Join(dir, "kek"))
	if len(kek) != 32 || bytes.Contains(out.Bytes(), kek) {
		t.Fatal("the KEK is missing or was printed")
	}
	id := regexp.MustCompile(`storage_id\s+([0-9a-f]{64})`).FindStringSubmatch(text)
	if id == nil {
		t.Fatalf("no storage_id in:\n%s", text)
	}
	out.Reset()
	if err := read(ctx, &out, []string{"-store", dir, "-id", id[1], "-fields", "2,3", "-limit", "2"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "customer=customer-00001  amount=7") || !strings.Contains(out.String(), "5000 rows") {
		t.Fatalf("read output:\n%s", out.String())
	}
	out.Reset()
	if err := verifyCmd(ctx, &out, []string{"-store", dir, "-id", id[1]}); err != nil || !strings.Contains(out.String(), "every byte matches") {
		t.Fatalf("verify: %v\n%s", err, out.String())
	}
	// Damage the object: verify and check fail.
	data := filepath.Join(dir, id[1]+".data")
	b, _ := os.ReadFile(data)
	b[len(b)/2] ^= 1
	os.WriteFile(data, b, 0o600)
	if err := verifyCmd(ctx, &out, []string{"-store", dir, "-id", id[1]}); err == nil {
		t.Fatal("verify of a damaged object succeeded")
	}
	out.Reset()
	if err := check(ctx, &out, []string{"-store", dir, "-id", id[1]}); !errors.Is(err, errNotConformant) || !strings.Contains(out.String(), "storage_id") {
		t.Fatalf("check of a damaged object: %v\n%s", err, out.String())
	}
	if err := read(ctx, &out, []string{"-store", dir, "-id", "nope"}); err == nil {
		t.Fatal("read with a bad id succeeded")
	}
}
