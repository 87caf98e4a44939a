package keyring

import (
	"bytes"
	"context"
	"crypto/cipher"
	"crypto/rand"
	"fmt"
	"os"

	bolt "go.etcd.io/bbolt"

	"github.com/sovm/sop-pme/storageid"
)

// Rotate makes m the ring's master: it unwraps the ring key with the
// current master, wraps it under m and writes the one wrapped key. No DEK is
// rewritten. Both master calls happen outside the write transaction, which
// replaces the wrapped key only if it is still the one unwrapped. After
// Rotate, the old master no longer opens the ring, and the file holds no
// copy of the ring key wrapped under it (see Shredding in the package
// documentation); copies of the file made before still open under it.
func (r *Ring) Rotate(ctx context.Context, m Master) error {
	if err := checkMaster(m); err != nil {
		return err
	}
	if r.cfg.readOnly {
		return ErrReadOnly
	}
	return r.retry("the rotation", func(int) error {
		w, err := r.readRingKey(ctx)
		if err != nil {
			return noMeta(err)
		}
		raw, err := r.rawRingKey(ctx, w)
		if err != nil {
			return err
		}
		aead, err := newGCM(raw)
		var nw []byte
		if err == nil {
			nw, err = wrapRingKey(ctx, m, raw, "new master key", "the ring key")
		}
		clear(raw)
		if err != nil {
			return err
		}
		if err := r.compareAndSwap(ctx, w, nw, nil, nil); err != nil {
			return noMeta(err)
		}
		r.adopt(m, nw, aead)
		return nil
	})
}

// Rekey makes a new random ring key, wraps it under m (the current master
// if m is nil), and rewraps every DEK under it, all in one transaction: the
// file holds either every DEK under the old ring key or every DEK under the
// new one. The records (Records) are rewrapped in the same transaction. No
// object is touched (Section 11.6). It fails with ErrUnwrap, changing
// nothing, if a wrapped DEK does not open, and with ErrRecord if a record
// does not. The master is called
// outside the transaction. When Rekey returns nil, the file holds no copy of
// the old wrapped ring key nor of any DEK wrapped under the old ring key
// (see Shredding in the package documentation).
func (r *Ring) Rekey(ctx context.Context, m Master) error {
	if m == nil {
		m = r.Master()
	}
	if err := checkMaster(m); err != nil {
		return err
	}
	if r.cfg.readOnly {
		return ErrReadOnly
	}
	return r.retry("the re-key", func(int) error {
		w, err := r.readRingKey(ctx)
		if err != nil {
			return noMeta(err)
		}
		old, err := r.unwrapRingKey(ctx, w)
		if err != nil {
			return err
		}
		raw := make([]byte, RingKeySize)
		rand.Read(raw)
		next, err := newGCM(raw)
		var nw []byte
		if err == nil {
			nw, err = wrapRingKey(ctx, m, raw, "master key", "the new ring key")
		}
		clear(raw)
		if err != nil {
			return err
		}
		var all []rewrapped
		var recs []rewrappedRecord
		err = r.compareAndSwap(ctx, w, nw, func(tx *bolt.Tx, deks *bolt.Bucket) error {
			var err error
			if all, err = rewrapAll(ctx, deks, old, next); err != nil {
				return err
			}
			recs, err = rewrapRecords(ctx, tx, old, next)
			return err
		}, func(tx *bolt.Tx, deks *bolt.Bucket) error {
			if err := readBackAll(deks, all); err != nil {
				return err
			}
			return readBackRecords(tx, recs)
		})
		if err != nil {
			return noMeta(err)
		}
		r.adopt(m, nw, next)
		return nil
	})
}

// compareAndSwap replaces the wrapped ring key w by nw in one write
// transaction, after running also (if not nil), provided the file still
// holds w; else it returns errStale and changes nothing. Then it reads the
// ring key back, runs readBack (if not nil), as update does, and zeroes the
// freed pages (scrub) under the same lock.
func (r *Ring) compareAndSwap(ctx context.Context, w, nw []byte, also, readBack func(tx *bolt.Tx, deks *bolt.Bucket) error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.withDB(ctx, accessWrite, func(db *bolt.DB, f *os.File) error {
		err := db.Update(func(tx *bolt.Tx) error {
			meta, deks, cur, err := buckets(tx)
			if err != nil {
				return err
			}
			if !bytes.Equal(cur, w) {
				return errStale
			}
			if also != nil {
				if err := also(tx, deks); err != nil {
					return err
				}
			}
			return meta.Put(keyRingKey, nw)
		})
		if err != nil {
			return err
		}
		err = db.View(func(tx *bolt.Tx) error {
			_, deks, cur, err := buckets(tx)
			if err != nil {
				return err
			}
			if !bytes.Equal(cur, nw) {
				return fmt.Errorf("%w: the new ring key does not read back", ErrFile)
			}
			if readBack != nil {
				return readBack(tx, deks)
			}
			return nil
		})
		if err != nil {
			return err
		}
		// The old wrapped ring key (and, for a re-key, every DEK wrapped
		// under the old ring key) is in the pages just freed.
		if err := r.scrub(db, f); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrScrub, r.path, err)
		}
		return nil
	})
}

type rewrapped struct{ id, w []byte }

// rewrapAll rewraps every DEK in deks from the ring key old to next, and
// returns what it wrote.
func rewrapAll(ctx context.Context, deks *bolt.Bucket, old, next cipher.AEAD) ([]rewrapped, error) {
	var all []rewrapped
	c := deks.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if len(all)%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if len(k) != storageid.Size || !wrappedLen(len(v)) {
			return nil, fmt.Errorf("%w: an entry of %d and %d bytes", ErrFile, len(k), len(v))
		}
		id := storageid.ID(k)
		raw, err := old.Open(nil, nil, v, wrapAD(id))
		if err != nil {
			return nil, fmt.Errorf("%w: %s", ErrUnwrap, id)
		}
		all = append(all, rewrapped{bytes.Clone(k), next.Seal(nil, nil, raw, wrapAD(id))})
		clear(raw)
	}
	for _, e := range all {
		if err := deks.Put(e.id, e.w); err != nil {
			return nil, err
		}
	}
	return all, nil
}

// readBackAll checks that deks holds exactly the entries of all.
func readBackAll(deks *bolt.Bucket, all []rewrapped) error {
	for _, e := range all {
		if !bytes.Equal(deks.Get(e.id), e.w) {
			return fmt.Errorf("%w: a rewrapped DEK does not read back", ErrFile)
		}
	}
	if n := deks.Stats().KeyN; n != len(all) {
		return fmt.Errorf("%w: %d DEKs rewrapped, %d found", ErrFile, len(all), n)
	}
	return nil
}
