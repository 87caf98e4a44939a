//go:build ignore

// gen writes the seed corpus of FuzzOpen: ring files written by this
// package under the all-zero KEK (empty, two DEKs, a hundred DEKs, so that
// the DEK bucket spans branch and leaf pages), and damaged variants of them.
// The seeds of FuzzImportV1 are version-1 JSON rings, written by the
// version-1 code and kept as they were.
//
//	go run testdata/gen.go
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sovm/sop-pme/keyring"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/storageid"
)

func main() {
	ctx := context.Background()
	dir := filepath.Join("testdata", "fuzz", "FuzzOpen")
	os.MkdirAll(dir, 0o755)
	tmp, _ := os.MkdirTemp("", "keyring-gen")
	defer os.RemoveAll(tmp)
	kek, _ := keyring.KEKFromBytes(make([]byte, keyring.KEKSize))
	ring := func(name string, n int) []byte {
		path := filepath.Join(tmp, name)
		r, err := keyring.Open(ctx, path, kek, keyring.WithCreate())
		if err != nil {
			panic(err)
		}
		var batch []keyring.Entry
		for i := range n {
			batch = append(batch, keyring.Entry{ID: storageid.Sum([]byte(fmt.Sprint(i))), DEK: pme.NewDEK()})
		}
		if err := r.PutBatch(ctx, batch); err != nil {
			panic(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			panic(err)
		}
		return b
	}
	empty, two, hundred := ring("empty", 0), ring("two", 2), ring("hundred", 100)
	seeds := map[string][]byte{
		"empty-ring":   empty,
		"two-keys":     two,
		"hundred-keys": hundred,
		"truncated":    two[:len(two)/2],
		"json-v1":      []byte(`{"format":"sop-pme-keyring-v1","check":"","keys":{}}`),
	}
	for name, s := range seeds {
		os.WriteFile(filepath.Join(dir, name), []byte(fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", s)), 0o644)
	}
}
