package keyring

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
)

// RingKeySize is the size of the ring key in bytes (AES-256).
const RingKeySize = 32

// DefaultLockTimeout is how long an operation waits for the ring file's
// lock unless WithLockTimeout says otherwise.
const DefaultLockTimeout = 10 * time.Second

// The layout of the ring file: two buckets.
//
//	meta  "format"   "sop-pme-keyring-v2"
//	      "ring-key" the ring key as the master wrapped it (Master.Encrypt)
//	deks  storage_id (32 bytes) → nonce(12) ‖ AES-256-GCM(ring key, DEK, adWrap ‖ storage_id) ‖ tag(16)
var (
	bucketMeta  = []byte("meta")
	bucketDEKs  = []byte("deks")
	keyFormat   = []byte("format")
	keyRingKey  = []byte("ring-key")
	formatV2    = []byte("sop-pme-keyring-v2")
	errNoMeta   = errors.New("keyring: no ring in this file")
	errStale    = errors.New("keyring: the ring key changed")
	maxAttempts = 4
)

// maxWrappedRingKey bounds the wrapped ring key read from the file before it
// is handed to the master. KMS ciphertexts of a 32-byte key are well under
// it.
const maxWrappedRingKey = 8 << 10

// adWrap is the associated data of a wrapped DEK, followed by its
// storage_id. It is the one version-1 rings used, so that a DEK wrap is the
// same AES-256-GCM construction under either level.
const adWrap = "sop-pme keyring v1: dek for storage_id "

func wrapAD(id storageid.ID) []byte { return append([]byte(adWrap), id[:]...) }

// wrappedLen reports whether n is the length of a wrapped DEK of 16, 24 or
// 32 bytes: nonce ‖ ciphertext ‖ tag.
func wrappedLen(n int) bool {
	switch n - pme.NonceSize - pme.TagSize {
	case 16, 24, 32:
		return true
	}
	return false
}

// An Option configures Open.
type Option func(*config) error

type config struct {
	create      bool
	readOnly    bool
	lockTimeout time.Duration
}

// WithCreate lets Open create the ring file (mode 0600, in an existing
// directory) and a new ring key wrapped under the master, if the file does
// not exist. Without it, a missing file is ErrNoRing.
func WithCreate() Option {
	return func(c *config) error { c.create = true; return nil }
}

// WithReadOnly opens the ring for resolution only: the file is opened
// read-only under a shared lock, nothing is ever written, and every change
// returns ErrReadOnly. It cannot be combined with WithCreate.
func WithReadOnly() Option {
	return func(c *config) error { c.readOnly = true; return nil }
}

// WithLockTimeout sets how long an operation waits for the ring file's lock
// held by another Ring or process (DefaultLockTimeout if not given). The
// wait also ends when the operation's context is done.
func WithLockTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("keyring: lock timeout %v is not positive", d)
		}
		c.lockTimeout = d
		return nil
	}
}

// A Ring maps storage_ids to DEKs wrapped under a ring key, which a master
// key wraps (see the package documentation). It implements
// reader.KeyResolver. It is safe for concurrent use, and any number of Rings
// and processes may use one file at once.
type Ring struct {
	path string
	cfg  config

	// mu orders this Ring's own operations as the file lock orders them
	// (writers alone, readers together), so that the Ring never polls for
	// a lock it holds itself.
	mu sync.RWMutex

	kmu    sync.Mutex
	master Master
	keys   []ringKey // unwrapped ring keys by wrapped bytes, newest first
}

type ringKey struct {
	wrapped []byte
	aead    cipher.AEAD
}

var _ reader.KeyResolver = (*Ring)(nil)

// An Entry is one DEK for PutBatch.
type Entry struct {
	ID  storageid.ID
	DEK pme.DEK
}

// Open opens the ring in the file at path under the master key m (a KEK or
// a KMS Keeper). It checks that m opens the ring key, and returns
// ErrMaster (with ErrWrongKEK for a KEK) if it does not. It returns
// ErrNoRing if the file does not exist and WithCreate was not given,
// ErrLegacyFormat for a version-1 JSON ring, and ErrFile for anything else
// that is not a ring.
func Open(ctx context.Context, path string, m Master, opts ...Option) (*Ring, error) {
	cfg := config{lockTimeout: DefaultLockTimeout}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if cfg.create && cfg.readOnly {
		return nil, errors.New("keyring: WithCreate and WithReadOnly exclude each other")
	}
	if err := checkMaster(m); err != nil {
		return nil, err
	}
	r := &Ring{path: path, cfg: cfg, master: m}
	if cfg.create {
		if err := r.create(ctx); err != nil {
			return nil, err
		}
	}
	w, err := r.readRingKey(ctx)
	if err != nil {
		return nil, noMeta(err)
	}
	if _, err := r.unwrapRingKey(ctx, w); err != nil {
		return nil, err
	}
	return r, nil
}

