package keyring

import (
	"context"
	"crypto/cipher"
	"crypto/subtle"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/storageid"
)

// Add adds the DEKs of entries that the ring does not hold, in one
// transaction (one lock, one sync), and returns how many it added. It never
// replaces a DEK: one the ring already holds for the same storage_id and
// equal is kept and not counted (so adding again changes nothing), and a
// different one, held or given twice in entries, is ErrConflict, and
// nothing at all is written. A held DEK that does not open for its
// storage_id is ErrUnwrap, and nothing is written either.
//
// It is for DEKs received from elsewhere (a grant of another node's
// objects), where a DEK must never overwrite the one this node holds:
// Put replaces. The check and the write are one transaction, so two
// processes adding at once cannot replace each other's DEKs. When Add
// returns nil, every DEK of entries is on disk.
func (r *Ring) Add(ctx context.Context, entries []Entry) (int, error) {
	raws := make([][]byte, len(entries))
	defer func() {
		for _, raw := range raws {
			clear(raw)
		}
	}()
	first := make(map[storageid.ID]int, len(entries))
	for i, e := range entries {
		if e.DEK.IsZero() {
			return 0, fmt.Errorf("keyring: %s: %w", e.ID, pme.ErrNoKey)
		}
		raws[i] = e.DEK.Bytes()
		if j, ok := first[e.ID]; ok {
			if subtle.ConstantTimeCompare(raws[i], raws[j]) != 1 {
				return 0, fmt.Errorf("%w: %s is given two different DEKs", ErrConflict, e.ID)
			}
			continue
		}
		first[e.ID] = i
	}
	if len(entries) == 0 {
		return 0, ctx.Err()
	}
	added := 0
	err := r.update(ctx, func(_, deks *bolt.Bucket, _ []byte, ring cipher.AEAD) error {
		added = 0
		for i, e := range entries {
			if first[e.ID] != i {
				continue
			}
			if have := deks.Get(e.ID[:]); have != nil {
				if !wrappedLen(len(have)) {
					return fmt.Errorf("%w: wrapped DEK of %d bytes for %s", ErrFile, len(have), e.ID)
				}
				pt, err := ring.Open(nil, nil, have, wrapAD(e.ID))
				if err != nil {
					return fmt.Errorf("%w: %s", ErrUnwrap, e.ID)
				}
				same := subtle.ConstantTimeCompare(pt, raws[i]) == 1
				clear(pt)
				if !same {
					return fmt.Errorf("%w: %s", ErrConflict, e.ID)
				}
				continue
			}
			if err := deks.Put(e.ID[:], ring.Seal(nil, nil, raws[i], wrapAD(e.ID))); err != nil {
				return err
			}
			added++
		}
		return nil
	}, func(deks *bolt.Bucket) error {
		for id := range first {
			if v := deks.Get(id[:]); v == nil || !wrappedLen(len(v)) {
				return fmt.Errorf("%w: the DEK added for %s does not read back", ErrFile, id)
			}
		}
		return nil
	}, nil) // adds only: it never removes or replaces a wrapped DEK
	if err != nil {
		return 0, noMeta(err)
	}
	return added, nil
}
