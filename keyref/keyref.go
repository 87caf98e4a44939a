// Package keyref implements the opaque key_ref of SOP-PME-1 Section 11.5: a
// random 16-byte value that every SOP-PME-1 object carries in PME
// key_metadata (FileCryptoMetaData field 2).
//
// # Never load-bearing
//
// key_ref is opaque and never load-bearing. No reader may resolve keys
// through it: key resolution is always storage_id → ObjectManifest and the
// current AccessRecord → DEK, with storage_id recomputable from the object's
// bytes. key_metadata is plaintext and lies outside every module's
// authentication tag, so a key_ref authenticates nothing: anyone who can
// write the object can change it without any tag failing. Its one use is to
// correlate stray ciphertext objects for forensics and group recovery, and
// even there bytes are resolved and verified through storage_id
// (Section 11.10).
//
// Section 11.5 forbids semantic names in key_metadata. A Ref is therefore
// drawn from crypto/rand alone: nothing in it is derived from data, names,
// keys, time or counters, and its encoding carries no structure.
//
// Section 11.12 fixes when a writer stores it: after PME encryption and
// before Padmé padding and content addressing.
package keyref

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
)

// Size is the length of a Ref in bytes (Section 11.5).
const Size = 16

// A Ref is an opaque key_ref: Size random bytes, written as PME key_metadata
// on every SOP-PME-1 object and never used to resolve a key. The zero Ref is
// not a valid key_ref; it marks an absent one (see [Ref.IsZero]).
type Ref [Size]byte

// ErrSyntax is returned, wrapped, by [Parse] and [Ref.UnmarshalText] for a
// string that is not exactly 2×Size lowercase hexadecimal digits.
var ErrSyntax = errors.New("keyref: invalid key_ref syntax")

// New returns a fresh Ref of Size bytes read from crypto/rand.
//
// Nothing else goes into it, as Section 11.5 requires. Since Go 1.24
// crypto/rand.Read never returns an error: if the operating system's random
// source fails, the program crashes irrecoverably instead, so New cannot
// return a predictable or partial Ref.
//
// A draw that NotRandom flags (all zero, or all printable ASCII: about one
// in 2^23) is drawn again, so that a writer never writes a key_ref that a
// conformance check calls semantic.
func New() Ref {
	var r Ref
	for {
		rand.Read(r[:]) // Never returns an error (Go 1.24+); see above.
		if r.NotRandom() == "" {
			return r
		}
	}
}

// NotRandom says why r does not look like a value drawn at random, or ""
// if it does. Section 11.5 forbids semantic key metadata ("health-key",
// "finance-2026"); a random 16-byte value is all zero with probability
// 2^−128 and all printable ASCII (0x20 to 0x7e) with probability about
// 2^−23, so a key_ref of either kind was almost surely chosen, not drawn.
func (r Ref) NotRandom() string {
	if r.IsZero() {
		return "16 zero bytes"
	}
	for _, b := range r {
		if b < 0x20 || b > 0x7e {
			return ""
		}
	}
	return fmt.Sprintf("all printable ASCII (%q)", r[:])
}

// IsZero reports whether r is the zero Ref, which New never returns (short
// of a 2^−128 chance) and which stands for a missing key_ref.
func (r Ref) IsZero() bool {
	return r == Ref{}
}

// String returns r as 2×Size (32) lowercase hexadecimal digits, the only
// form Parse accepts.
func (r Ref) String() string {
	return hex.EncodeToString(r[:])
}

// AppendText implements encoding.TextAppender, appending the String form of
// r to b.
func (r Ref) AppendText(b []byte) ([]byte, error) {
	return hex.AppendEncode(b, r[:]), nil
}

// MarshalText implements encoding.TextMarshaler with the String form.
func (r Ref) MarshalText() ([]byte, error) {
	return r.AppendText(nil)
}

// UnmarshalText implements encoding.TextUnmarshaler with Parse. On error r is
// left unchanged.
func (r *Ref) UnmarshalText(text []byte) error {
	v, err := Parse(string(text))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// Parse parses a Ref from exactly 2×Size (32) lowercase hexadecimal digits,
// the form String returns. Upper-case digits are rejected so that each Ref
// has exactly one spelling, and string-keyed forensic indexes cannot hold one
// Ref under two keys. Errors wrap [ErrSyntax].
func Parse(s string) (Ref, error) {
	if len(s) != 2*Size {
		return Ref{}, fmt.Errorf("%w: %d characters, want %d", ErrSyntax, len(s), 2*Size)
	}
	var r Ref
	for i := range Size {
		hi, ok1 := fromHexChar(s[2*i])
		lo, ok2 := fromHexChar(s[2*i+1])
		if !ok1 || !ok2 {
			j := 2 * i
			if ok1 {
				j++
			}
			return Ref{}, fmt.Errorf("%w: invalid character %q at offset %d, want a lowercase hex digit", ErrSyntax, s[j], j)
		}
		r[i] = hi<<4 | lo
	}
	return r, nil
}

// fromHexChar returns the value of a lowercase hexadecimal digit.
func fromHexChar(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}
