package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"filippo.io/age"
	bolt "go.etcd.io/bbolt"

	"github.com/sovm/sop-pme/keyring"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/storageid"
)

// grantIdentity runs keys identity in e and returns the recipient it prints.
func (e *env) grantIdentity() string {
	e.t.Helper()
	r := e.ok("keys", "identity")
	rc := strings.TrimSpace(r.stdout)
	if !strings.HasPrefix(rc, "age1") || strings.Contains(r.stdout+r.stderr, "AGE-SECRET-KEY") {
		e.t.Fatalf("keys identity: %s", r)
	}
	return rc
}

func (e *env) grantIdentityPath() string { return filepath.Join(e.conf, "sop-pme", "identity") }

// importCSVTable imports n small CSV files into table and returns their
// storage_ids.
func (e *env) importCSVTable(table string, n int) []string {
	e.t.Helper()
	var files, ids []string
	for i := range n {
		in := filepath.Join(e.t.TempDir(), "t.csv")
		os.WriteFile(in, []byte(fmt.Sprintf("a,b\n%d,%s\n", 100+i, table)), 0o600)
		files = append(files, in)
	}
	for _, r := range e.importTable(table, files) {
		ids = append(ids, r.StorageID)
	}
	return ids
}

// grantPlain decrypts the grant file with the identity file and returns its
// payload.
func grantPlain(t *testing.T, grant, identity string) []byte {
	t.Helper()
	id, err := loadAgeIdentity(identity)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(grant)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := age.Decrypt(f, id)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := b.ReadFrom(r); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// sealGrantTo writes payload as a grant file for the recipient.
func sealGrantTo(t *testing.T, payload []byte, recipient, path string) {
	t.Helper()
	rc, err := age.ParseX25519Recipient(recipient)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	w, err := age.Encrypt(&b, rc)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(payload)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// ringKeyOf returns the raw ring key of the keyring at ring under the KEK
// file kek, read from the file as the keyring keeps it (bucket meta, key
// ring-key, wrapped under the KEK).
func ringKeyOf(t *testing.T, ring, kek string) []byte {
	t.Helper()
	k, err := keyring.LoadKEKFile(kek)
	if err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(ring, 0o600, &bolt.Options{ReadOnly: true, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var w []byte
	db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket([]byte("meta")); b != nil {
			w = bytes.Clone(b.Get([]byte("ring-key")))
		}
		return nil
	})
	raw, err := k.Decrypt(context.Background(), w)
	if err != nil || len(raw) != keyring.RingKeySize {
		t.Fatalf("the ring key of %s: %v", ring, err)
	}
	return raw
}

// grantDEKsOf returns the DEKs of ids in the ring at ring under the KEK kek;
// a missing one is the zero DEK.
func grantDEKsOf(t *testing.T, ring, kek string, ids []string) []pme.DEK {
	t.Helper()
	r, err := ringKEK(t, ring, kek)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]pme.DEK, len(ids))
	for i, s := range ids {
		id, err := storageid.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		out[i], _ = r.ResolveDEK(context.Background(), id)
	}
	return out
}