func checkMaster(m Master) error {
	if m == nil {
		return fmt.Errorf("%w: no master key", ErrKEK)
	}
	if k, ok := m.(KEK); ok && k.IsZero() {
		return fmt.Errorf("%w: the zero KEK holds no key", ErrKEK)
	}
	return nil
}

// Path returns the ring file's path.
func (r *Ring) Path() string { return r.path }

// create makes the file and the ring in it unless they exist. The new ring
// key is wrapped before the file is locked; if another process created the
// ring meanwhile, its ring is kept and the new key is dropped.
func (r *Ring) create(ctx context.Context) error {
	if st, err := os.Stat(r.path); err == nil && st.Size() > 0 {
		_, err := r.readRingKey(ctx)
		if !errors.Is(err, errNoMeta) {
			return err
		}
	}
	raw := make([]byte, RingKeySize)
	rand.Read(raw)
	defer clear(raw)
	aead, err := newGCM(raw)
	if err != nil {
		return err
	}
	r.kmu.Lock()
	m := r.master
	r.kmu.Unlock()
	w, err := m.Encrypt(ctx, raw)
	if err != nil {
		return fmt.Errorf("keyring: the master key did not wrap a new ring key: %w", err)
	}
	if len(w) == 0 || len(w) > maxWrappedRingKey {
		return fmt.Errorf("keyring: the master key wrapped a ring key into %d bytes", len(w))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	created := false
	err = r.withDB(ctx, accessCreate, func(db *bolt.DB) error {
		return db.Update(func(tx *bolt.Tx) error {
			if tx.Bucket(bucketMeta) != nil || tx.Bucket(bucketDEKs) != nil {
				return nil
			}
			meta, err := tx.CreateBucket(bucketMeta)
			if err != nil {
				return err
			}
			if _, err := tx.CreateBucket(bucketDEKs); err != nil {
				return err
			}
			if err := meta.Put(keyFormat, formatV2); err != nil {
				return err
			}
			created = true
			return meta.Put(keyRingKey, w)
		})
	})
	if err != nil {
		return err
	}
	if created {
		r.remember(w, aead)
		return syncDir(r.path)
	}
	return nil
}

// buckets returns the ring's buckets and its wrapped ring key, as found in
// tx, checked.
func buckets(tx *bolt.Tx) (meta, deks *bolt.Bucket, wrapped []byte, err error) {
	meta, deks = tx.Bucket(bucketMeta), tx.Bucket(bucketDEKs)
	if meta == nil && deks == nil {
		return nil, nil, nil, errNoMeta
	}
	if meta == nil || deks == nil {
		return nil, nil, nil, fmt.Errorf("%w: missing bucket", ErrFile)
	}
	if f := meta.Get(keyFormat); !bytes.Equal(f, formatV2) {
		return nil, nil, nil, fmt.Errorf("%w: format %.40q", ErrFile, f)
	}
	wrapped = meta.Get(keyRingKey)
	if len(wrapped) == 0 || len(wrapped) > maxWrappedRingKey {
		return nil, nil, nil, fmt.Errorf("%w: wrapped ring key of %d bytes", ErrFile, len(wrapped))
	}
	return meta, deks, wrapped, nil
}

// readRingKey returns a copy of the wrapped ring key.
func (r *Ring) readRingKey(ctx context.Context) ([]byte, error) {
	var w []byte
	r.mu.RLock()
	defer r.mu.RUnlock()
	err := r.withDB(ctx, accessRead, func(db *bolt.DB) error {
		return db.View(func(tx *bolt.Tx) error {
			_, _, wr, err := buckets(tx)
			w = bytes.Clone(wr)
			return err
		})
	})
	if errors.Is(err, errNoMeta) {
		return nil, fmt.Errorf("%w: %s", errNoMeta, r.path)
	}
	return w, err
}

func newGCM(key []byte) (cipher.AEAD, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("keyring: %w", err)
	}
	return cipher.NewGCMWithRandomNonce(b)
}

// cached returns the unwrapped ring key whose wrapped bytes are w, if this
// Ring has unwrapped it before.
func (r *Ring) cached(w []byte) cipher.AEAD {
	r.kmu.Lock()
	defer r.kmu.Unlock()
	for _, k := range r.keys {
		if bytes.Equal(k.wrapped, w) {
			return k.aead
		}
	}
	return nil
}

func (r *Ring) remember(w []byte, aead cipher.AEAD) {
	r.kmu.Lock()
	defer r.kmu.Unlock()
	keys := []ringKey{{wrapped: bytes.Clone(w), aead: aead}}
	for _, k := range r.keys {
		if len(keys) < 4 && !bytes.Equal(k.wrapped, w) {
			keys = append(keys, k)
		}
	}
	r.keys = keys
}

