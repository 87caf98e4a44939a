package keyring

import (
	"bytes"
	"context"
	"crypto/cipher"
	"errors"
	"fmt"
	"os"

	bolt "go.etcd.io/bbolt"
)

// maxAttempts bounds the attempts of an operation that retry makes again.
const maxAttempts = 4

// retry runs attempt, numbered from 1, until it succeeds or fails for good.
// It is the one loop by which Open, ResolveDEK, the writes of DEKs (update),
// Rotate and Rekey try again. An attempt is made again when it failed
//
//   - with errStale: the wrapped ring key in the file changed between the
//     attempt's reading it and its write (another Ring or process rotated or
//     re-keyed the ring). After maxAttempts of these, the operation fails
//     with ErrBusy, naming what (e.g. "the rotation") was interrupted;
//   - with ErrMaster, when a reload function is set (WithReload), before
//     the last attempt: the master did not open the ring key, and a reload
//     may find the one that does once a rotation made elsewhere has moved
//     on, so the attempt reads the file again.
//
// Any other error, and ErrMaster at the last attempt, is the operation's.
func (r *Ring) retry(what string, attempt func(n int) error) error {
	for n := 1; ; n++ {
		err := attempt(n)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, errStale):
			if n >= maxAttempts {
				return fmt.Errorf("%w: the ring key changed %d times during %s", ErrBusy, maxAttempts, what)
			}
		case r.cfg.reload == nil || n >= maxAttempts || !errors.Is(err, ErrMaster):
			return err
		}
	}
}

// update runs fn in one write transaction with the ring key current in that
// transaction (see updateTx), handing it the meta and deks buckets.
func (r *Ring) update(ctx context.Context, fn func(meta, deks *bolt.Bucket, w []byte, ring cipher.AEAD) error, readBack func(deks *bolt.Bucket) error, shred func() bool) error {
	var rb func(tx *bolt.Tx) error
	if readBack != nil {
		rb = func(tx *bolt.Tx) error {
			_, deks, _, err := buckets(tx)
			if err != nil {
				return err
			}
			return readBack(deks)
		}
	}
	return r.updateTx(ctx, func(tx *bolt.Tx, ring cipher.AEAD) error {
		meta, deks, w, err := buckets(tx)
		if err != nil {
			return err
		}
		return fn(meta, deks, w, ring)
	}, rb, shred)
}

// updateTx runs fn in one write transaction with the ring key current in
// that transaction. If the transaction holds a ring key this Ring has not
// unwrapped (another Ring re-keyed or rotated), it is given up, the key is
// unwrapped outside it, and the transaction starts again (retry); the last
// attempt unwraps inside the transaction. So fn may run more than once.
//
// If readBack is not nil, it runs in a read transaction on the same open
// file after the commit, and its error fails the update: what was written
// must be found again by the ordinary lookup before it is acknowledged.
//
// If shred is not nil and reports true after the commit (the transaction
// removed or replaced a wrapped key or a record), the pages it freed are
// zeroed before the lock is released (see scrub); a failure there is
// ErrScrub.
func (r *Ring) updateTx(ctx context.Context, fn func(tx *bolt.Tx, ring cipher.AEAD) error, readBack func(tx *bolt.Tx) error, shred func() bool) error {
	if r.cfg.readOnly {
		return ErrReadOnly
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.retry("the write", func(attempt int) error {
		var unknown []byte
		err := r.withDB(ctx, accessWrite, func(db *bolt.DB, f *os.File) error {
			err := db.Update(func(tx *bolt.Tx) error {
				_, _, w, err := buckets(tx)
				if err != nil {
					return err
				}
				ring := r.cached(w)
				if ring == nil {
					if attempt < maxAttempts {
						unknown = bytes.Clone(w)
						return errStale
					}
					if ring, err = r.unwrapRingKey(ctx, w); err != nil {
						return err
					}
				}
				return fn(tx, ring)
			})
			if err != nil {
				return err
			}
			if readBack != nil {
				if err := db.View(readBack); err != nil {
					return err
				}
			}
			if shred != nil && shred() {
				if err := r.scrub(db, f); err != nil {
					return fmt.Errorf("%w: %s: %w", ErrScrub, r.path, err)
				}
			}
			return nil
		})
		if errors.Is(err, errStale) && unknown != nil {
			// Unwrapped outside the transaction, the key is found in the
			// cache by the next attempt.
			if _, err := r.unwrapRingKey(ctx, unknown); err != nil {
				return err
			}
		}
		return err
	})
}
