package keyring

import (
	"bytes"
	"context"
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	bolt "go.etcd.io/bbolt"

	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/storageid"
)

// Limits of records, in bytes.
const (
	// MaxRecordKey bounds the key of a record.
	MaxRecordKey = 1 << 10
	// MaxRecordValue bounds the plaintext value of a record.
	MaxRecordValue = 16 << 20
	// MaxSpace bounds the name of a space of records.
	MaxSpace = 255
)

// Errors of records (wrapped with context).
var (
	// ErrNoRecord reports a key that holds no record in its space.
	ErrNoRecord = errors.New("keyring: no such record")
	// ErrRecord reports a record that does not open under the ring key for
	// its space and key: it was altered, moved from another key or space,
	// or its length is not one a record can have.
	ErrRecord = errors.New("keyring: record does not open for this space and key")
	// ErrRecordSize reports a key, value or space name beyond its limit
	// (MaxRecordKey, MaxRecordValue, MaxSpace), or empty.
	ErrRecordSize = errors.New("keyring: record key, value or space out of bounds")
)

var bucketRecords = []byte("records")

// adRecord is the associated data of a record, followed by
// uvarint(len(space)) ‖ space ‖ key: a record opens only under the space
// and key it was written for.
const adRecord = "sop-pme keyring v2: record "

func recordAD(space string, key []byte) []byte {
	ad := make([]byte, 0, len(adRecord)+binary.MaxVarintLen64+len(space)+len(key))
	ad = append(ad, adRecord...)
	ad = binary.AppendUvarint(ad, uint64(len(space)))
	ad = append(ad, space...)
	return append(ad, key...)
}

// Records is a named space of small records kept in the ring file, each
// encrypted under the ring key (see the layout in ring.go). They share the
// file, its lock and its transactions with the DEKs: Rekey rewraps them with
// the DEKs in one transaction, Rotate leaves them as they are, and a record
// deleted or replaced is shredded as a deleted DEK is (Section 11.6). A
// Records is safe for concurrent use, as its Ring is.
//
// They are for metadata that untrusted storage must not see, such as a
// catalog's table names, schemas and exact sizes (Sections 11.4, 11.8).
type Records struct {
	ring  *Ring
	space string
}

// Records returns the space of records named space (1 to MaxSpace bytes;
// a bad name fails every operation with ErrRecordSize).
func (r *Ring) Records(space string) *Records {
	return &Records{ring: r, space: space}
}

func (rs *Records) checkSpace() error {
	if len(rs.space) == 0 || len(rs.space) > MaxSpace {
		return fmt.Errorf("%w: a space name of %d bytes", ErrRecordSize, len(rs.space))
	}
	return nil
}

// A RecordTx reads and writes the records of one space inside one
// transaction of View or Update. It is valid only during the function it
// is passed to, and must not be used from other goroutines. Values it
// returns are copies that the caller owns; keys passed to ForEach are too.
type RecordTx struct {
	space string
	b     *bolt.Bucket // nil in a View of a space never written
	ring  cipher.AEAD
	write bool
	done  bool

	wrote map[string][]byte // key → sealed value, nil if deleted (Update)
	shred bool              // a record was deleted or replaced

	tx   *bolt.Tx       // the transaction (Update), for AddDEKs
	deks []storageid.ID // DEKs AddDEKs added or found, read back after the commit
}

// View runs fn in one read transaction under the shared lock of the ring
// file. fn must not call the Ring (its lock is held).
func (rs *Records) View(ctx context.Context, fn func(tx *RecordTx) error) error {
	if err := rs.checkSpace(); err != nil {
		return err
	}
	r := rs.ring
	var fnErr error
	err := r.retry("the reading of records", func(attempt int) error {
		var unknown []byte
		r.mu.RLock()
		err := r.withDB(ctx, accessRead, func(db *bolt.DB, _ *os.File) error {
			return db.View(func(tx *bolt.Tx) error {
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
				b, err := spaceBucket(tx, rs.space, false)
				if err != nil {
					return err
				}
				rt := &RecordTx{space: rs.space, b: b, ring: ring}
				defer func() { rt.done = true }()
				fnErr = fn(rt)
				return fnErr
			})
		})
		r.mu.RUnlock()
		if errors.Is(err, errStale) && unknown != nil {
			if _, err := r.unwrapRingKey(ctx, unknown); err != nil {
				return err
			}
		}
		return noMeta(err)
	})
	return fnResult(err, fnErr)
}

// fnResult returns fnErr, the caller's own error, as the caller's function
// returned it, when err is it passed through the transaction.
func fnResult(err, fnErr error) error {
	if err != nil && fnErr != nil && errors.Is(err, fnErr) {
		return fnErr
	}
	return err
}

