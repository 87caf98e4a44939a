package reader_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/sovm/sop-pme/internal/testkit/hostile"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
)

// readObject opens the object and drains a full scan with opts; it returns
// the rows read and the first error.
func readObject(ctx context.Context, st *hostile.Store, id storageid.ID, opts ...reader.ScanOption) (int64, error) {
	r, err := reader.Open(ctx, st, id, st)
	if err != nil {
		return 0, err
	}
	rr, err := r.Scan(ctx, opts...)
	if err != nil {
		return 0, err
	}
	defer rr.Release()
	var rows int64
	for rr.Next() {
		rows += rr.RecordBatch().NumRows()
	}
	return rows, rr.Err()
}

// builtCase is a hostile case built under the fuzz key (32 zero bytes).
type builtCase struct {
	hostile.Case
	obj []byte
	err error
}

// hostileCases builds every hostile case once for the tests of this
// package.
var hostileCases = sync.OnceValue(func() []builtCase {
	dek := fuzzKey()
	var out []builtCase
	for _, c := range hostile.Cases() {
		obj, err := c.Build(dek)
		out = append(out, builtCase{c, obj, err})
	}
	return out
})

// fuzzKey returns the fixed key of the fuzz targets: 32 zero bytes.
func fuzzKey() pme.DEK {
	k, err := pme.DEKFromBytes(make([]byte, 32))
	if err != nil {
		panic(err)
	}
	return k
}

// TestHostile reads every hostile case: Open and a full Scan, sequential
// or of 8 row groups at once, return the case's error (or read rows), and
// Check reports the requirements the case
// says the object fails.
func TestHostile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dek := fuzzKey()
	for _, c := range hostileCases() {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			if c.err != nil {
				t.Fatal(c.err)
			}
			st := hostile.NewStore()
			id := st.Put(c.obj, dek)
			rows, err := readObject(ctx, st, id)
			switch {
			case c.Want == nil && err != nil:
				t.Errorf("read: %v, want rows", err)
			case c.Want == nil && rows == 0:
				t.Errorf("read no rows")
			case c.Want != nil && !errors.Is(err, c.Want):
				t.Errorf("read: %v, want %v", err, c.Want)
			}
			// Decoding 8 row groups at once reads the same.
			if rows8, err8 := readObject(ctx, st, id, reader.WithParallelism(8)); rows8 != rows || (err8 == nil) != (err == nil) || (c.Want != nil && !errors.Is(err8, c.Want)) {
				t.Errorf("8 row groups at once: %d rows, %v; sequential: %d rows, %v", rows8, err8, rows, err)
			}
			rep, err := reader.Check(ctx, st, id, st)
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			var failed []reader.Requirement
			for _, f := range rep.Findings {
				failed = append(failed, f.Requirement)
			}
			// Check and the reader agree: Check fails ReqRows exactly when
			// the read fails.
			want := c.Check
			if c.Want != nil {
				want = append(slices.Clone(want), reader.ReqRows)
			}
			if !slices.Equal(failed, want) {
				t.Errorf("Check fails %v, want %v:\n%v", failed, want, rep)
			}
		})
	}
}
