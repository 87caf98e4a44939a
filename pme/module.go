package pme

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Sizes of the parts of a module, in bytes (Section 11.3; Parquet
// Encryption.md "AES_GCM_V1").
const (
	LenSize   = 4  // the u32 little-endian length prefix
	NonceSize = 12 // the AES-GCM nonce, fresh from crypto/rand per module
	TagSize   = 16 // the AES-GCM tag
	// Overhead is what sealing adds to a plaintext: prefix, nonce and tag.
	Overhead = LenSize + NonceSize + TagSize
	// MaxPlaintext is the largest plaintext one module can hold: the length
	// prefix counts nonce, ciphertext and tag, and is a u32.
	MaxPlaintext = math.MaxUint32 - NonceSize - TagSize
)

// Seal encrypts plaintext as one SOP-PME-1 module and appends it to dst:
//
//	u32 LE n | nonce (12) | ciphertext | tag (16),  n = 12 + len(ciphertext) + 16
//
// with AES-GCM under k, a fresh random nonce, and the empty AAD: SOP-PME-1
// modules carry no AAD at all, as DuckDB writes them (Section 11.3). Because
// the AAD is empty a module is bound neither to its type nor to its position;
// only storage_id binds it (Section 11.10).
//
// Seal returns ErrNonceLimit once k has sealed MaxModules modules.
func (k DEK) Seal(dst, plaintext []byte) ([]byte, error) {
	if k.s == nil {
		return dst, ErrNoKey
	}
	if uint64(len(plaintext)) > MaxPlaintext {
		return dst, fmt.Errorf("%w: module plaintext of %d bytes", ErrTooLarge, len(plaintext))
	}
	if k.s.sealed.Add(1) > MaxModules {
		k.s.sealed.Store(MaxModules + 1) // stay saturated
		return dst, ErrNonceLimit
	}
	dst = binary.LittleEndian.AppendUint32(dst, uint32(NonceSize+len(plaintext)+TagSize))
	return k.s.aead.Seal(dst, nil, plaintext, nil), nil
}

// Sealed returns how many modules k has sealed.
func (k DEK) Sealed() uint64 {
	if k.s == nil {
		return 0
	}
	return min(k.s.sealed.Load(), MaxModules)
}

// Open authenticates and decrypts one module body (nonce ‖ ciphertext ‖ tag,
// without its length prefix) under k with the empty AAD and appends the
// plaintext to dst. On failure it returns ErrAuth and releases nothing.
func (k DEK) Open(dst, body []byte) ([]byte, error) {
	if k.s == nil {
		return dst, ErrNoKey
	}
	if len(body) < NonceSize+TagSize {
		return dst, fmt.Errorf("%w: module body of %d bytes", ErrModule, len(body))
	}
	out, err := k.s.aead.Open(dst, nil, body, nil)
	if err != nil {
		return dst, ErrAuth
	}
	return out, nil
}

// SplitModule splits the module at the start of b into its body (nonce ‖
// ciphertext ‖ tag) and the bytes after it. It checks the length prefix
// against the bytes present before anything is allocated or decrypted.
func SplitModule(b []byte) (body, rest []byte, err error) {
	if len(b) < LenSize {
		return nil, nil, fmt.Errorf("%w: %d bytes left, need a length prefix", ErrModule, len(b))
	}
	n := uint64(binary.LittleEndian.Uint32(b))
	if n < NonceSize+TagSize {
		return nil, nil, fmt.Errorf("%w: length prefix %d is shorter than nonce and tag", ErrModule, n)
	}
	if n > uint64(len(b)-LenSize) {
		return nil, nil, fmt.Errorf("%w: length prefix %d exceeds the %d bytes left", ErrModule, n, len(b)-LenSize)
	}
	return b[LenSize : LenSize+n], b[LenSize+n:], nil
}

// OpenModules authenticates and decrypts every module in b, which must be a
// whole number of back-to-back modules (as a column chunk is), and appends
// the plaintexts, concatenated, to dst. Nothing is appended unless every
// module opens.
func (k DEK) OpenModules(dst, b []byte) ([]byte, error) {
	start := len(dst)
	for len(b) > 0 {
		body, rest, err := SplitModule(b)
		if err != nil {
			clear(dst[start:])
			return dst[:start], err
		}
		if dst, err = k.Open(dst, body); err != nil {
			clear(dst[start:])
			return dst[:start], err
		}
		b = rest
	}
	return dst, nil
}
