// Package padme implements the object-size padding of SOP-PME-1 Section 11.8:
// the Padmé target-length function, and the closed-form solve that makes the
// reserved pad entry in the encrypted Parquet footer reach that target exactly.
//
// Padmé is defined in section 4.4 of Nikitin et al., "Reducing Metadata
// Leakage from Encrypted Files and Communication with PURBs", Proceedings on
// Privacy Enhancing Technologies 2019(4) ([arXiv:1806.03160]). It rounds a
// length L up to a floating-point-like number whose mantissa is no longer
// than the binary representation of its exponent, so a padded length leaks
// O(log log L) bits about L, at an overhead below 2^−S for
// S = ⌊log2 ⌊log2 L⌋⌋ + 1: at most 11.63 % (at L = 129), at most 6.25 % from
// 256 bytes and at most 3.125 % from 64 KiB.
//
// # What padding hides
//
// Section 11.8 pads the whole object, and only that: observers who see object
// sizes alone (listings, transfer sizes) learn the Padmé target rather than
// the exact size. The holder of the bytes still sees every module's plaintext
// length prefix, hence every page size. Nothing in this package changes that.
//
// # Reaching the target
//
// The pad is a Parquet KeyValue {1: key, 2: value} in the encrypted footer.
// Its key is [PadKey] followed by zero or more '-' characters and its value is
// a run of zero bytes. The entry is written on every object, with an empty
// value and no key tail when no padding is needed, so an object encoded with
// that empty entry has a length L, and [Solve] maps the delta
// n = Target(L) − L to the entry that grows the object by exactly n bytes.
// Readers must ignore every key for which [IsReserved] reports true.
//
// [arXiv:1806.03160]: https://arxiv.org/abs/1806.03160
package padme

import (
	"errors"
	"fmt"
	"math/bits"
	"strings"
)

// MaxLength is the largest length, in bytes, whose Padmé target fits in a
// uint64: 2^64 − 2^57.
//
// Every L in [2^63, 2^64) has E = 63, S = 6 and lastBits = 57, so its target
// is L rounded up to a multiple of 2^57. The largest such multiple below 2^64
// is 2^64 − 2^57, which is its own target; every larger L would round up to
// 2^64. Target returns [ErrTooLarge] for L > MaxLength.
const MaxLength uint64 = 1<<64 - 1<<57

// ErrTooLarge is returned by [Target] for a length greater than [MaxLength],
// whose Padmé target does not fit in a uint64.
var ErrTooLarge = errors.New("padme: length too large to pad")

// Target returns Padmé(l), the padded length in bytes that an object of l
// bytes must reach exactly (SOP-PME-1 Section 11.8; [PADME] section 4.4).
//
// For l ≥ 2, with E = ⌊log2 l⌋, S = ⌊log2 E⌋ + 1, lastBits = E − S and
// mask = 2^lastBits − 1, Padmé(l) = (l + mask) &^ mask: l rounded up so that
// its low lastBits bits are zero. Lengths 0 and 1 map to themselves, as do
// all powers of two. The result is never smaller than l, Target is
// idempotent and monotone, and (Target(l) − l)/l < 2^−S.
//
// Target returns an error wrapping [ErrTooLarge] if l > [MaxLength].
//
// [PADME]: https://arxiv.org/abs/1806.03160
func Target(l uint64) (uint64, error) {
	if l > MaxLength {
		return 0, fmt.Errorf("%w: %d bytes exceeds the maximum of %d", ErrTooLarge, l, MaxLength)
	}
	if l < 2 {
		return l, nil
	}
	e := bits.Len64(l) - 1 // ⌊log2 l⌋, in [1, 63]
	s := bits.Len(uint(e)) // ⌊log2 e⌋ + 1, in [1, 6]
	mask := uint64(1)<<(e-s) - 1
	// l ≤ MaxLength keeps l + mask below 2^64: for e < 63 both terms are
	// below 2^63, and for e = 63 mask = 2^57 − 1 and l ≤ 2^64 − 2^57.
	return (l + mask) &^ mask, nil
}

// PadKey is the reserved footer-metadata key of the pad entry (SOP-PME-1
// Section 11.8). A pad entry's key is PadKey followed by zero or more '-'
// characters and nothing else. The key is fixed rather than derived from the
// object's content, table, domain or size, because a key name is itself
// footer metadata.
const PadKey = "sovm:sop-pad-v1"

// IsReserved reports whether key starts with [PadKey]. Section 11.8 requires
// readers to ignore every footer-metadata key carrying that prefix: nothing in
// Parquet makes an entry semantically ignored, so the obligation is the
// reader's. A reader must hide such keys whether or not [ValidKey] accepts
// them.
func IsReserved(key string) bool {
	return strings.HasPrefix(key, PadKey)
}

// ValidKey reports whether key is a well-formed pad key: [PadKey] followed by
// zero or more '-' characters and nothing else (Section 11.8).
func ValidKey(key string) bool {
	tail, ok := strings.CutPrefix(key, PadKey)
	return ok && strings.Trim(tail, "-") == ""
}