// Update runs fn in one write transaction under the exclusive lock of the
// ring file: either all its changes are written or none. When Update
// returns nil, every record fn put is on disk and reads back, and the
// pages that held any record fn deleted or replaced are zeroed (see Delete;
// a failure there is ErrScrub). fn may run more than once (when another
// process re-keyed the ring meanwhile), so it must not keep effects of an
// earlier run. fn must not call the Ring (its lock is held). Update fails
// with ErrReadOnly on a ring opened WithReadOnly.
func (rs *Records) Update(ctx context.Context, fn func(tx *RecordTx) error) error {
	if err := rs.checkSpace(); err != nil {
		return err
	}
	var rt *RecordTx
	var fnErr error
	err := rs.ring.updateTx(ctx, func(tx *bolt.Tx, ring cipher.AEAD) error {
		b, err := spaceBucket(tx, rs.space, true)
		if err != nil {
			return err
		}
		rt = &RecordTx{space: rs.space, b: b, ring: ring, write: true, wrote: map[string][]byte{}, tx: tx}
		defer func() { rt.done = true }()
		fnErr = fn(rt)
		return fnErr
	}, func(tx *bolt.Tx) error {
		if len(rt.deks) > 0 {
			_, deks, _, err := buckets(tx)
			if err != nil {
				return err
			}
			for _, id := range rt.deks {
				if v := deks.Get(id[:]); v == nil || !wrappedLen(len(v)) {
					return fmt.Errorf("%w: the DEK added for %s does not read back", ErrFile, id)
				}
			}
		}
		if len(rt.wrote) == 0 {
			return nil
		}
		b, err := spaceBucket(tx, rs.space, false)
		if err != nil {
			return err
		}
		for k, w := range rt.wrote {
			var got []byte
			if b != nil {
				got = b.Get([]byte(k))
			}
			if !bytes.Equal(got, w) {
				return fmt.Errorf("%w: a record written in space %q does not read back", ErrFile, rs.space)
			}
		}
		return nil
	}, func() bool { return rt != nil && rt.shred })
	return fnResult(noMeta(err), fnErr)
}

// spaceBucket returns the bucket of space, creating it (and the records
// bucket) if create is set; without create, a missing bucket is nil.
func spaceBucket(tx *bolt.Tx, space string, create bool) (*bolt.Bucket, error) {
	top := tx.Bucket(bucketRecords)
	if top == nil {
		if !create {
			return nil, nil
		}
		var err error
		if top, err = tx.CreateBucket(bucketRecords); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrFile, err)
		}
	}
	b := top.Bucket([]byte(space))
	if b == nil {
		if top.Get([]byte(space)) != nil {
			return nil, fmt.Errorf("%w: space %q is not a bucket", ErrFile, space)
		}
		if !create {
			return nil, nil
		}
		var err error
		if b, err = top.CreateBucket([]byte(space)); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrFile, err)
		}
	}
	return b, nil
}

func (t *RecordTx) check(key []byte) error {
	if t.done {
		panic("keyring: RecordTx used after its transaction")
	}
	if len(key) == 0 || len(key) > MaxRecordKey {
		return fmt.Errorf("%w: a key of %d bytes", ErrRecordSize, len(key))
	}
	return nil
}

// open decrypts the stored value v of key, after checking its length.
func (t *RecordTx) open(key, v []byte) ([]byte, error) {
	if len(v) < pme.NonceSize+pme.TagSize || len(v) > pme.NonceSize+MaxRecordValue+pme.TagSize {
		return nil, fmt.Errorf("%w: space %q: a stored record of %d bytes", ErrRecord, t.space, len(v))
	}
	pt, err := t.ring.Open(nil, nil, v, recordAD(t.space, key))
	if err != nil {
		return nil, fmt.Errorf("%w: space %q, key %x", ErrRecord, t.space, key)
	}
	return pt, nil
}

// Get returns the value of the record key, or ErrNoRecord.
func (t *RecordTx) Get(key []byte) ([]byte, error) {
	if err := t.check(key); err != nil {
		return nil, err
	}
	var v []byte
	if t.b != nil {
		v = t.b.Get(key)
	}
	if v == nil {
		if t.b != nil && t.b.Bucket(key) != nil {
			return nil, fmt.Errorf("%w: space %q: a bucket where a record belongs", ErrRecord, t.space)
		}
		return nil, fmt.Errorf("%w: space %q, key %x", ErrNoRecord, t.space, key)
	}
	return t.open(key, v)
}

