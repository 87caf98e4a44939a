package keyring

import (
	"context"
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

// The layout of the ring file: two buckets, and a third once a record is
// written (Records).
//
//	meta     "format"   "sop-pme-keyring-v2"
//	         "ring-key" the ring key as the master wrapped it (Master.Encrypt)
//	deks     storage_id (32 bytes) → nonce(12) ‖ AES-256-GCM(ring key, DEK, adWrap ‖ storage_id) ‖ tag(16)
//	records  a nested bucket per space (its name, 1 to MaxSpace bytes), in it
//	         key (1 to MaxRecordKey bytes) → nonce(12) ‖ AES-256-GCM(ring key, value,
//	         adRecord ‖ uvarint(len(space)) ‖ space ‖ key) ‖ tag(16)
//
// The records bucket is optional, so a ring written before it existed is
// read as it is; the format stays "sop-pme-keyring-v2".
var (
	bucketMeta = []byte("meta")
	bucketDEKs = []byte("deks")
	keyFormat  = []byte("format")
	keyRingKey = []byte("ring-key")
	formatV2   = []byte("sop-pme-keyring-v2")
	errNoMeta  = errors.New("keyring: no ring in this file")
	errStale   = errors.New("keyring: the ring key changed")
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
	reload      ReloadFunc
	hook        func(step string) // tests only (export_test.go)
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
	err := r.retry("the opening", func(int) error {
		w, err := r.readRingKey(ctx)
		if err != nil {
			return noMeta(err)
		}
		_, err = r.unwrapRingKey(ctx, w)
		return err
	})
	if err != nil {
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
	w, err := wrapRingKey(ctx, r.Master(), raw, "master key", "a new ring key")
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	created := false
	err = r.withDB(ctx, accessCreate, func(db *bolt.DB, _ *os.File) error {
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
