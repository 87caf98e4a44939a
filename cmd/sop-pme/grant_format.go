package main

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/sovm/sop-pme/catalog"
	"github.com/sovm/sop-pme/keyring"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/storageid"
)

// The payload of a grant, the plaintext inside its age encryption:
//
//	"sop-pme-grant v1\n"                        the magic line, 17 bytes
//	grant key                                   32 bytes, random per grant
//	uint32 n                                    the DEKs
//	n × (storage_id 32 ‖ sealed DEK 60)         storage_ids strictly increasing
//	uint32 t                                    the tables
//	t × (uint32 r ‖ r × (uint32 len ‖ key ‖ uint32 len ‖ value))
//
// Integers are big endian. A sealed DEK is AES-256-GCM under the grant key
// (nonce 12 ‖ ciphertext 32 ‖ tag 16), with associated data grantAD ‖
// storage_id, as the keyring wraps a DEK under its ring key with its
// storage_id as associated data: a DEK opens only for the object it was
// granted for, and cannot be moved onto another entry. A table is its
// catalog records (catalog.ExportTable: its header record, then its object
// records in strictly increasing key order); tables are in strictly
// increasing order of their header's key. There is one encoding of a
// payload: counts and lengths are fixed-width, orders are strict, and no
// byte may follow. The grant key and the DEKs are the only secrets in it;
// neither the KEK nor the ring key of the granting node is.
const (
	grantMagic      = "sop-pme-grant v1\n"
	grantKeySize    = 32
	grantSealedSize = 12 + pme.DEKSize + 16
	grantDEKSize    = storageid.Size + grantSealedSize

	// maxGrantPayload bounds the payload read from a grant, so that a
	// grant file of any size is read in bounded memory.
	maxGrantPayload = 64 << 20
	// maxGrantDEKs and maxGrantTables bound the counts of a payload; every
	// count is also checked against the bytes left before anything is
	// allocated by it.
	maxGrantDEKs   = 1 << 20
	maxGrantTables = 1 << 10
)

// grantAD is the associated data of a DEK sealed in a grant, followed by
// its storage_id.
const grantAD = "sop-pme grant v1: dek for storage_id "

// Errors of grants, matched with errors.Is.
var (
	// errGrantFormat reports a grant that does not decrypt as age, or
	// whose payload does not parse.
	errGrantFormat = errors.New("not a grant this version reads")
	// errGrantEntry reports a DEK in a grant that does not open for its
	// storage_id under the grant key: altered, or moved from another entry.
	errGrantEntry = errors.New("a DEK of the grant does not open for its storage_id: the grant was altered")
	// errGrantIdentity reports a grant made for another recipient than the
	// identity given.
	errGrantIdentity = errors.New("the grant is not for this identity")
	// errIdentityFile reports an identity file that is not one age X25519
	// identity in a private file.
	errIdentityFile = errors.New("bad identity file")
)

// grantPayload is a decoded payload.
type grantPayload struct {
	key    [grantKeySize]byte
	deks   []grantDEK
	tables [][]catalog.Record
}

// grantDEK is one sealed DEK.
type grantDEK struct {
	id     storageid.ID
	sealed [grantSealedSize]byte
}

func grantADFor(id storageid.ID) []byte { return append([]byte(grantAD), id[:]...) }

// newGrantPayload returns an empty payload with a fresh grant key.
func newGrantPayload() *grantPayload {
	g := &grantPayload{}
	if _, err := rand.Read(g.key[:]); err != nil {
		panic(err) // crypto/rand does not fail (Go 1.24)
	}
	return g
}

func (g *grantPayload) aead() cipher.AEAD {
	b, err := aes.NewCipher(g.key[:])
	if err != nil {
		panic(err) // a 32-byte key
	}
	a, err := cipher.NewGCMWithRandomNonce(b)
	if err != nil {
		panic(err)
	}
	return a
}

// seal adds the DEKs of entries, sealed for their storage_ids, sorted and
// without repeats (the last DEK given for an id is kept).
func (g *grantPayload) seal(entries []keyring.Entry) {
	a := g.aead()
	for _, e := range entries {
		raw := e.DEK.Bytes()
		d := grantDEK{id: e.ID}
		copy(d.sealed[:], a.Seal(nil, nil, raw, grantADFor(e.ID)))
		clear(raw)
		g.deks = append(g.deks, d)
	}
	g.normalize()
}

// normalize sorts the DEKs by storage_id, keeping the last of each.
func (g *grantPayload) normalize() {
	byID := map[storageid.ID]grantDEK{}
	for _, d := range g.deks {
		byID[d.id] = d
	}
	g.deks = g.deks[:0]
	for _, d := range byID {
		g.deks = append(g.deks, d)
	}
	sortGrantDEKs(g.deks)
}

func sortGrantDEKs(ds []grantDEK) {
	slices.SortFunc(ds, func(a, b grantDEK) int { return bytes.Compare(a.id[:], b.id[:]) })
}

