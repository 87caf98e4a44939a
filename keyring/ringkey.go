package keyring

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"errors"
	"fmt"
	"os"

	bolt "go.etcd.io/bbolt"
)

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
	err := r.withDB(ctx, accessRead, func(db *bolt.DB, _ *os.File) error {
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

// rawRingKey unwraps w with the master, or with a master the reload
// function finds (WithReload).
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
		var ok bool
		if raw, ok = r.reloaded(ctx, w); !ok {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, r.masterErr(err)
		}
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

// wrapRingKey wraps the raw ring key under the master m, outside any
// transaction, and checks that what m returns fits the ring file. master
// and key name the two in its errors.
func wrapRingKey(ctx context.Context, m Master, raw []byte, master, key string) ([]byte, error) {
	w, err := m.Encrypt(ctx, raw)
	if err != nil {
		return nil, fmt.Errorf("keyring: the %s did not wrap %s: %w", master, key, err)
	}
	if len(w) == 0 || len(w) > maxWrappedRingKey {
		return nil, fmt.Errorf("keyring: the %s wrapped %s into %d bytes", master, key, len(w))
	}
	return w, nil
}

// adopt makes m the ring's master once the file holds the ring key aead
// wrapped under it as w.
func (r *Ring) adopt(m Master, w []byte, aead cipher.AEAD) {
	r.kmu.Lock()
	r.master = m
	r.kmu.Unlock()
	r.remember(w, aead)
}
