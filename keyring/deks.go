package keyring

import (
	"bytes"
	"context"
	"crypto/cipher"
	"errors"
	"fmt"
	"os"

	bolt "go.etcd.io/bbolt"

	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/storageid"
)

// Put wraps dek for the object id under the ring key and writes it in one
// transaction, replacing any DEK held for id. When Put returns nil the DEK
// is on disk.
func (r *Ring) Put(ctx context.Context, id storageid.ID, dek pme.DEK) error {
	return r.PutBatch(ctx, []Entry{{ID: id, DEK: dek}})
}

// PutBatch is Put for many DEKs in one transaction (one lock, one sync):
// either all are written or none. A storage_id given twice keeps the last
// DEK. A DEK it replaces is shredded as Delete shreds one.
func (r *Ring) PutBatch(ctx context.Context, entries []Entry) error {
	raws := make([][]byte, len(entries))
	defer func() {
		for _, raw := range raws {
			clear(raw)
		}
	}()
	for i, e := range entries {
		if e.DEK.IsZero() {
			return fmt.Errorf("keyring: %s: %w", e.ID, pme.ErrNoKey)
		}
		raws[i] = e.DEK.Bytes()
	}
	if len(entries) == 0 {
		return ctx.Err()
	}
	wrapped := make([][]byte, len(entries))
	replaced := false
	return r.update(ctx, func(_, deks *bolt.Bucket, _ []byte, ring cipher.AEAD) error {
		replaced = false
		for i, e := range entries {
			wrapped[i] = ring.Seal(nil, nil, raws[i], wrapAD(e.ID))
			if deks.Get(e.ID[:]) != nil {
				replaced = true
			}
			if err := deks.Put(e.ID[:], wrapped[i]); err != nil {
				return err
			}
		}
		return nil
	}, func(deks *bolt.Bucket) error {
		// Later entries win: check each id against its last value.
		last := make(map[storageid.ID]int, len(entries))
		for i, e := range entries {
			last[e.ID] = i
		}
		for id, i := range last {
			if !bytes.Equal(deks.Get(id[:]), wrapped[i]) {
				return fmt.Errorf("%w: the DEK written for %s does not read back", ErrFile, id)
			}
		}
		return nil
	}, func() bool { return replaced })
}

// ResolveDEK returns the DEK of the object id. It returns ErrNotFound
// (which matches reader.ErrNoKey) if the ring has none, and ErrUnwrap if the
// wrapped DEK does not open for id.
func (r *Ring) ResolveDEK(ctx context.Context, id storageid.ID) (pme.DEK, error) {
	var dek pme.DEK
	err := r.retry("the resolution", func(int) (err error) {
		dek, err = r.resolve(ctx, id)
		return err
	})
	return dek, err
}

// resolve is one attempt of ResolveDEK: the wrapped ring key and DEK read
// in one transaction, unwrapped outside it.
func (r *Ring) resolve(ctx context.Context, id storageid.ID) (pme.DEK, error) {
	var w, v []byte
	r.mu.RLock()
	err := r.withDB(ctx, accessRead, func(db *bolt.DB, _ *os.File) error {
		return db.View(func(tx *bolt.Tx) error {
			_, deks, wr, err := buckets(tx)
			if err != nil {
				return err
			}
			val := deks.Get(id[:])
			if val == nil {
				return fmt.Errorf("%w: %s", ErrNotFound, id)
			}
			if !wrappedLen(len(val)) {
				return fmt.Errorf("%w: wrapped DEK of %d bytes for %s", ErrFile, len(val), id)
			}
			w, v = bytes.Clone(wr), bytes.Clone(val)
			return nil
		})
	})
	r.mu.RUnlock()
	if err != nil {
		return pme.DEK{}, noMeta(err)
	}
	ring, err := r.unwrapRingKey(ctx, w)
	if err != nil {
		return pme.DEK{}, err
	}
	raw, err := ring.Open(nil, nil, v, wrapAD(id))
	if err != nil {
		return pme.DEK{}, fmt.Errorf("%w: %s", ErrUnwrap, id)
	}
	defer clear(raw)
	return pme.DEKFromBytes(raw)
}

// noMeta reports a file without a ring, found after Open, as ErrFile.
func noMeta(err error) error {
	if errors.Is(err, errNoMeta) {
		return fmt.Errorf("%w: %w", ErrFile, err)
	}
	return err
}

// Delete forgets the DEK of id. Forgetting the last copy of a DEK makes its
// object unreadable (crypto-shredding). Deleting an id the ring does not
// hold is not an error.
//
// When Delete returns nil, the file holds no copy of the wrapped DEK: after
// the commit, every page the ring does not use is overwritten with zeros
// (see Scrub), so neither bbolt, which can write a freed page back without
// any key, nor a copy of the file rolled back to the transaction before,
// finds it. Delete zeroes every free page, whatever freed it, even for an
// id the ring does not hold: deleting again finishes a Delete that a crash
// interrupted. Copies of the file made before, and what the storage below
// the file system keeps, are beyond it (see the package documentation).
func (r *Ring) Delete(ctx context.Context, id storageid.ID) error {
	return noMeta(r.update(ctx, func(_, deks *bolt.Bucket, _ []byte, _ cipher.AEAD) error {
		return deks.Delete(id[:])
	}, func(deks *bolt.Bucket) error {
		if deks.Get(id[:]) != nil {
			return fmt.Errorf("%w: the DEK of %s is still found after its deletion", ErrFile, id)
		}
		return nil
	}, func() bool { return true }))
}

// Len returns the number of DEKs held.
func (r *Ring) Len(ctx context.Context) (int, error) {
	var n int
	r.mu.RLock()
	defer r.mu.RUnlock()
	err := r.withDB(ctx, accessRead, func(db *bolt.DB, _ *os.File) error {
		return db.View(func(tx *bolt.Tx) error {
			_, deks, _, err := buckets(tx)
			if err != nil {
				return err
			}
			n = deks.Stats().KeyN
			return nil
		})
	})
	return n, noMeta(err)
}

// Has reports, for each of ids, whether the ring holds a wrapped DEK for it,
// all in one read transaction under the shared lock. It unwraps nothing: a
// DEK it reports may still fail to resolve (ResolveDEK, ErrUnwrap). It is
// for listings, where resolving every DEK would call the master and open
// the file once per object.
func (r *Ring) Has(ctx context.Context, ids ...storageid.ID) ([]bool, error) {
	out := make([]bool, len(ids))
	r.mu.RLock()
	defer r.mu.RUnlock()
	err := r.withDB(ctx, accessRead, func(db *bolt.DB, _ *os.File) error {
		return db.View(func(tx *bolt.Tx) error {
			_, deks, _, err := buckets(tx)
			if err != nil {
				return err
			}
			for i, id := range ids {
				out[i] = deks.Get(id[:]) != nil
			}
			return nil
		})
	})
	if err != nil {
		return nil, noMeta(err)
	}
	return out, nil
}