// open opens every DEK of the payload for its storage_id, or fails with
// errGrantEntry naming the first that does not open.
func (g *grantPayload) open() ([]keyring.Entry, error) {
	a := g.aead()
	out := make([]keyring.Entry, 0, len(g.deks))
	for _, d := range g.deks {
		raw, err := a.Open(nil, nil, d.sealed[:], grantADFor(d.id))
		if err != nil {
			return nil, fmt.Errorf("%w: %s", errGrantEntry, d.id)
		}
		dek, err := pme.DEKFromBytes(raw)
		clear(raw)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", errGrantEntry, d.id, err)
		}
		out = append(out, keyring.Entry{ID: d.id, DEK: dek})
	}
	return out, nil
}

// encode returns the payload's bytes (see grantMagic). The DEKs must be
// sorted (seal sorts them), and the tables in order (grant sorts them).
func (g *grantPayload) encode() []byte {
	b := append([]byte(grantMagic), g.key[:]...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(g.deks)))
	for _, d := range g.deks {
		b = append(b, d.id[:]...)
		b = append(b, d.sealed[:]...)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(g.tables)))
	for _, t := range g.tables {
		b = binary.BigEndian.AppendUint32(b, uint32(len(t)))
		for _, r := range t {
			b = binary.BigEndian.AppendUint32(b, uint32(len(r.Key)))
			b = append(b, r.Key...)
			b = binary.BigEndian.AppendUint32(b, uint32(len(r.Value)))
			b = append(b, r.Value...)
		}
	}
	return b
}

// grantParser reads a payload strictly: a sticky error, every count and
// length checked against the bytes left before it is used.
type grantParser struct {
	b   []byte
	err error
}

func (p *grantParser) fail(format string, args ...any) {
	if p.err == nil {
		p.err = fmt.Errorf("%w: "+format, append([]any{errGrantFormat}, args...)...)
	}
}

func (p *grantParser) take(n int, what string) []byte {
	if p.err != nil {
		return nil
	}
	if n < 0 || n > len(p.b) {
		p.fail("%s: %d bytes, %d left", what, n, len(p.b))
		return nil
	}
	s := p.b[:n]
	p.b = p.b[n:]
	return s
}

// count reads a uint32 that is at most max, and at most the bytes left
// divided by unit (the fewest bytes each counted item takes).
func (p *grantParser) count(max, unit int, what string) int {
	b := p.take(4, what)
	if b == nil {
		return 0
	}
	n := int(binary.BigEndian.Uint32(b))
	if n > max || n > len(p.b)/unit {
		p.fail("%s: %d, above the bound or the %d bytes left", what, n, len(p.b))
		return 0
	}
	return n
}

// decodeGrant parses a payload strictly (errGrantFormat). It opens no DEK.
func decodeGrant(b []byte) (*grantPayload, error) {
	if len(b) > maxGrantPayload {
		return nil, fmt.Errorf("%w: a payload of %d bytes, above %d", errGrantFormat, len(b), maxGrantPayload)
	}
	p := &grantParser{b: b}
	if m := p.take(len(grantMagic), "magic"); p.err == nil && string(m) != grantMagic {
		p.fail("no %q line", grantMagic[:len(grantMagic)-1])
	}
	g := &grantPayload{}
	copy(g.key[:], p.take(grantKeySize, "grant key"))
	n := p.count(maxGrantDEKs, grantDEKSize, "DEKs")
	if p.err == nil {
		g.deks = make([]grantDEK, n)
	}
	for i := 0; p.err == nil && i < n; i++ {
		copy(g.deks[i].id[:], p.take(storageid.Size, "storage_id"))
		copy(g.deks[i].sealed[:], p.take(grantSealedSize, "sealed DEK"))
		if p.err == nil && i > 0 && bytes.Compare(g.deks[i-1].id[:], g.deks[i].id[:]) >= 0 {
			p.fail("the storage_ids are not in strictly increasing order")
		}
	}
	t := p.count(maxGrantTables, 4, "tables")
	for i := 0; p.err == nil && i < t; i++ {
		r := p.count(maxGrantPayload, 8, "records")
		if p.err == nil && r == 0 {
			p.fail("table %d has no record", i)
		}
		var recs []catalog.Record
		for j := 0; p.err == nil && j < r; j++ {
			k := p.take(p.count(keyring.MaxRecordKey, 1, "record key"), "record key")
			v := p.take(p.count(keyring.MaxRecordValue, 1, "record value"), "record value")
			if p.err != nil {
				break
			}
			if len(k) == 0 {
				p.fail("an empty record key")
				break
			}
			if j > 1 && bytes.Compare(recs[j-1].Key, k) >= 0 {
				p.fail("the records of table %d are not in strictly increasing key order", i)
				break
			}
			recs = append(recs, catalog.Record{Key: bytes.Clone(k), Value: bytes.Clone(v)})
		}
		if p.err == nil && i > 0 && bytes.Compare(g.tables[i-1][0].Key, recs[0].Key) >= 0 {
			p.fail("the tables are not in strictly increasing order")
		}
		if p.err == nil {
			g.tables = append(g.tables, recs)
		}
	}
	if p.err == nil && len(p.b) != 0 {
		p.fail("%d trailing bytes", len(p.b))
	}
	if p.err == nil && len(g.deks) == 0 && len(g.tables) == 0 {
		p.fail("an empty grant")
	}
	if p.err != nil {
		return nil, p.err
	}
	return g, nil
}
