package reader

import (
	"context"

	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
)

// checkRows tests ReqRows: Check and the reader must agree. An object whose
// modules open and whose footer is sound may still be one the reader
// refuses: pages that break the reader's page checks (a page type it does
// not decode, counts that disagree with the footer), or levels and values
// that do not decode (a record that starts with a repetition level of 1, a
// required column whose values run short; parquet-testing's bad_data/),
// or that need more memory than a scan's default limit. So Check reads the
// object as a default read does, through Open and a full Scan, and reports
// what stops it. The error is for what stops the check itself (a
// cancelled ctx).
func checkRows(ctx context.Context, rep *Report, src verify.Source, id storageid.ID, keys KeyResolver) error {
	err := readAll(ctx, src, id, keys)
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		rep.fail(ReqRows, "%v", err)
	default:
		rep.pass(ReqRows)
	}
	return nil
}

// readAll opens the object and reads every row with the reader's defaults.
func readAll(ctx context.Context, src verify.Source, id storageid.ID, keys KeyResolver) error {
	r, err := Open(ctx, src, id, keys)
	if err != nil {
		return err
	}
	rr, err := r.Scan(ctx)
	if err != nil {
		return err
	}
	defer rr.Release()
	for rr.Next() {
	}
	return rr.Err()
}
