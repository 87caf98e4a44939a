package seal_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sovm/sop-pme/internal/seal"
	"github.com/sovm/sop-pme/pme"
)

// seedFiles returns the seed corpus files in dir, and fails if there are
// none.
func seedFiles(f *testing.F, dir string) []string {
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(files) == 0 {
		f.Fatalf("no seed corpus in %s (go run testdata/gen.go there)", dir)
	}
	return files
}

// FuzzStripForReading: on every footer the reader opens, what
// pme.Footer.StripForReading leaves of the View is what the same rules
// leave of the editable tree (StripTree). Its seeds are pme's FuzzFooter
// corpus: real footers, stripped and truncated.
func FuzzStripForReading(f *testing.F) {
	for _, name := range seedFiles(f, filepath.Join("..", "..", "pme", "testdata", "fuzz", "FuzzFooter")) {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		// go test fuzz v1, then one []byte("...") line.
		_, arg, _ := strings.Cut(string(b), "\n[]byte(")
		plain, err := strconv.Unquote(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(arg), ")")))
		if err != nil {
			f.Fatalf("%s: %v", name, err)
		}
		f.Add([]byte(plain))
	}
	f.Fuzz(func(t *testing.T, plain []byte) {
		view, err := pme.ParseFooter(bytes.Clone(plain))
		if err != nil {
			return
		}
		view.StripForReading()
		stripped := view.Append(nil)
		tree, err := seal.DecodeFooter(plain)
		if err != nil {
			t.Fatalf("the reader decodes the footer, the tree does not: %v", err)
		}
		if want := seal.StripTree(tree); !bytes.Equal(stripped, want) {
			t.Fatalf("StripForReading on the View:\n% x\non the tree:\n% x", stripped, want)
		}
	})
}

// countWriter counts what is written to it.
type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// FuzzSeal seals arbitrary bytes as a plaintext Parquet file: no panic; an
// error leaves the Sealer failed; what seals gives a footer whose column
// chunks tile the data region written, and whose schema can be traced and
// given field IDs.
func FuzzSeal(f *testing.F) {
	seedFiles(f, filepath.Join("testdata", "fuzz", "FuzzSeal"))
	k, err := pme.DEKFromBytes(make([]byte, 32)) // the key the seeds are sealed under
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var out countWriter
		s := seal.NewSealer(&out, k)
		rgs := 0
		s.OnRowGroup(func(seal.SealedRowGroup) error { rgs++; return nil })
		if err := s.AddFile(bytes.NewReader(b), int64(len(b))); err != nil {
			if _, err2 := s.Close(); err2 == nil {
				t.Fatal("Close after a failed AddFile succeeded")
			}
			return
		}
		footer, err := s.Close()
		if err != nil {
			t.Fatal(err)
		}
		if out.n != s.Offset() {
			t.Fatalf("wrote %d bytes, Offset says %d", out.n, s.Offset())
		}
		chunks, err := columnChunks(footer)
		if err != nil || len(chunks) != rgs {
			t.Fatalf("%d row groups sealed, the footer has %d (%v)", rgs, len(chunks), err)
		}
		next := int64(4)
		for _, rg := range chunks {
			for _, c := range rg {
				if c.Off != next {
					t.Fatalf("a chunk at %d, the previous ends at %d", c.Off, next)
				}
				next = c.End()
			}
		}
		if next != s.Offset() && rgs > 0 {
			t.Fatalf("chunks end at %d, %d bytes written", next, s.Offset())
		}
		fields, err := footer.Fields()
		if err != nil {
			return
		}
		if _, err := footer.AppendSchema(nil, true); err != nil {
			t.Fatal(err)
		}
		ids := map[int]int32{}
		for i := range fields {
			ids[i+1] = int32(i)
		}
		footer.SetFieldIDs(ids)
	})
}