// rawRingKey unwraps w with the master.
func (r *Ring) rawRingKey(ctx context.Context, w []byte) ([]byte, error) {
	r.kmu.Lock()
	m := r.master
	r.kmu.Unlock()
	if len(w) == 0 || len(w) > maxWrappedRingKey {
		return nil, fmt.Errorf("%w: wrapped ring key of %d bytes", ErrFile, len(w))
	}
	raw, err := m.Decrypt(ctx, w)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: %s: %w", ErrMaster, r.path, err)
	}
	if len(raw) != RingKeySize {
		clear(raw)
		return nil, fmt.Errorf("%w: a ring key of %d bytes", ErrFile, len(raw))
	}
	return raw, nil
}

// unwrapRingKey returns the ring key whose wrapped bytes are w, from the
// cache or from the master.
func (r *Ring) unwrapRingKey(ctx context.Context, w []byte) (cipher.AEAD, error) {
	if a := r.cached(w); a != nil {
		return a, nil
	}
	raw, err := r.rawRingKey(ctx, w)
	if err != nil {
		return nil, err
	}
	defer clear(raw)
	aead, err := newGCM(raw)
	if err != nil {
		return nil, err
	}
	r.remember(w, aead)
	return aead, nil
}

// update runs fn in one write transaction with the ring key current in that
// transaction. If the transaction holds a ring key this Ring has not
// unwrapped (another Ring re-keyed or rotated), it is given up, the key is
// unwrapped outside it, and the transaction starts again; the last attempt
// unwraps inside the transaction.
//
// If readBack is not nil, it runs in a read transaction on the same open
// file after the commit, and its error fails the update: what was written
// must be found again by the ordinary lookup before it is acknowledged.
func (r *Ring) update(ctx context.Context, fn func(meta, deks *bolt.Bucket, w []byte, ring cipher.AEAD) error, readBack func(deks *bolt.Bucket) error) error {
	if r.cfg.readOnly {
		return ErrReadOnly
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for attempt := 1; ; attempt++ {
		var unknown []byte
		err := r.withDB(ctx, accessWrite, func(db *bolt.DB) error {
			err := db.Update(func(tx *bolt.Tx) error {
				meta, deks, w, err := buckets(tx)
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
				return fn(meta, deks, w, ring)
			})
			if err != nil || readBack == nil {
				return err
			}
			return db.View(func(tx *bolt.Tx) error {
				_, deks, _, err := buckets(tx)
				if err != nil {
					return err
				}
				return readBack(deks)
			})
		})
		if !errors.Is(err, errStale) || unknown == nil {
			return err
		}
		if _, err := r.unwrapRingKey(ctx, unknown); err != nil {
			return err
		}
	}
}

// Put wraps dek for the object id under the ring key and writes it in one
// transaction, replacing any DEK held for id. When Put returns nil the DEK
// is on disk.
func (r *Ring) Put(ctx context.Context, id storageid.ID, dek pme.DEK) error {
	return r.PutBatch(ctx, []Entry{{ID: id, DEK: dek}})
}

// PutBatch is Put for many DEKs in one transaction (one lock, one sync):
// either all are written or none. A storage_id given twice keeps the last
// DEK.
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
	return r.update(ctx, func(_, deks *bolt.Bucket, _ []byte, ring cipher.AEAD) error {
		for i, e := range entries {
			wrapped[i] = ring.Seal(nil, nil, raws[i], wrapAD(e.ID))
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
	})
}

// ResolveDEK returns the DEK of the object id. It returns ErrNotFound
// (which matches reader.ErrNoKey) if the ring has none, and ErrUnwrap if the
// wrapped DEK does not open for id.
func (r *Ring) ResolveDEK(ctx context.Context, id storageid.ID) (pme.DEK, error) {
	var w, v []byte
	r.mu.RLock()
	err := r.withDB(ctx, accessRead, func(db *bolt.DB) error {
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
func (r *Ring) Delete(ctx context.Context, id storageid.ID) error {
	return noMeta(r.update(ctx, func(_, deks *bolt.Bucket, _ []byte, _ cipher.AEAD) error {
		return deks.Delete(id[:])
	}, func(deks *bolt.Bucket) error {
		if deks.Get(id[:]) != nil {
			return fmt.Errorf("%w: the DEK of %s is still found after its deletion", ErrFile, id)
		}
		return nil
	}))
}

// Len returns the number of DEKs held.
func (r *Ring) Len(ctx context.Context) (int, error) {
	var n int
	r.mu.RLock()
	defer r.mu.RUnlock()
	err := r.withDB(ctx, accessRead, func(db *bolt.DB) error {
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
	err := r.withDB(ctx, accessRead, func(db *bolt.DB) error {
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

// Rotate makes m the ring's master: it unwraps the ring key with the
// current master, wraps it under m and writes the one wrapped key. No DEK is
// rewritten. Both master calls happen outside the write transaction, which
// replaces the wrapped key only if it is still the one unwrapped. After
// Rotate, the old master no longer opens the ring.
func (r *Ring) Rotate(ctx context.Context, m Master) error {
	if err := checkMaster(m); err != nil {
		return err
	}
	if r.cfg.readOnly {
		return ErrReadOnly
	}
	for range maxAttempts {
		w, err := r.readRingKey(ctx)
		if err != nil {
			return noMeta(err)
		}
		raw, err := r.rawRingKey(ctx, w)
		if err != nil {
			return err
		}
		aead, err := newGCM(raw)
		if err != nil {
			clear(raw)
			return err
		}
		nw, err := m.Encrypt(ctx, raw)
		clear(raw)
		if err != nil {
			return fmt.Errorf("keyring: the new master key did not wrap the ring key: %w", err)
		}
		if len(nw) == 0 || len(nw) > maxWrappedRingKey {
			return fmt.Errorf("keyring: the new master key wrapped the ring key into %d bytes", len(nw))
		}
		err = r.compareAndSwap(ctx, w, nw, nil, nil)
		if errors.Is(err, errStale) {
			continue
		}
		if err != nil {
			return noMeta(err)
		}
		r.kmu.Lock()
		r.master = m
		r.kmu.Unlock()
		r.remember(nw, aead)
		return nil
	}
	return fmt.Errorf("%w: the ring key changed %d times during the rotation", ErrBusy, maxAttempts)
}

// Rekey makes a new random ring key, wraps it under m (the current master
// if m is nil), and rewraps every DEK under it, all in one transaction: the
// file holds either every DEK under the old ring key or every DEK under the
// new one. No object is touched (Section 11.6). It fails with ErrUnwrap,
// changing nothing, if a wrapped DEK does not open. The master is called
// outside the transaction.
func (r *Ring) Rekey(ctx context.Context, m Master) error {
	if m == nil {
		r.kmu.Lock()
		m = r.master
		r.kmu.Unlock()
	}
	if err := checkMaster(m); err != nil {
		return err
	}
	if r.cfg.readOnly {
		return ErrReadOnly
	}
	for range maxAttempts {
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
		if err != nil {
			clear(raw)
			return err
		}
		nw, err := m.Encrypt(ctx, raw)
		clear(raw)
		if err != nil {
			return fmt.Errorf("keyring: the master key did not wrap the new ring key: %w", err)
		}
		if len(nw) == 0 || len(nw) > maxWrappedRingKey {
			return fmt.Errorf("keyring: the master key wrapped the ring key into %d bytes", len(nw))
		}
		var all []rewrapped
		err = r.compareAndSwap(ctx, w, nw, func(deks *bolt.Bucket) error {
			var err error
			all, err = rewrapAll(ctx, deks, old, next)
			return err
		}, func(deks *bolt.Bucket) error { return readBackAll(deks, all) })
		if errors.Is(err, errStale) {
			continue
		}
		if err != nil {
			return noMeta(err)
		}
		r.kmu.Lock()
		r.master = m
		r.kmu.Unlock()
		r.remember(nw, next)
		return nil
	}
	return fmt.Errorf("%w: the ring key changed %d times during the re-key", ErrBusy, maxAttempts)
}

// compareAndSwap replaces the wrapped ring key w by nw in one write
// transaction, after running also (if not nil), provided the file still
// holds w; else it returns errStale and changes nothing. Then it reads the
// ring key back, and runs readBack (if not nil), as update does.
func (r *Ring) compareAndSwap(ctx context.Context, w, nw []byte, also, readBack func(deks *bolt.Bucket) error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.withDB(ctx, accessWrite, func(db *bolt.DB) error {
		err := db.Update(func(tx *bolt.Tx) error {
			meta, deks, cur, err := buckets(tx)
			if err != nil {
				return err
			}
			if !bytes.Equal(cur, w) {
				return errStale
			}
			if also != nil {
				if err := also(deks); err != nil {
					return err
				}
			}
			return meta.Put(keyRingKey, nw)
		})
		if err != nil {
			return err
		}
		return db.View(func(tx *bolt.Tx) error {
			_, deks, cur, err := buckets(tx)
			if err != nil {
				return err
			}
			if !bytes.Equal(cur, nw) {
				return fmt.Errorf("%w: the new ring key does not read back", ErrFile)
			}
			if readBack != nil {
				return readBack(deks)
			}
			return nil
		})
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
