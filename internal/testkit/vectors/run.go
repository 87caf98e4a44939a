package vectors

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/verify"
)

// A Result is what this implementation does with a vector.
type Result struct {
	// Read is the error of Open and the full Scan (nil if they succeeded),
	// and Rows the rows read, in the text form of RowsJSON.
	Read error
	Rows []byte
	// Verify is the error of verifying the whole object (nil: intact).
	Verify error
	// Report and CheckErr are what reader.Check returned.
	Report   *reader.Report
	CheckErr error
}

// Run opens the vector's object with reader.Open, reads it with a full
// Scan (projected to v.Fields), verifies it with verify.Verify and checks
// it with reader.Check, each against the vector's store and key.
func Run(ctx context.Context, v *Vector, opts ...reader.Option) Result {
	src, keys := v.Source(), v.Keys()
	var res Result
	res.Rows, res.Read = ReadAll(ctx, v, opts...)
	res.Verify = verify.Verify(ctx, src, v.ID)
	res.Report, res.CheckErr = reader.Check(ctx, src, v.ID, keys)
	return res
}

// ReadAll opens the vector's object and reads it to the end, returning its
// rows in the text form of RowsJSON.
func ReadAll(ctx context.Context, v *Vector, opts ...reader.Option) ([]byte, error) {
	r, err := reader.Open(ctx, v.Source(), v.ID, v.Keys(), opts...)
	if err != nil {
		return nil, err
	}
	var sopts []reader.ScanOption
	if len(v.Fields) > 0 {
		sopts = append(sopts, reader.WithFields(v.Fields...))
	}
	rr, err := r.Scan(ctx, sopts...)
	if err != nil {
		return nil, err
	}
	defer rr.Release()
	var rows []byte
	for rr.Next() {
		if rows, err = RowsJSON(rows, rr.RecordBatch()); err != nil {
			return nil, err
		}
	}
	if err := rr.Err(); err != nil {
		return nil, err
	}
	if r.Verified() {
		return nil, errors.New("vectors: a read made the object count as verified (Section 11.10)")
	}
	return rows, nil
}

// Match reports how res differs from what v expects, or nil.
func (v *Vector) Match(res Result) error {
	var errs []error
	outcome := func(what string, want Outcome, got error) {
		switch {
		case want.Err == nil && got != nil:
			errs = append(errs, fmt.Errorf("%s: %v, want success", what, got))
		case want.Err != nil && !errors.Is(got, want.Err):
			errs = append(errs, fmt.Errorf("%s: %v, want an error matching %v", what, got, want.Err))
		}
	}
	outcome("read", v.Read, res.Read)
	if v.Read.Err == nil && res.Read == nil && !bytes.Equal(res.Rows, v.Rows) {
		errs = append(errs, fmt.Errorf("read: rows differ:\n got  %.300q\n want %.300q", res.Rows, v.Rows))
	}
	outcome("verify", v.Verify, res.Verify)
	switch {
	case v.Check.Err != nil || res.CheckErr != nil:
		outcome("check", Outcome{v.Check.Err}, res.CheckErr)
	default:
		if got := Fails(res.Report); !slices.Equal(got, v.Check.Fails) {
			errs = append(errs, fmt.Errorf("check: fails %q, want %q (report: %v)", got, v.Check.Fails, res.Report))
		}
		if len(v.Check.Fails) == 0 && !res.Report.Conformant() {
			errs = append(errs, fmt.Errorf("check: not conformant: %v", res.Report))
		}
	}
	return errors.Join(errs...)
}

// Fails returns the names of the requirements rep fails, in order.
func Fails(rep *reader.Report) []string {
	var out []string
	for _, f := range rep.Findings {
		out = append(out, f.Requirement.String())
	}
	return out
}