// Put writes value (at most MaxRecordValue bytes) as the record key (1 to
// MaxRecordKey bytes), encrypted under the ring key with the space and key
// as associated data. A record it replaces is shredded when Update
// returns. It fails with ErrReadOnly inside View.
func (t *RecordTx) Put(key, value []byte) error {
	if err := t.check(key); err != nil {
		return err
	}
	if len(value) > MaxRecordValue {
		return fmt.Errorf("%w: a value of %d bytes", ErrRecordSize, len(value))
	}
	if !t.write {
		return ErrReadOnly
	}
	sealed := t.ring.Seal(nil, nil, value, recordAD(t.space, key))
	if t.b.Get(key) != nil {
		t.shred = true
	}
	if err := t.b.Put(key, sealed); err != nil {
		return fmt.Errorf("%w: %w", ErrFile, err)
	}
	t.wrote[string(key)] = sealed
	return nil
}

// Delete removes the record key; it is shredded when Update returns.
// Deleting a key that holds no record is not an error. It fails with
// ErrReadOnly inside View.
func (t *RecordTx) Delete(key []byte) error {
	if err := t.check(key); err != nil {
		return err
	}
	if !t.write {
		return ErrReadOnly
	}
	if t.b.Get(key) == nil {
		return nil
	}
	t.shred = true
	if err := t.b.Delete(key); err != nil {
		return fmt.Errorf("%w: %w", ErrFile, err)
	}
	t.wrote[string(key)] = nil
	return nil
}

// ForEach calls fn for every record of the space, in the order of their
// keys (bytewise), and stops at the first error, which it returns. fn must
// not Put or Delete. A record that does not open fails it with ErrRecord.
func (t *RecordTx) ForEach(fn func(key, value []byte) error) error {
	return t.ForEachPrefix(nil, fn)
}

// ForEachPrefix is ForEach over the records whose keys begin with prefix;
// it reads no other record.
func (t *RecordTx) ForEachPrefix(prefix []byte, fn func(key, value []byte) error) error {
	if t.done {
		panic("keyring: RecordTx used after its transaction")
	}
	if t.b == nil {
		return nil
	}
	c := t.b.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if v == nil || len(k) > MaxRecordKey {
			return fmt.Errorf("%w: space %q: an entry that is not a record", ErrRecord, t.space)
		}
		pt, err := t.open(k, v)
		if err != nil {
			return err
		}
		if err := fn(bytes.Clone(k), pt); err != nil {
			return err
		}
	}
	return nil
}

type rewrappedRecord struct {
	space string
	key   []byte
	w     []byte
}

// rewrapRecords rewraps every record of every space from the ring key old
// to next, and returns what it wrote.
func rewrapRecords(ctx context.Context, tx *bolt.Tx, old, next cipher.AEAD) ([]rewrappedRecord, error) {
	top := tx.Bucket(bucketRecords)
	if top == nil {
		return nil, nil
	}
	var all []rewrappedRecord
	err := top.ForEachBucket(func(name []byte) error {
		space := string(name)
		b := top.Bucket(name)
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if len(all)%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			if v == nil || len(k) > MaxRecordKey ||
				len(v) < pme.NonceSize+pme.TagSize || len(v) > pme.NonceSize+MaxRecordValue+pme.TagSize {
				return fmt.Errorf("%w: space %q: an entry of %d and %d bytes", ErrRecord, space, len(k), len(v))
			}
			ad := recordAD(space, k)
			pt, err := old.Open(nil, nil, v, ad)
			if err != nil {
				return fmt.Errorf("%w: space %q, key %x", ErrRecord, space, k)
			}
			all = append(all, rewrappedRecord{space, bytes.Clone(k), next.Seal(nil, nil, pt, ad)})
			clear(pt)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, e := range all {
		if err := top.Bucket([]byte(e.space)).Put(e.key, e.w); err != nil {
			return nil, err
		}
	}
	return all, nil
}

// readBackRecords checks that the file holds exactly the records of all.
func readBackRecords(tx *bolt.Tx, all []rewrappedRecord) error {
	top := tx.Bucket(bucketRecords)
	n := 0
	if top != nil {
		top.ForEachBucket(func(name []byte) error {
			n += top.Bucket(name).Stats().KeyN
			return nil
		})
	}
	for _, e := range all {
		if !bytes.Equal(top.Bucket([]byte(e.space)).Get(e.key), e.w) {
			return fmt.Errorf("%w: a rewrapped record does not read back", ErrFile)
		}
	}
	if n != len(all) {
		return fmt.Errorf("%w: %d records rewrapped, %d found", ErrFile, len(all), n)
	}
	return nil
}
