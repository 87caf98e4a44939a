package pme

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/subtle"
	"fmt"
	"sync/atomic"
)

// DEKSize is the size in bytes of the data encryption keys the writer
// generates: AES-256. Keys of 16 and 24 bytes are accepted for reading, since
// DuckDB writes them too.
const DEKSize = 32

// MaxModules is the most modules one DEK may seal: 2^32 invocations of
// AES-GCM with random 96-bit nonces (NIST SP 800-38D, Section 8.3).
const MaxModules = 1 << 32

// A DEK is a data encryption key: the per-object random key that encrypts the
// footer and every column of a SOP-PME-1 object (Section 11.2, "footer key:
// per-object random DEK; column key: same per-object random DEK").
//
// A DEK never prints: String, GoString and every fmt verb show a redacted
// placeholder, so that logging an Object or an error never leaks a key. In
// an unexported struct field fmt cannot call those methods and prints what
// it finds, so the key sits two pointers deep: fmt prints the pointer there
// as an address, and even for a verb a pointer does not take (%s, %q),
// where it prints the struct the pointer points to, it prints the pointers
// inside that struct as addresses. The raw key leaves only through Bytes,
// for the key-management layer that wraps it (Section 11.6).
//
// A DEK counts the modules it seals and refuses to seal past MaxModules. The
// count is shared by copies of the same DEK value, not by two DEKs made from
// the same bytes; the writer makes exactly one DEK per object.
//
// The zero DEK is not a key; its methods return ErrNoKey.
type DEK struct {
	s *dekState
}

type dekState struct {
	key    *[]byte     // a pointer, so that fmt never prints the bytes
	aead   cipher.AEAD // nonce ‖ ciphertext ‖ tag, nonce from crypto/rand
	sealed atomic.Uint64
}

// NewDEK returns a fresh AES-256 key from crypto/rand. Keys are never derived
// from data, names or other keys.
func NewDEK() DEK {
	key := make([]byte, DEKSize)
	rand.Read(key) // never returns an error; crashes the program if the OS RNG fails
	k, err := newDEK(key)
	if err != nil {
		panic("pme: internal error: " + err.Error())
	}
	return k
}

// DEKFromBytes returns the DEK whose raw bytes are b: 16, 24 or 32 bytes for
// AES-128, AES-192 or AES-256. The bytes are copied.
func DEKFromBytes(b []byte) (DEK, error) {
	switch len(b) {
	case 16, 24, 32:
	default:
		return DEK{}, fmt.Errorf("%w: %d bytes", ErrKeySize, len(b))
	}
	return newDEK(append([]byte(nil), b...))
}

func newDEK(key []byte) (DEK, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return DEK{}, fmt.Errorf("%w: %v", ErrKeySize, err)
	}
	aead, err := cipher.NewGCMWithRandomNonce(block)
	if err != nil {
		return DEK{}, fmt.Errorf("pme: %w", err)
	}
	return DEK{&dekState{key: &key, aead: aead}}, nil
}

// Bytes returns a copy of the raw key, for wrapping it under a key-encryption
// key (Section 11.6) or handing it to another PME reader. Handle it as a
// secret.
func (k DEK) Bytes() []byte {
	if k.s == nil {
		return nil
	}
	return append([]byte(nil), *k.s.key...)
}

// Len returns the key size in bytes (16, 24 or 32), or 0 for the zero DEK.
func (k DEK) Len() int {
	if k.s == nil {
		return 0
	}
	return len(*k.s.key)
}

// IsZero reports whether k is the zero DEK, which holds no key.
func (k DEK) IsZero() bool { return k.s == nil }

// Equal reports whether k and o hold the same key, in constant time.
func (k DEK) Equal(o DEK) bool {
	if k.s == nil || o.s == nil {
		return k.s == o.s
	}
	return subtle.ConstantTimeCompare(*k.s.key, *o.s.key) == 1
}

const redacted = "pme.DEK(REDACTED)"

// String returns a placeholder: a DEK is never printed.
func (k DEK) String() string { return redacted }

// GoString returns a placeholder: a DEK is never printed.
func (k DEK) GoString() string { return redacted }

// Format implements fmt.Formatter so that every verb (%v, %+v, %#v, %s, %x,
// %q, …) prints the placeholder and never the key.
func (k DEK) Format(f fmt.State, verb rune) { f.Write([]byte(redacted)) }

// MarshalText refuses: a DEK is never serialised as text by accident. Use
// Bytes and wrap the key (Section 11.6).
func (k DEK) MarshalText() ([]byte, error) { return nil, ErrNoMarshal }

// MarshalJSON refuses for the same reason as MarshalText.
func (k DEK) MarshalJSON() ([]byte, error) { return nil, ErrNoMarshal }