// TestGrant: node A imports objects and a table; node B (its own KEK,
// keyring and identity, the same store) accepts a grant of two objects and
// the table, and reads exactly those, byte for byte as A does; the grant
// holds neither A's KEK nor its ring key, and every DEK only sealed; a
// grant opens only with its identity; accepting twice changes nothing.
func TestGrant(t *testing.T) {
	t.Parallel()
	a, b := newEnv(t), newEnv(t)
	b.store = a.store
	ids := a.importSome(3)
	tids := a.importCSVTable("orders", 2)
	rcpt := b.grantIdentity()
	if again := b.grantIdentity(); again != rcpt {
		t.Fatalf("keys identity changed the identity: %s, then %s", rcpt, again)
	}
	if fi, err := os.Stat(b.grantIdentityPath()); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("identity file: %v, %v", fi, err)
	}
	if _, err := os.Stat(b.kekPath()); !os.IsNotExist(err) {
		t.Fatalf("keys identity made a KEK: %v", err)
	}

	dir := t.TempDir()
	g := filepath.Join(dir, "g.age")
	a.ok("keys", "grant", ids[0], ids[1], "orders", "--to", rcpt, "-o", g)
	if fi, err := os.Stat(g); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("grant file: %v, %v", fi, err)
	}
	a.fails(exitUsage, []string{"exists", "--force"}, "keys", "grant", ids[0], "--to", rcpt, "-o", g)
	a.ok("keys", "grant", ids[0], ids[1], "orders", "--to", rcpt, "-o", g, "--force")
	a.fails(exitUsage, []string{"not an age X25519 recipient"}, "keys", "grant", ids[0], "--to", "age1nope", "-o", filepath.Join(dir, "x"))
	a.fails(exitNotFound, []string{"nosuch", "no such table"}, "keys", "grant", "nosuch", "--to", rcpt, "-o", filepath.Join(dir, "x"))
	a.fails(exitKey, []string{"no DEK"}, "keys", "grant", storageid.Sum([]byte("x")).String(), "--to", rcpt, "-o", filepath.Join(dir, "x"))
	a.fails(exitUsage, []string{"whole storage_id"}, "keys", "grant", ids[0][:12], "--to", rcpt, "-o", filepath.Join(dir, "x"))
	if _, err := os.Stat(filepath.Join(dir, "x")); !os.IsNotExist(err) {
		t.Fatalf("a failed grant left its output: %v", err)
	}

	// What the grant holds: no KEK, no ring key, no DEK in the clear.
	raw, _ := os.ReadFile(g)
	plain := grantPlain(t, g, b.grantIdentityPath())
	kek, _ := os.ReadFile(a.kekPath())
	secrets := map[string][]byte{"the KEK": kek, "the ring key": ringKeyOf(t, a.ringPath(), a.kekPath())}
	for i, d := range grantDEKsOf(t, a.ringPath(), a.kekPath(), append(ids[:2:2], tids...)) {
		if d.IsZero() {
			t.Fatalf("A holds no DEK for object %d", i)
		}
		secrets[fmt.Sprintf("DEK %d", i)] = d.Bytes()
	}
	for what, s := range secrets {
		if len(s) != 32 {
			t.Fatalf("%s: %d bytes", what, len(s))
		}
		if bytes.Contains(raw, s) || bytes.Contains(plain, s) {
			t.Errorf("the grant holds %s", what)
		}
	}
	gp, err := decodeGrant(plain)
	if err != nil {
		t.Fatal(err)
	}
	if len(gp.deks) != 4 || len(gp.tables) != 1 {
		t.Fatalf("the grant holds %d DEKs and %d tables, want 4 and 1", len(gp.deks), len(gp.tables))
	}

	// Another identity: refused, and nothing created.
	c := newEnv(t)
	c.store = a.store
	c.grantIdentity()
	c.fails(exitKey, []string{"not for this identity"}, "keys", "accept", g)
	if _, err := os.Stat(c.ringPath()); !os.IsNotExist(err) {
		t.Fatalf("a refused grant made a keyring: %v", err)
	}
	b.fails(exitNotFound, []string{"no such grant file"}, "keys", "accept", filepath.Join(dir, "none"))
	junk := filepath.Join(dir, "junk")
	os.WriteFile(junk, []byte("age-encryption.org/v1\n-> X25519 junk\n"), 0o600)
	b.fails(exitFailure, []string{"not a grant"}, "keys", "accept", junk)
	cut := filepath.Join(dir, "cut")
	os.WriteFile(cut, raw[:len(raw)-20], 0o600)
	b.fails(exitFailure, []string{"not a grant"}, "keys", "accept", cut)

	// B accepts, and reads exactly what was granted, as A reads it.
	var res acceptResult
	json.Unmarshal([]byte(b.ok("keys", "accept", g, "--json").stdout), &res)
	if res.DEKs != 4 || res.Added != 4 || len(res.Tables) != 1 || res.Objects != 2 {
		t.Fatalf("accept: %+v", res)
	}
	for _, id := range append(ids[:2:2], tids...) {
		want := a.ok("export", id, "--format", "parquet", "-o", "-").stdout
		if got := b.ok("export", id, "--format", "parquet", "-o", "-").stdout; got != want || len(want) == 0 {
			t.Errorf("B's export of %s differs from A's (%d and %d bytes)", id, len(got), len(want))
		}
	}
	if want, got := a.ok("export", "orders", "--format", "csv").stdout, b.ok("export", "orders", "--format", "csv").stdout; got != want || !strings.Contains(got, "orders") {
		t.Errorf("B's export of the table: %q, A's %q", got, want)
	}
	if want, got := a.ok("schema", "orders").stdout, b.ok("schema", "orders").stdout; got != want {
		t.Errorf("B's schema of the table: %q, A's %q", got, want)
	}
	b.fails(exitKey, []string{ids[2], "no DEK"}, "export", ids[2], "--format", "csv")

	// Again: nothing new, nothing changed.
	json.Unmarshal([]byte(b.ok("keys", "accept", g, "--json").stdout), &res)
	if res.Added != 0 || res.Objects != 0 {
		t.Fatalf("accept again: %+v", res)
	}
	r, err := ringKEK(t, b.ringPath(), b.kekPath())
	if err != nil {
		t.Fatal(err)
	}
	if n, err := r.Len(context.Background()); err != nil || n != 4 {
		t.Fatalf("B holds %d DEKs (%v), want 4", n, err)
	}
	if objs := b.tableObjects("orders"); len(objs) != 2 {
		t.Fatalf("B's table holds %d objects, want 2", len(objs))
	}
}

