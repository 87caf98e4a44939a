package table

import (
	"context"
	"sync"

	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
)

// A Result is the outcome of verifying one object of a table.
type Result struct {
	Index int          // the object's position in the list
	ID    storageid.ID // its storage_id
	// Size is the object's size in bytes, as proven from its last group
	// (Section 11.8), or 0 if it could not be opened.
	Size int64
	// Err is nil if every byte of the object verified against ID and its
	// footer opened under its DEK; otherwise why not (errors.Is matches
	// verify.ErrVerify, reader.ErrNoKey, pme.ErrAuth...).
	Err error
}

// Verify checks every byte of every object against its storage_id (SOP-PME-1
// Section 11.10): reader.Open, which verifies the footer and decrypts it
// with the DEK keys resolves, then (*reader.Reader).Verify over the whole
// object, the only operation after which an object counts as verified. A
// Scan never does this: a projection verifies the ranges it reads, not the
// object.
//
// It reports every object, in order, carrying on past a failure: Result.Err
// says what failed. The error is for what stops Verify itself: ctx ending,
// or an invalid option. Up to WithPrefetch+1 objects are verified at once;
// WithReaderOptions applies.
func Verify(ctx context.Context, src verify.Source, keys reader.KeyResolver, objects []storageid.ID, opts ...Option) ([]Result, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	results := make([]Result, len(objects))
	sem := make(chan struct{}, cfg.prefetch+1)
	var wg sync.WaitGroup
	for i, id := range objects {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			res := Result{Index: i, ID: id}
			r, err := reader.Open(ctx, src, id, keys, cfg.ropts...)
			if err == nil {
				res.Size = r.Size()
				err = r.Verify(ctx)
			}
			res.Err = err
			results[i] = res
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return results, context.Cause(ctx)
	}
	return results, nil
}
