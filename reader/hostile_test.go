package reader_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/sovm/sop-pme/internal/hostile"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
)

// readObject opens the object and drains a full scan; it returns the rows
// read and the first error.
func readObject(ctx context.Context, st *hostile.Store, id storageid.ID) (int64, error) {
	r, err := reader.Open(ctx, st, id, st)
	if err != nil {
		return 0, err
	}
	rr, err := r.Scan(ctx)
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

// TestHostile reads every hostile case: Open and a full Scan return the
// case's error (or read rows), and Check reports the requirements the case
// says the object fails.
func TestHostile(t *testing.T) {
	ctx := context.Background()
	dek := pme.NewDEK()
	for _, c := range hostile.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			b, err := c.Build(dek)
			if err != nil {
				t.Fatal(err)
			}
			st := hostile.NewStore()
			id := st.Put(b, dek)
			rows, err := readObject(ctx, st, id)
			switch {
			case c.Want == nil && err != nil:
				t.Errorf("read: %v, want rows", err)
			case c.Want == nil && rows == 0:
				t.Errorf("read no rows")
			case c.Want != nil && !errors.Is(err, c.Want):
				t.Errorf("read: %v, want %v", err, c.Want)
			}
			rep, err := reader.Check(ctx, st, id, st)
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			var failed []reader.Requirement
			for _, f := range rep.Findings {
				failed = append(failed, f.Requirement)
			}
			if !slices.Equal(failed, c.Check) {
				t.Errorf("Check fails %v, want %v:\n%v", failed, c.Check, rep)
			}
		})
	}
}