// grantRingLen returns how many DEKs the ring of e holds.
func (e *env) grantRingLen() int {
	e.t.Helper()
	r, err := ringKEK(e.t, e.ringPath(), e.kekPath())
	if err != nil {
		e.t.Fatal(err)
	}
	n, err := r.Len(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

// TestGrantReplay: entries of a grant moved onto one another (sealed DEKs
// swapped, storage_ids swapped or replaced), re-encrypted to the
// recipient, are refused whole; a DEK that differs from one held is
// refused and never replaces it; a table of the same name that is another
// table is refused; the same table again merges.
func TestGrantReplay(t *testing.T) {
	t.Parallel()
	a, b := newEnv(t), newEnv(t)
	b.store = a.store
	ids := a.importSome(3)
	rcpt := b.grantIdentity()
	dir := t.TempDir()
	g0, g := filepath.Join(dir, "g0.age"), filepath.Join(dir, "g.age")
	a.ok("keys", "grant", ids[2], "--to", rcpt, "-o", g0)
	b.ok("keys", "accept", g0)
	a.ok("keys", "grant", ids[0], ids[1], "--to", rcpt, "-o", g)
	plain := grantPlain(t, g, b.grantIdentityPath())
	id2, _ := storageid.Parse(ids[2])

	forged := map[string]func(p *grantPayload){
		"sealed DEKs swapped": func(p *grantPayload) {
			p.deks[0].sealed, p.deks[1].sealed = p.deks[1].sealed, p.deks[0].sealed
		},
		"storage_ids swapped": func(p *grantPayload) {
			p.deks[0].id, p.deks[1].id = p.deks[1].id, p.deks[0].id
			sortGrantDEKs(p.deks)
		},
		"a storage_id replaced by one held": func(p *grantPayload) {
			p.deks[0].id = id2
			sortGrantDEKs(p.deks)
		},
		"a sealed DEK altered":  func(p *grantPayload) { p.deks[1].sealed[20] ^= 1 },
		"the grant key altered": func(p *grantPayload) { p.key[0] ^= 1 },
	}
	for name, forge := range forged {
		p, err := decodeGrant(plain)
		if err != nil {
			t.Fatal(err)
		}
		forge(p)
		f := filepath.Join(dir, "forged.age")
		sealGrantTo(t, p.encode(), rcpt, f)
		r := b.sop("keys", "accept", f)
		checkFailure(t, r, exitKey, []string{"does not open for its storage_id"}, []string{"keys", "accept", name})
		if n := b.grantRingLen(); n != 1 {
			t.Fatalf("%s: B holds %d DEKs after a refused grant, want 1", name, n)
		}
	}

	// A well-formed grant of a different DEK for an object B holds, and of
	// a new one: refused whole; B's DEK is kept.
	p := newGrantPayload()
	other := storageid.Sum([]byte("other"))
	p.seal([]keyring.Entry{{ID: id2, DEK: pme.NewDEK()}, {ID: other, DEK: pme.NewDEK()}})
	f := filepath.Join(dir, "conflict.age")
	sealGrantTo(t, p.encode(), rcpt, f)
	b.fails(exitKey, []string{ids[2], "different DEK", "nothing was accepted"}, "keys", "accept", f)
	if n := b.grantRingLen(); n != 1 {
		t.Fatalf("B holds %d DEKs after a conflicting grant, want 1", n)
	}
	want := a.ok("export", ids[2], "--format", "csv").stdout
	if got := b.ok("export", ids[2], "--format", "csv").stdout; got != want {
		t.Fatalf("B's object after a conflicting grant: %q, want %q", got, want)
	}
	b.ok("keys", "accept", g)
	if n := b.grantRingLen(); n != 3 {
		t.Fatalf("B holds %d DEKs, want 3", n)
	}

	// Tables: the same table again merges; another of the same name is
	// refused; a table's object without its DEK in the grant is refused.
	a.importCSVTable("orders", 1)
	gt := filepath.Join(dir, "gt.age")
	a.ok("keys", "grant", "orders", "--to", rcpt, "-o", gt)
	b.ok("keys", "accept", gt)
	a.importCSVTable("orders", 1)
	a.ok("keys", "grant", "orders", "--to", rcpt, "-o", gt, "--force")
	b.ok("keys", "accept", gt)
	if objs := b.tableObjects("orders"); len(objs) != 2 {
		t.Fatalf("B's table after a second grant: %d objects, want 2", len(objs))
	}
	if want, got := a.ok("export", "orders", "--format", "csv").stdout, b.ok("export", "orders", "--format", "csv").stdout; got != want {
		t.Fatalf("B's merged table: %q, A's %q", got, want)
	}
	c := newEnv(t)
	c.store = a.store
	c.importCSVTable("orders", 1)
	rc := c.grantIdentity()
	gc := filepath.Join(dir, "gc.age")
	a.ok("keys", "grant", "orders", "--to", rc, "-o", gc)
	c.fails(exitFailure, []string{"orders", "another table", "nothing was accepted"}, "keys", "accept", gc)
	if n := c.grantRingLen(); n != 1 {
		t.Fatalf("C holds %d DEKs after a refused table, want 1", n)
	}
	p, err := decodeGrant(grantPlain(t, gt, b.grantIdentityPath()))
	if err != nil {
		t.Fatal(err)
	}
	p.deks = p.deks[1:]
	sealGrantTo(t, p.encode(), rcpt, f)
	b.fails(exitFailure, []string{"has no DEK in the grant"}, "keys", "accept", f)
}

// TestGrantConcurrentAccepts: four keys accept processes of four grants
// at once, on a node with no KEK or keyring yet, while it imports: every
// DEK acknowledged is there, and every object reads.
func TestGrantConcurrentAccepts(t *testing.T) {
	t.Parallel()
	a, b := newEnv(t), newEnv(t)
	b.store = a.store
	ids := a.importSome(8)
	rcpt := b.grantIdentity()
	dir := t.TempDir()
	var grants []string
	for i := range 4 {
		g := filepath.Join(dir, fmt.Sprintf("g%d.age", i))
		a.ok("keys", "grant", ids[2*i], ids[2*i+1], "--to", rcpt, "-o", g)
		grants = append(grants, g)
	}
	var inputs []string
	for i := range 2 {
		in := filepath.Join(dir, fmt.Sprintf("own%d.csv", i))
		os.WriteFile(in, []byte(fmt.Sprintf("a,b\n%d,own\n", i)), 0o600)
		inputs = append(inputs, in)
	}
	var wg sync.WaitGroup
	results := make([]result, len(grants))
	imports := make([]result, len(inputs))
	for i, g := range grants {
		wg.Go(func() { results[i] = b.sop("keys", "accept", g) })
	}
	for i, in := range inputs {
		wg.Go(func() { imports[i] = b.sop("import", "--json", "--assign-field-ids", in) })
	}
	wg.Wait()
	for i, r := range results {
		if r.code != 0 {
			t.Fatalf("accept %d: %s", i, r)
		}
	}
	var own []string
	for i, r := range imports {
		var res importResult
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &res) != nil {
			t.Fatalf("import %d: %s", i, r)
		}
		own = append(own, res.StorageID)
	}
	if n := b.grantRingLen(); n != 10 {
		t.Fatalf("B holds %d DEKs, want 8 granted and 2 its own", n)
	}
	b.readsAll(append(ids, own...), nil)
}

// TestGrantHelp: keys -h names the subcommands and what a grant reveals;
// each subcommand's -h prints its usage; a bad command line is exit 2.
func TestGrantHelp(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.run(nil, "keys", "-h")
	for _, w := range []string{"identity", "grant", "accept", "cannot be taken back", "re-encrypting"} {
		if r.code != 0 || !strings.Contains(r.stdout, w) {
			t.Errorf("keys -h lacks %q: %s", w, r)
		}
	}
	for _, sub := range []string{"identity", "grant", "accept"} {
		if r := e.run(nil, "keys", sub, "-h"); r.code != 0 || !strings.Contains(r.stdout, "Usage:") || !strings.Contains(r.stdout, "5    key:") {
			t.Errorf("keys %s -h: %s", sub, r)
		}
	}
	e.fails(exitUsage, []string{"one or more IDs or TABLEs"}, "keys", "grant")
	e.fails(exitUsage, []string{"--to"}, "keys", "grant", "orders", "-o", filepath.Join(t.TempDir(), "g"))
	e.fails(exitUsage, []string{"-o FILE"}, "keys", "grant", "orders", "--to", "age1x")
	e.fails(exitUsage, []string{"one grant file"}, "keys", "accept")
	e.fails(exitUsage, []string{"no argument"}, "keys", "identity", "x")
	e.fails(exitNotFound, []string{"no identity", "keys identity"}, "keys", "accept", "g.age")
	// -o - on a terminal: refused (a grant is binary).
	idn, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	if r := runTTY(t, sopBinary(t), t.TempDir(), e.vars, "", "keys", "grant", "orders", "--to", idn.Recipient().String(), "-o", "-"); r.code != exitUsage || !strings.Contains(r.stdout, "terminal") {
		t.Errorf("keys grant -o - on a terminal: %s", r)
	}
	// An identity open to others is refused, as a KEK file is.
	p := filepath.Join(t.TempDir(), "id")
	e.ok("keys", "identity", "--identity", p)
	os.Chmod(p, 0o644)
	e.fails(exitKey, []string{"chmod 600"}, "keys", "identity", "--identity", p)
	os.Chmod(p, 0o600)
	if r := e.run([]string{"SOP_PME_IDENTITY=" + p}, "keys", "identity"); r.code != 0 || r.stdout != e.ok("keys", "identity", "--identity", p).stdout {
		t.Errorf("$SOP_PME_IDENTITY: %s", r)
	}
}
