// Package keyring resolves the DEK of an object by its storage_id from DEKs
// wrapped under a key-encryption key (KEK) and kept outside the objects, as
// SOP-PME-1 Section 11.6 asks: "SOP SHOULD keep the wrapped DEK outside the
// encrypted Parquet file", so that the KEK can be rotated and every DEK
// rewrapped without touching an object's bytes.
//
// Each DEK is wrapped with AES-256-GCM under the KEK, with a fresh random
// nonce, and with the object's storage_id in the associated data: a wrapped
// DEK moved to another storage_id does not unwrap. That binding matters
// because AES-GCM is not key-committing (one ciphertext can be valid under
// two keys), so key resolution must follow storage_id → DEK, never anything
// the object says about itself (Section 11.5).
//
// A Ring is persisted to one file, replaced atomically (temporary file,
// fsync, rename, fsync of the directory) on every change. The file holds only
// wrapped keys and a check value that recognises the KEK.
package keyring

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
)

// KEKSize is the size of a key-encryption key in bytes (AES-256).
const KEKSize = 32

// Errors returned (wrapped) by this package.
var (
	// ErrWrongKEK reports a KEK that is not the one the ring's file was
	// written under.
	ErrWrongKEK = errors.New("keyring: wrong key-encryption key")
	// ErrUnwrap reports a wrapped DEK that does not open under the KEK for
	// its storage_id: it was altered, or moved from another storage_id.
	ErrUnwrap = errors.New("keyring: wrapped DEK does not open for this storage_id")
	// ErrFile reports a ring file that is not a valid keyring.
	ErrFile = errors.New("keyring: malformed keyring file")
	// ErrKEK reports a KEK of the wrong size, or the zero KEK.
	ErrKEK = errors.New("keyring: a KEK is 32 bytes")
	// ErrNotFound reports a storage_id with no DEK in the ring. It wraps
	// reader.ErrNoKey, so errors.Is(err, reader.ErrNoKey) holds too.
	ErrNotFound = fmt.Errorf("keyring: %w", reader.ErrNoKey)
)

// A KEK is a key-encryption key. Like pme.DEK it never prints.
type KEK struct {
	key []byte
}

// NewKEK returns a fresh random KEK from crypto/rand.
func NewKEK() KEK {
	k := make([]byte, KEKSize)
	rand.Read(k)
	return KEK{key: k}
}

// KEKFromBytes returns the KEK whose raw bytes are b (32 bytes, copied).
func KEKFromBytes(b []byte) (KEK, error) {
	if len(b) != KEKSize {
		return KEK{}, fmt.Errorf("%w: got %d", ErrKEK, len(b))
	}
	return KEK{key: append([]byte(nil), b...)}, nil
}

// Bytes returns a copy of the raw KEK.
func (k KEK) Bytes() []byte { return append([]byte(nil), k.key...) }

const redacted = "keyring.KEK(REDACTED)"

// String returns a placeholder: a KEK is never printed.
func (k KEK) String() string { return redacted }

// GoString returns a placeholder: a KEK is never printed.
func (k KEK) GoString() string { return redacted }

// Format prints the placeholder for every verb.
func (k KEK) Format(f fmt.State, verb rune) { f.Write([]byte(redacted)) }

func (k KEK) aead() (cipher.AEAD, error) {
	if len(k.key) != KEKSize {
		return nil, fmt.Errorf("%w: the zero KEK holds no key", ErrKEK)
	}
	b, err := aes.NewCipher(k.key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCMWithRandomNonce(b)
}

// Associated data: a domain separator, then the storage_id for wrapped
// DEKs.
const (
	formatName = "sop-pme-keyring-v1"
	adCheck    = "sop-pme keyring v1: kek check"
	adWrap     = "sop-pme keyring v1: dek for storage_id "
)

func wrapAD(id storageid.ID) []byte { return append([]byte(adWrap), id[:]...) }

// maxFileSize bounds the ring file read by Open.
const maxFileSize = 1 << 30

// A Ring maps storage_ids to wrapped DEKs. It implements
// reader.KeyResolver. It is safe for concurrent use.
type Ring struct {
	path string

	mu      sync.Mutex
	aead    cipher.AEAD
	check   []byte
	wrapped map[storageid.ID][]byte
}

var _ reader.KeyResolver = (*Ring)(nil)

type fileFormat struct {
	Format string            `json:"format"`
	Check  string            `json:"check"`
	Keys   map[string]string `json:"keys"`
}

// Open opens the ring persisted at path under kek, creating an empty one if
// the file does not exist. It returns ErrWrongKEK if the file was written
// under another KEK.
func Open(path string, kek KEK) (*Ring, error) {
	aead, err := kek.aead()
	if err != nil {
		return nil, err
	}
	r := &Ring{path: path, aead: aead, wrapped: make(map[storageid.ID][]byte)}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		r.check = aead.Seal(nil, nil, nil, []byte(adCheck))
		return r, r.persist()
	}
	if err != nil {
		return nil, fmt.Errorf("keyring: %w", err)
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("keyring: %w", err)
	}
	if len(raw) > maxFileSize {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrFile, maxFileSize)
	}
	if err := r.load(raw); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *Ring) load(raw []byte) error {
	var ff fileFormat
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ff); err != nil {
		return fmt.Errorf("%w: %v", ErrFile, err)
	}
	if dec.More() || ff.Format != formatName {
		return fmt.Errorf("%w: format %q", ErrFile, ff.Format)
	}
	check, err := base64.StdEncoding.Strict().DecodeString(ff.Check)
	if err != nil {
		return fmt.Errorf("%w: check value", ErrFile)
	}
	if _, err := r.aead.Open(nil, nil, check, []byte(adCheck)); err != nil {
		return ErrWrongKEK
	}
	r.check = check
	for k, v := range ff.Keys {
		id, err := storageid.Parse(k)
		if err != nil || id.String() != k {
			return fmt.Errorf("%w: storage_id %q", ErrFile, k)
		}
		w, err := base64.StdEncoding.Strict().DecodeString(v)
		if err != nil || len(w) > 64+pme.NonceSize+pme.TagSize {
			return fmt.Errorf("%w: wrapped DEK of %s", ErrFile, k)
		}
		r.wrapped[id] = w
	}
	return nil
}

