package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/sovm/sop-pme/catalog"
	"github.com/sovm/sop-pme/keyring"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/storageid"
)

// seedGrant is a payload of two DEKs and two tables, made of fixed bytes
// (its sealed DEKs do not open: the parser does not open them).
func seedGrant() []byte {
	g := &grantPayload{}
	for i := range g.key {
		g.key[i] = byte(i)
	}
	for i := range 2 {
		d := grantDEK{id: storageid.Sum([]byte{byte(i)})}
		for j := range d.sealed {
			d.sealed[j] = byte(i*7 + j)
		}
		g.deks = append(g.deks, d)
	}
	sortGrantDEKs(g.deks)
	g.tables = [][]catalog.Record{
		{{Key: []byte("t1"), Value: []byte("header one")}, {Key: []byte("o1"), Value: []byte("object")}, {Key: []byte("o2"), Value: nil}},
		{{Key: []byte("t2"), Value: []byte("header two")}},
	}
	return g.encode()
}

// FuzzDecodeGrant: a payload never panics; it decodes or fails with
// errGrantFormat, and what decodes encodes to the same bytes (one encoding
// per payload).
func FuzzDecodeGrant(f *testing.F) {
	ents, err := os.ReadDir(filepath.Join("testdata", "fuzz", "FuzzDecodeGrant"))
	if err != nil || len(ents) == 0 {
		f.Fatalf("no seed corpus for FuzzDecodeGrant in testdata/fuzz: %v", err)
	}
	f.Add(seedGrant())
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := decodeGrant(b)
		if err != nil {
			if !errors.Is(err, errGrantFormat) {
				t.Fatalf("not errGrantFormat: %v", err)
			}
			return
		}
		if again := g.encode(); !bytes.Equal(again, b) {
			t.Fatalf("malleable: %x encodes as %x", b, again)
		}
	})
}

// TestGrantSeeds checks that the seed corpus in testdata/fuzz holds the
// seed payload and its truncations and bit flips as this file makes them;
// with SOP_PME_WRITE_SEEDS=1 it writes them instead.
func TestGrantSeeds(t *testing.T) {
	write := os.Getenv("SOP_PME_WRITE_SEEDS") != ""
	dir := filepath.Join("testdata", "fuzz", "FuzzDecodeGrant")
	if write {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b := seedGrant()
	seeds := [][]byte{b, b[:len(b)/2], b[:len(b)-1], append(bytes.Clone(b), 0)}
	for _, at := range []int{0, 20, len(grantMagic) + grantKeySize + 3, len(b) / 2, len(b) - 30} {
		c := bytes.Clone(b)
		c[at] ^= 0x80
		seeds = append(seeds, c)
	}
	for i, s := range seeds {
		path := filepath.Join(dir, fmt.Sprintf("seed-%02d", i))
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", s)
		if write {
			if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != body {
			t.Errorf("%s is not the seed this test makes (SOP_PME_WRITE_SEEDS=1 go test -run TestGrantSeeds writes it): %v", path, err)
		}
	}
}

// TestDecodeGrant: the seed decodes to what it was made of; every
// truncation, any trailing byte, out-of-order entries and counts beyond
// the bytes fail with errGrantFormat; a sealed DEK opens only for its
// storage_id.
func TestDecodeGrant(t *testing.T) {
	b := seedGrant()
	g, err := decodeGrant(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.deks) != 2 || len(g.tables) != 2 || len(g.tables[0]) != 3 || string(g.tables[1][0].Value) != "header two" {
		t.Fatalf("decoded %+v", g)
	}
	for n := range len(b) {
		if _, err := decodeGrant(b[:n]); !errors.Is(err, errGrantFormat) {
			t.Fatalf("cut at %d: %v", n, err)
		}
	}
	bad := map[string][]byte{
		"trailing byte": append(bytes.Clone(b), 0),
		"bad magic":     append([]byte("sop-pme-grant v2\n"), b[len(grantMagic):]...),
	}
	// The DEKs swapped: out of order.
	sw := *g
	sw.deks = []grantDEK{g.deks[1], g.deks[0]}
	bad["DEKs out of order"] = sw.encode()
	sw = *g
	sw.deks = []grantDEK{g.deks[0], g.deks[0]}
	bad["a DEK twice"] = sw.encode()
	sw = *g
	sw.tables = [][]catalog.Record{g.tables[1], g.tables[0]}
	bad["tables out of order"] = sw.encode()
	sw = *g
	sw.tables = [][]catalog.Record{{g.tables[0][0], g.tables[0][2], g.tables[0][1]}}
	bad["records out of order"] = sw.encode()
	sw = *g
	sw.tables = [][]catalog.Record{{}}
	bad["a table of no record"] = sw.encode()
	bad["empty"] = (&grantPayload{}).encode()
	huge := bytes.Clone(b)
	huge[len(grantMagic)+grantKeySize] = 0xff // the DEK count, far beyond the bytes
	bad["a count beyond the bytes"] = huge
	for name, p := range bad {
		if _, err := decodeGrant(p); !errors.Is(err, errGrantFormat) {
			t.Errorf("%s: %v, want errGrantFormat", name, err)
		}
	}

	// Sealing: each DEK opens for its storage_id, and not when moved.
	s := newGrantPayload()
	a, c := storageid.Sum([]byte("a")), storageid.Sum([]byte("c"))
	da, dc := pme.NewDEK(), pme.NewDEK()
	s.seal([]keyring.Entry{{ID: c, DEK: dc}, {ID: a, DEK: da}})
	s2, err := decodeGrant(s.encode())
	if err != nil {
		t.Fatal(err)
	}
	es, err := s2.open()
	if err != nil || len(es) != 2 {
		t.Fatalf("open: %v", err)
	}
	for _, e := range es {
		want := map[storageid.ID]pme.DEK{a: da, c: dc}[e.ID]
		if !e.DEK.Equal(want) {
			t.Fatalf("%s opens to another DEK", e.ID)
		}
	}
	s2.deks[0].sealed, s2.deks[1].sealed = s2.deks[1].sealed, s2.deks[0].sealed
	if _, err := s2.open(); !errors.Is(err, errGrantEntry) {
		t.Fatalf("swapped DEKs open: %v", err)
	}
}
