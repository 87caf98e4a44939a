package keyring

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/subtle"
	"fmt"
)

// KEKSize is the size of a key-encryption key in bytes (AES-256).
const KEKSize = 32

// A Master wraps and unwraps the ring key: the top level of the two-level
// envelope (Section 11.6). A KEK is one; *gocloud.dev/secrets.Keeper
// satisfies the interface as it is, so a KMS (Vault Transit, AWS KMS, GCP
// KMS, Azure Key Vault) can hold the master key without this package
// importing any driver.
//
// Encrypt must authenticate what it returns: Decrypt of anything that
// Encrypt did not produce under the same key must fail. The ring never
// calls a Master for a DEK, only for the one ring key, so rotating the
// master rewrites one wrapped key, not every DEK.
type Master interface {
	Encrypt(ctx context.Context, plaintext []byte) ([]byte, error)
	Decrypt(ctx context.Context, ciphertext []byte) ([]byte, error)
}

// A KEK is a key-encryption key held in memory: a 32-byte AES-256 key used
// as the Master of a ring.
//
// Like pme.DEK, a KEK never prints: String, GoString and every fmt verb show
// a placeholder. In an unexported struct field fmt cannot call those
// methods and prints what it finds, so the key sits two pointers deep: fmt
// prints a pointer there as an address, and even for a verb a pointer does
// not take (%s, %q), where it prints the struct the pointer points to, it
// prints the pointers inside that struct as addresses. The raw key leaves
// only through Bytes.
//
// The zero KEK holds no key; its methods return ErrKEK.
type KEK struct {
	s *kekState
}

type kekState struct {
	key  *[KEKSize]byte
	aead cipher.AEAD // nonce ‖ ciphertext ‖ tag, nonce from crypto/rand
}

var _ Master = KEK{}

// NewKEK returns a fresh random KEK from crypto/rand.
func NewKEK() KEK {
	k := make([]byte, KEKSize)
	defer clear(k)
	rand.Read(k) // never returns an error; crashes the program if the OS RNG fails
	kek, err := newKEK(k)
	if err != nil {
		panic("keyring: internal error: " + err.Error())
	}
	return kek
}

// KEKFromBytes returns the KEK whose raw bytes are b (32 bytes, copied).
func KEKFromBytes(b []byte) (KEK, error) {
	if len(b) != KEKSize {
		return KEK{}, fmt.Errorf("%w: got %d bytes", ErrKEK, len(b))
	}
	return newKEK(b)
}

// newKEK makes a KEK of a copy of key, which must be KEKSize bytes.
func newKEK(key []byte) (KEK, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return KEK{}, fmt.Errorf("%w: %v", ErrKEK, err)
	}
	aead, err := cipher.NewGCMWithRandomNonce(b)
	if err != nil {
		return KEK{}, fmt.Errorf("keyring: %w", err)
	}
	return KEK{&kekState{key: (*[KEKSize]byte)(bytes.Clone(key)), aead: aead}}, nil
}

// Bytes returns a copy of the raw KEK, for storing it (see CreateKEKFile).
// Handle it as a secret.
func (k KEK) Bytes() []byte {
	if k.s == nil {
		return nil
	}
	return bytes.Clone(k.s.key[:])
}

// IsZero reports whether k is the zero KEK, which holds no key.
func (k KEK) IsZero() bool { return k.s == nil }

// Equal reports whether two KEKs are the same key, in constant time.
func (k KEK) Equal(o KEK) bool {
	if k.s == nil || o.s == nil {
		return k.s == o.s
	}
	return subtle.ConstantTimeCompare(k.s.key[:], o.s.key[:]) == 1
}

// adMaster is the associated data of every KEK.Encrypt: it separates a key
// wrapped by a KEK as a Master from a DEK wrapped under a version-1 KEK
// (adWrap) and from the version-1 check value (adCheck), so no ciphertext of
// one kind opens as another.
const adMaster = "sop-pme keyring v2: master wrap"

// Encrypt seals plaintext under the KEK with AES-256-GCM, a fresh random
// nonce and the master domain separator as associated data. It returns
// nonce ‖ ciphertext ‖ tag. It implements Master.
func (k KEK) Encrypt(ctx context.Context, plaintext []byte) ([]byte, error) {
	if k.s == nil {
		return nil, fmt.Errorf("%w: the zero KEK holds no key", ErrKEK)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return k.s.aead.Seal(nil, nil, plaintext, []byte(adMaster)), nil
}

// Decrypt opens what Encrypt sealed under the same KEK. It returns
// ErrWrongKEK for anything else: another KEK's output, altered bytes, or
// bytes too short to hold a nonce and a tag. It implements Master.
func (k KEK) Decrypt(ctx context.Context, ciphertext []byte) ([]byte, error) {
	if k.s == nil {
		return nil, fmt.Errorf("%w: the zero KEK holds no key", ErrKEK)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(ciphertext) < k.s.aead.NonceSize()+k.s.aead.Overhead() {
		return nil, fmt.Errorf("%w: wrapped key of %d bytes", ErrWrongKEK, len(ciphertext))
	}
	pt, err := k.s.aead.Open(nil, nil, ciphertext, []byte(adMaster))
	if err != nil {
		return nil, ErrWrongKEK
	}
	return pt, nil
}

// aeadV1 returns the KEK's AEAD as a version-1 ring used it: DEKs wrapped
// directly under the KEK with adWrap, and the check value with adCheck.
func (k KEK) aeadV1() (cipher.AEAD, error) {
	if k.s == nil {
		return nil, fmt.Errorf("%w: the zero KEK holds no key", ErrKEK)
	}
	return k.s.aead, nil
}

const redacted = "keyring.KEK(REDACTED)"

// String returns a placeholder: a KEK is never printed.
func (k KEK) String() string { return redacted }

// GoString returns a placeholder: a KEK is never printed.
func (k KEK) GoString() string { return redacted }

// Format implements fmt.Formatter so that every verb (%v, %+v, %#v, %s,
// %x, %q, …) prints the placeholder and never the key.
func (k KEK) Format(f fmt.State, verb rune) { f.Write([]byte(redacted)) }

// MarshalText refuses: a KEK is never serialised as text by accident.
func (k KEK) MarshalText() ([]byte, error) { return nil, ErrNoMarshal }

// MarshalJSON refuses for the same reason as MarshalText.
func (k KEK) MarshalJSON() ([]byte, error) { return nil, ErrNoMarshal }
