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
// returns nil, every DEK of entries is on disk. RecordTx.AddDEKs does the
// same inside a transaction of records.
func (r *Ring) Add(ctx context.Context, entries []Entry) (int, error) {
	a, err := newAdding(entries)
	defer a.clear()
	if err != nil {
		return 0, err
	}
	if len(entries) == 0 {
		return 0, ctx.Err()
	}
	added := 0
	err = r.update(ctx, func(_, deks *bolt.Bucket, _ []byte, ring cipher.AEAD) error {
		added, err = a.add(deks, ring)
		return err
	}, a.readBack, nil) // adds only: it never removes or replaces a wrapped DEK
	if err != nil {
		return 0, noMeta(err)
	}
	return added, nil
}

// AddDEKs is Ring.Add inside this transaction of Update: the DEKs are
// added (never replacing one) if and only if the records are written, and
// read back with them. A conflict (ErrConflict, ErrUnwrap) fails only this
// call; fn returning the error fails the whole transaction. AddDEKs fails
// with ErrReadOnly inside View.
func (t *RecordTx) AddDEKs(entries []Entry) (int, error) {
	if t.done {
		panic("keyring: RecordTx used after its transaction")
	}
	if !t.write {
		return 0, ErrReadOnly
	}
	a, err := newAdding(entries)
	defer a.clear()
	if err != nil {
		return 0, err
	}
	_, deks, _, err := buckets(t.tx)
	if err != nil {
		return 0, err
	}
	n, err := a.add(deks, t.ring)
	if err != nil {
		return 0, err
	}
	for id := range a.first {
		t.deks = append(t.deks, id)
	}
	return n, nil
}

// adding is a batch of DEKs to add: their raw bytes, and the first entry
// of each storage_id.
type adding struct {
	entries []Entry
	raws    [][]byte
	first   map[storageid.ID]int
}

// newAdding checks entries: no zero DEK, no storage_id given two
// different DEKs (ErrConflict).
func newAdding(entries []Entry) (*adding, error) {
	a := &adding{entries: entries, raws: make([][]byte, len(entries)), first: make(map[storageid.ID]int, len(entries))}
	for i, e := range entries {
		if e.DEK.IsZero() {
			return a, fmt.Errorf("keyring: %s: %w", e.ID, pme.ErrNoKey)
		}
		a.raws[i] = e.DEK.Bytes()
		if j, ok := a.first[e.ID]; ok {
			if subtle.ConstantTimeCompare(a.raws[i], a.raws[j]) != 1 {
				return a, fmt.Errorf("%w: %s is given two different DEKs", ErrConflict, e.ID)
			}
			continue
		}
		a.first[e.ID] = i
	}
	return a, nil
}

func (a *adding) clear() {
	for _, raw := range a.raws {
		clear(raw)
	}
}

// add writes into deks, wrapped under ring, the DEKs it does not hold,
// and checks those it holds are the same.
func (a *adding) add(deks *bolt.Bucket, ring cipher.AEAD) (int, error) {
	added := 0
	for i, e := range a.entries {
		if a.first[e.ID] != i {
			continue
		}
		if have := deks.Get(e.ID[:]); have != nil {
			if !wrappedLen(len(have)) {
				return 0, fmt.Errorf("%w: wrapped DEK of %d bytes for %s", ErrFile, len(have), e.ID)
			}
			pt, err := ring.Open(nil, nil, have, wrapAD(e.ID))
			if err != nil {
				return 0, fmt.Errorf("%w: %s", ErrUnwrap, e.ID)
			}
			same := subtle.ConstantTimeCompare(pt, a.raws[i]) == 1
			clear(pt)
			if !same {
				return 0, fmt.Errorf("%w: %s", ErrConflict, e.ID)
			}
			continue
		}
		if err := deks.Put(e.ID[:], ring.Seal(nil, nil, a.raws[i], wrapAD(e.ID))); err != nil {
			return 0, err
		}
		added++
	}
	return added, nil
}

// readBack checks every DEK of the batch is found again.
func (a *adding) readBack(deks *bolt.Bucket) error {
	for id := range a.first {
		if v := deks.Get(id[:]); v == nil || !wrappedLen(len(v)) {
			return fmt.Errorf("%w: the DEK added for %s does not read back", ErrFile, id)
		}
	}
	return nil
}
