// Package storageid implements the canonical storage identity of a SOP-PME-1
// object: the 32-byte BLAKE3 root hash that iroh-blobs assigns to the object's
// exact encrypted bytes (SOP-PME-1 Section 11.7).
//
// SOP keeps no second BLAKE3 namespace: an ID is exactly iroh-blobs' Hash, the
// plain (unkeyed) BLAKE3-256 of the blob. It is computed here with
// lukechampine.com/blake3.
//
// Only ciphertext is ever hashed into an ID. The unkeyed hash of plaintext
// Parquet must never be exposed as a storage identifier (Section 11.7), so this
// package is called by the blob stores on the bytes they store, never by code
// that holds plaintext.
package storageid

import (
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"lukechampine.com/blake3"
)

// Size is the length of an ID in bytes.
const Size = 32

// An ID is the storage_id of an object: the BLAKE3-256 root hash of its exact
// bytes, as iroh-blobs computes it (Section 11.7).
type ID [Size]byte

// ErrSyntax is returned by Parse for a string that is neither 64 hex digits
// nor 52 base32 characters encoding 32 bytes.
var ErrSyntax = errors.New("storageid: invalid storage_id syntax")

// Sum returns the ID of the object whose exact bytes are b.
func Sum(b []byte) ID {
	return ID(blake3.Sum256(b))
}

// SumReader returns the ID of the object read from r until io.EOF, and the
// number of bytes read.
func SumReader(r io.Reader) (ID, int64, error) {
	h := blake3.New(Size, nil)
	n, err := io.Copy(h, r)
	if err != nil {
		return ID{}, n, fmt.Errorf("storageid: reading object: %w", err)
	}
	var id ID
	h.Sum(id[:0])
	return id, n, nil
}

// String returns the ID as 64 lowercase hexadecimal digits, the form
// iroh-blobs 0.9x and later print.
func (id ID) String() string {
	return hex.EncodeToString(id[:])
}

// MarshalText implements encoding.TextMarshaler with the String form.
func (id ID) MarshalText() ([]byte, error) {
	return []byte(id.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler with Parse.
func (id *ID) UnmarshalText(b []byte) error {
	v, err := Parse(string(b))
	if err != nil {
		return err
	}
	*id = v
	return nil
}

// iroh-blobs 0.35 printed a Hash as RFC 4648 base32 without padding, in
// lower case.
var base32NoPad = base32.StdEncoding.WithPadding(base32.NoPadding)

// Parse parses an ID from 64 hexadecimal digits, or from the 52-character
// base32 form that iroh-blobs 0.35 printed. Either case is accepted.
func Parse(s string) (ID, error) {
	var id ID
	switch len(s) {
	case 2 * Size:
		if _, err := hex.Decode(id[:], []byte(s)); err != nil {
			return ID{}, fmt.Errorf("%w: %q", ErrSyntax, s)
		}
		return id, nil
	case 52:
		b := []byte(s)
		for i, c := range b {
			if 'a' <= c && c <= 'z' {
				b[i] = c - 'a' + 'A'
			}
		}
		n, err := base32NoPad.Decode(id[:], b)
		// Re-encoding rejects a string whose 4 unused trailing bits are not
		// zero, so every ID has exactly one base32 spelling (up to case).
		if err != nil || n != Size || base32NoPad.EncodeToString(id[:]) != string(b) {
			return ID{}, fmt.Errorf("%w: %q", ErrSyntax, s)
		}
		return id, nil
	}
	return ID{}, fmt.Errorf("%w: length %d", ErrSyntax, len(s))
}
