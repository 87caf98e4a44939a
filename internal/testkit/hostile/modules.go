package hostile

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/sovm/sop-pme/pme"
)

// Modules returns the module spans of a sealed object's data region, for
// tests that check the layout.
func Modules(obj []byte) ([][2]int64, error) {
	flen, err := pme.ParseTrailer(obj[len(obj)-pme.TrailerSize:])
	if err != nil {
		return nil, err
	}
	dataEnd := int64(len(obj)) - pme.TrailerSize - int64(flen)
	var out [][2]int64
	for off := int64(4); off < dataEnd; {
		n := int64(binary.LittleEndian.Uint32(obj[off:]))
		out = append(out, [2]int64{off, off + 4 + n})
		off += 4 + n
	}
	return out, nil
}

// Unseal returns obj, sealed under dek, with every module's nonce and tag
// zeroed and its ciphertext replaced by its plaintext, in place: the layout
// (every offset and length) does not change. Reseal undoes it under any DEK.
// This is the form in which a fuzzer mutates the plaintext of an object.
func Unseal(obj []byte, dek pme.DEK) ([]byte, error) {
	out := bytes.Clone(obj)
	err := eachModule(out, func(body []byte) error {
		plain, err := dek.Open(nil, body)
		if err != nil {
			return err
		}
		clear(body)
		copy(body[pme.NonceSize:], plain)
		return nil
	})
	return out, err
}

// Reseal seals, in place, every module of an object in the form Unseal
// gives, under dek, and returns it. Where a length prefix does not fit the
// object, or the footer region does not parse, it stops: what follows stays
// as it is.
func Reseal(plain []byte, dek pme.DEK) []byte {
	out := bytes.Clone(plain)
	eachModule(out, func(body []byte) error {
		sealed, err := dek.Seal(nil, body[pme.NonceSize:len(body)-pme.TagSize])
		if err != nil {
			return err
		}
		copy(body, sealed[pme.LenSize:])
		return nil
	})
	return out
}

// eachModule calls f with the body of every module of obj: those of the
// data region, from offset 4, as their length prefixes chain, then the
// footer module. It stops at the first prefix that does not fit, or error.
func eachModule(obj []byte, f func(body []byte) error) error {
	if len(obj) < 4+pme.TrailerSize {
		return fmt.Errorf("hostile: %d bytes", len(obj))
	}
	flen := int64(binary.LittleEndian.Uint32(obj[len(obj)-pme.TrailerSize:]))
	dataEnd := int64(len(obj)) - pme.TrailerSize - flen
	if dataEnd < 4 {
		return fmt.Errorf("hostile: footer length %d", flen)
	}
	for off := int64(4); off < dataEnd; {
		body, _, err := pme.SplitModule(obj[off:dataEnd])
		if err != nil {
			return err
		}
		if err := f(body); err != nil {
			return err
		}
		off += pme.LenSize + int64(len(body))
	}
	_, n, err := pme.ParseFileCryptoMetaData(obj[dataEnd:])
	if err != nil {
		return err
	}
	body, _, err := pme.SplitModule(obj[dataEnd+int64(n) : int64(len(obj))-pme.TrailerSize])
	if err != nil {
		return err
	}
	return f(body)
}