// A Pad is the pad entry of one object: a Parquet KeyValue whose key is
// [PadKey] followed by KeyTail '-' characters and whose value is ValueLen zero
// bytes (Section 11.8). The zero Pad is the empty entry that every object
// carries when it needs no padding, and the baseline against which
// [Pad.Growth] is measured.
//
// Both lengths are knobs because one does not cover every delta: the value's
// Thrift length prefix grows by a byte at 128, 16 384, 2 097 152, …, so the
// delta just above each step is unreachable by value length alone, and one
// key character reaches it. See [Solve].
type Pad struct {
	// ValueLen is the length of the value in bytes; every byte is zero.
	ValueLen uint64
	// KeyTail is the number of '-' characters after PadKey. It must not be
	// negative. Solve only ever returns 0 or 1.
	KeyTail int
}

// Key returns the entry's key: [PadKey] followed by p.KeyTail '-' characters.
// It panics if p.KeyTail is negative.
func (p Pad) Key() string {
	if p.KeyTail < 0 {
		panic("padme: negative KeyTail")
	}
	return PadKey + strings.Repeat("-", p.KeyTail)
}

// Growth returns how many bytes the Thrift compact encoding of p is longer
// than that of the empty entry Pad{}, which is how many bytes p adds to an
// object encoded with the empty entry. AES-GCM adds no padding, so the
// encrypted footer module grows by the same amount.
//
// A binary field is encoded as a varint length then the bytes, so
//
//	Growth = v + UvarintLen(v) − 1 + k
//
// for v = ValueLen and k = KeyTail, as long as the key stays below 128 bytes
// (k ≤ 112), which every Pad returned by [Solve] does. For longer keys Growth
// also counts the extra bytes of the key's length prefix.
//
// The result wraps modulo 2^64 if the growth does not fit in a uint64, which
// takes a ValueLen within 10 of 2^64; Solve never returns such a Pad. Growth
// panics if p.KeyTail is negative.
func (p Pad) Growth() uint64 {
	if p.KeyTail < 0 {
		panic("padme: negative KeyTail")
	}
	k := uint64(p.KeyTail)
	keyGrowth := k + uint64(UvarintLen(uint64(len(PadKey))+k)-UvarintLen(uint64(len(PadKey))))
	return p.ValueLen + uint64(UvarintLen(p.ValueLen)-1) + keyGrowth
}

// Solve returns the pad entry that grows an object by exactly n bytes
// relative to the empty entry: Solve(n).Growth() == n for every n.
//
// The choice is canonical (Section 11.8 permits more key characters; one
// canonical choice makes objects checkable): KeyTail is 0 whenever some value
// length v has v + UvarintLen(v) − 1 == n, and otherwise 1, with the value one
// byte shorter. The second case occurs exactly once per varint width, at
// n = 2^(7w) + w − 1 for w = 1, …, 9 (128, 16 385, 2 097 154, 268 435 459, …),
// where the value's length prefix grows from w to w+1 bytes.
//
// Solve is closed-form: it checks each of the at most 10 varint widths once
// and never searches over value lengths, so the writer encrypts the footer
// once (Section 11.8).
func Solve(n uint64) Pad {
	if v, ok := valueFor(n); ok {
		return Pad{ValueLen: v}
	}
	// n is the single delta skipped where the value's length prefix grows
	// from w to w+1 bytes. n − 1 = 2^(7w) − 1 + (w − 1) is the growth of the
	// longest value with a w-byte prefix, so it is always reachable; the
	// extra key character supplies the last byte.
	v, ok := valueFor(n - 1)
	if !ok {
		panic("padme: internal error: no value length for a delta after a varint step")
	}
	return Pad{ValueLen: v, KeyTail: 1}
}

// valueFor returns the value length v with v + UvarintLen(v) − 1 == n, and
// whether one exists. Such a v is unique, because the left side is strictly
// increasing in v, and it has some width w = UvarintLen(v) in [1, 10], so
// v = n − (w − 1) for exactly one consistent w.
func valueFor(n uint64) (uint64, bool) {
	for w := 1; w <= maxUvarintLen; w++ {
		if n < uint64(w-1) {
			break
		}
		if v := n - uint64(w-1); UvarintLen(v) == w {
			return v, true
		}
	}
	return 0, false
}

// maxUvarintLen is the length in bytes of the longest uvarint encoding of a
// uint64.
const maxUvarintLen = 10

// UvarintLen returns the number of bytes in the unsigned varint (ULEB128)
// encoding of v, which the Thrift compact protocol uses for the length of a
// binary or string field: 1 for v < 128, 2 for v < 16 384, and so on up to 10
// for v ≥ 2^63. It matches the length of encoding/binary.AppendUvarint.
func UvarintLen(v uint64) int {
	return (bits.Len64(v|1) + 6) / 7
}
