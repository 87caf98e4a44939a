//go:build ignore

// gen writes the seed corpus of FuzzOpen: ring files written by this
// package under the all-zero KEK, and damaged variants of them.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sovm/sop-pme/keyring"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/storageid"
)

func main() {
	dir := filepath.Join("testdata", "fuzz", "FuzzOpen")
	os.MkdirAll(dir, 0o755)
	tmp, _ := os.MkdirTemp("", "keyring-gen")
	defer os.RemoveAll(tmp)
	kek, _ := keyring.KEKFromBytes(make([]byte, keyring.KEKSize))
	path := filepath.Join(tmp, "ring.json")
	r, err := keyring.Open(path, kek)
	if err != nil {
		panic(err)
	}
	empty, _ := os.ReadFile(path)
	for i := range 2 {
		r.Put(context.Background(), storageid.Sum([]byte(fmt.Sprint(i))), pme.NewDEK())
	}
	full, _ := os.ReadFile(path)
	seeds := map[string]string{
		"empty-ring": string(empty),
		"two-keys":   string(full),
		"truncated":  string(full[:len(full)/2]),
		"bad-id":     strings.Replace(string(full), "\"keys\": {\n    \"", "\"keys\": {\n    \"zz", 1),
		"not-json":   "PARE",
	}
	for name, s := range seeds {
		os.WriteFile(filepath.Join(dir, name), []byte(fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", s)), 0o644)
	}
}