// Put wraps dek for the object id and persists the ring. It replaces any
// DEK already held for id.
func (r *Ring) Put(ctx context.Context, id storageid.ID, dek pme.DEK) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if dek.IsZero() {
		return pme.ErrNoKey
	}
	raw := dek.Bytes()
	defer clear(raw)
	r.mu.Lock()
	defer r.mu.Unlock()
	old, had := r.wrapped[id]
	r.wrapped[id] = r.aead.Seal(nil, nil, raw, wrapAD(id))
	if err := r.persist(); err != nil {
		if had {
			r.wrapped[id] = old
		} else {
			delete(r.wrapped, id)
		}
		return err
	}
	return nil
}

// ResolveDEK returns the DEK of the object id. It returns ErrNotFound
// (which matches reader.ErrNoKey) if the ring has none, and ErrUnwrap if the
// wrapped DEK does not open for id.
func (r *Ring) ResolveDEK(ctx context.Context, id storageid.ID) (pme.DEK, error) {
	if err := ctx.Err(); err != nil {
		return pme.DEK{}, err
	}
	r.mu.Lock()
	w, ok := r.wrapped[id]
	aead := r.aead
	r.mu.Unlock()
	if !ok {
		return pme.DEK{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	raw, err := aead.Open(nil, nil, w, wrapAD(id))
	if err != nil {
		return pme.DEK{}, fmt.Errorf("%w: %s", ErrUnwrap, id)
	}
	defer clear(raw)
	return pme.DEKFromBytes(raw)
}

// Delete forgets the DEK of id and persists the ring. Forgetting the last
// copy of a DEK makes its object unreadable (crypto-shredding).
func (r *Ring) Delete(ctx context.Context, id storageid.ID) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old, ok := r.wrapped[id]
	if !ok {
		return nil
	}
	delete(r.wrapped, id)
	if err := r.persist(); err != nil {
		r.wrapped[id] = old
		return err
	}
	return nil
}

// Len returns the number of DEKs held.
func (r *Ring) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.wrapped)
}

// Rewrap unwraps every DEK under the current KEK and wraps it again under
// newKEK, then persists the ring atomically: the file holds either every DEK
// under the old KEK or every DEK under the new one. No object is touched
// (Section 11.6). It fails with ErrUnwrap, changing nothing, if any wrapped
// DEK does not open.
func (r *Ring) Rewrap(ctx context.Context, newKEK KEK) error {
	aead, err := newKEK.aead()
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	next := make(map[storageid.ID][]byte, len(r.wrapped))
	for id, w := range r.wrapped {
		if err := ctx.Err(); err != nil {
			return err
		}
		raw, err := r.aead.Open(nil, nil, w, wrapAD(id))
		if err != nil {
			return fmt.Errorf("%w: %s", ErrUnwrap, id)
		}
		next[id] = aead.Seal(nil, nil, raw, wrapAD(id))
		clear(raw)
	}
	oldAEAD, oldCheck, oldWrapped := r.aead, r.check, r.wrapped
	r.aead, r.check, r.wrapped = aead, aead.Seal(nil, nil, nil, []byte(adCheck)), next
	if err := r.persist(); err != nil {
		r.aead, r.check, r.wrapped = oldAEAD, oldCheck, oldWrapped
		return err
	}
	return nil
}

// persist writes the ring to a temporary file beside path, syncs it, and
// renames it over path, then syncs the directory.
func (r *Ring) persist() error {
	ff := fileFormat{Format: formatName, Check: base64.StdEncoding.EncodeToString(r.check), Keys: make(map[string]string, len(r.wrapped))}
	for id, w := range r.wrapped {
		ff.Keys[id.String()] = base64.StdEncoding.EncodeToString(w)
	}
	raw, err := json.MarshalIndent(ff, "", "  ")
	if err != nil {
		return fmt.Errorf("keyring: %w", err)
	}
	dir := filepath.Dir(r.path)
	tmp, err := os.CreateTemp(dir, ".keyring-*.tmp")
	if err != nil {
		return fmt.Errorf("keyring: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(raw); err != nil {
		tmp.Close()
		return fmt.Errorf("keyring: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("keyring: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("keyring: %w", err)
	}
	if err := os.Rename(tmp.Name(), r.path); err != nil {
		return fmt.Errorf("keyring: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// Equal reports whether two KEKs are the same key, in constant time.
func (k KEK) Equal(o KEK) bool { return subtle.ConstantTimeCompare(k.key, o.key) == 1 }
