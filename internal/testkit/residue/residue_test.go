package residue

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestFiles(t *testing.T) {
	dir := t.TempDir()
	data := make([]byte, 1000)
	rand.Read(data)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	other := make([]byte, 4096)
	rand.Read(other)
	write("clean", other)
	mid := write("sub/mid", append(append(slices.Clone(other[:100]), data[128:192]...), other[100:]...))
	tail := write("tail", data[len(data)-Piece:])
	write("short", data[:Piece-1]) // less than a piece: not found
	hits, err := Files(dir, data)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(hits)
	if want := []string{mid, tail}; !slices.Equal(hits, want) {
		t.Errorf("Files: %v, want %v", hits, want)
	}
	if _, err := Files(dir, data[:Piece-1]); err == nil {
		t.Error("Files of fewer bytes than a piece: no error")
	}
}
