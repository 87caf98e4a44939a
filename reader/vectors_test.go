package reader_test

import (
	"context"
	"os"
	"testing"

	"github.com/sovm/sop-pme/internal/testkit/vectors"
)

// loadVectors reads the SOP-PME-1 test vectors of testdata/vectors at the
// root of the repository (see its README.md).
func loadVectors(t testing.TB) []vectors.Vector {
	t.Helper()
	vs, err := vectors.Load(os.DirFS("../testdata"), "vectors")
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

// TestVectors runs every test vector through Open and a full Scan, through
// Verify, and through Check, and compares what each does with what the
// vector expects: the rows or the error of the read, the outcome of full
// verification, and the requirements Check reports failed.
func TestVectors(t *testing.T) {
	t.Parallel()
	vs := loadVectors(t)
	for i := range vs {
		v := &vs[i]
		t.Run(v.Name, func(t *testing.T) {
			t.Parallel()
			if err := v.Match(vectors.Run(context.Background(), v)); err != nil {
				t.Fatalf("%s (rule %s):\n%v", v.Name, v.Rule, err)
			}
		})
	}
}
