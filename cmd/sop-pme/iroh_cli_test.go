//go:build iroh

package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/internal/testkit/residue"
)

// The tests of serve, fetch and iroh:// stores: two nodes on 127.0.0.1,
// each a user of its own (configuration directory, store, keyring), running
// the command built with the iroh tag (make cli-iroh).
var irohBinary = builder("sop-pme-iroh", "iroh")

// server is a running sop-pme serve.
type server struct {
	ticket string
	stop   func() // stops it (SIGTERM) and checks it exited 0
}

// serve starts sop-pme serve of e's store with its iroh store in irohDir,
// waits for its ticket and returns it; the test's cleanup stops it.
func serve(t *testing.T, e *env, irohDir string, flags ...string) *server {
	t.Helper()
	args := append([]string{"serve", "--iroh-dir", irohDir}, flags...)
	cmd := exec.Command(e.binary(), args...)
	cmd.Env = append(slices.Clone(e.vars), "SOP_PME_STORE="+e.store)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		for sc.Scan() {
		}
		done <- cmd.Wait()
	}()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve stopped by SIGTERM: %v\n%s", err, stderr.String())
			}
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			t.Errorf("serve did not stop within 20 s of SIGTERM\n%s", stderr.String())
		}
	}
	t.Cleanup(stop)
	select {
	case line, ok := <-lines:
		if !ok || !strings.HasPrefix(line, "endpoint") {
			stop()
			t.Fatalf("serve printed %q, not a ticket\n%s", line, stderr.String())
		}
		return &server{ticket: line, stop: stop}
	case <-time.After(60 * time.Second):
		stop()
		t.Fatalf("serve printed no ticket within 60 s\n%s", stderr.String())
	}
	return nil
}

// grantTable has b accept a grant of table from a (keys identity, keys
// grant, keys accept): the DEKs of its objects and its catalog entry, and
// nothing else.
func grantTable(t *testing.T, a, b *env, table string) {
	t.Helper()
	rcpt := b.grantIdentity()
	g := filepath.Join(t.TempDir(), "grant.age")
	a.ok("keys", "grant", table, "--to", rcpt, "-o", g)
	b.ok("keys", "accept", g)
}

// bigCSV writes a CSV of n rows (id, v), whose object spans several 16 KiB
// groups, so that iroh-blobs keeps it in a file of its own.
func bigCSV(t *testing.T, dir, name string, first, n int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("id,v\n")
	for i := first; i < first+n; i++ {
		fmt.Fprintf(&b, "%d,value-%x\n", i, sha256.Sum256([]byte(fmt.Sprint(i))))
	}
	return writeText(t, dir, name, b.String())
}

// damageIroh flips a byte in every 16 KiB group but the last of object id
// in the iroh-blobs store under irohDir: the node's copy no longer matches
// the storage_id wherever a reader looks, while its size (the last group)
// still proves.
func damageIroh(t *testing.T, irohDir, id string) {
	t.Helper()
	p := filepath.Join(irohDir, "iroh", "data", id+".data")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("the served object's file: %v", err)
	}
	const group = 16 << 10
	last := (len(b) - 1) / group * group
	for off := 100; off < last; off += group {
		b[off] ^= 0x40
	}
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestIrohUntaggedBuild is in iroh_off_test.go: the build without the tag
// says what it lacks.

// TestIrohTwoNodes: node A imports a table and serves its store; node B,
// with a grant of the table only (keys grant, keys accept), reads A's objects through iroh:// with every reading
// command, gets the same rows as A reads locally, copies objects with fetch
// (verified, whole, and resumed from its cache), cannot decrypt an object
// it holds no DEK for (exit 5), and fails with exit 4 when A's copy is
// damaged.
func TestIrohTwoNodes(t *testing.T) {
	t.Parallel()
	a, b := newEnv(t), newEnv(t)
	a.bin, b.bin = irohBinary(t), irohBinary(t)
	dir := t.TempDir()
	res := a.importTable("orders", []string{bigCSV(t, dir, "a.csv", 0, 3000), bigCSV(t, dir, "b.csv", 3000, 3000)})
	id0, id1 := res[0].StorageID, res[1].StorageID
	if res[1].Size < 3*16<<10 {
		t.Fatalf("object of %d bytes: too small for the test", res[1].Size)
	}
	grantTable(t, a, b, "orders")
	irohA := filepath.Join(t.TempDir(), "iroh-a")
	srv := serve(t, a, irohA, "--rescan", "200ms")
	b.store = "iroh://" + srv.ticket
	// A binding peers cannot dial is refused.
	a.fails(exitUsage, []string{"--bind 0.0.0.0:0"}, "serve", "--bind", "0.0.0.0:0", "--iroh-dir", filepath.Join(t.TempDir(), "other"))

	// Every reading command, over iroh, as A reads locally.
	want := a.ok("export", id0, "--format", "csv").stdout
	if got := b.ok("export", id0, "--format", "csv").stdout; got != want {
		t.Fatalf("B's export over iroh differs from A's local one:\n%.200s\nwant\n%.200s", got, want)
	}
	if got, w := b.ok("export", id1, "--format", "csv", "--fields", "id").stdout, a.ok("export", id1, "--format", "csv", "--fields", "id").stdout; got != w {
		t.Fatal("B's projection over iroh differs from A's")
	}
	// The table the grant named, by name: its objects from A, its schema
	// from B's catalog.
	if got, w := b.ok("export", "orders", "--format", "csv").stdout, a.ok("export", "orders", "--format", "csv").stdout; got != w {
		t.Fatal("B's export of the table over iroh differs from A's")
	}
	for _, c := range [][]string{{"verify", id0, id1}, {"verify", "orders"}, {"check", id0}, {"schema", id0}, {"schema", "orders"}, {"inspect", id1}} {
		b.ok(c...)
	}
	b.fails(exitUsage, []string{"cannot be listed"}, "verify", "--all")
	b.fails(exitUsage, []string{"read-only"}, "import", "--assign-field-ids", filepath.Join(dir, "a.csv"))
	b.fails(exitNotFound, []string{"ffff"}, "verify", strings.Repeat("ff", 32))

	// fetch: whole objects, verified, into B's own store.
	local := filepath.Join(t.TempDir(), "store-b")
	cache := filepath.Join(t.TempDir(), "cache-b")
	r := b.run(nil, "fetch", id0, id1, "--from", srv.ticket, "--store", local, "--cache", cache)
	if r.code != 0 || r.stdout != id0+"\n"+id1+"\n" {
		t.Fatalf("fetch: %s", r)
	}
	for _, id := range []string{id0, id1} {
		x, err := os.ReadFile(filepath.Join(a.store, id+".data"))
		if err != nil {
			t.Fatal(err)
		}
		y, err := os.ReadFile(filepath.Join(local, id+".data"))
		if err != nil || !bytes.Equal(x, y) {
			t.Fatalf("fetched %s differs from A's (%v)", id, err)
		}
	}
	if r := b.run([]string{"SOP_PME_STORE=" + local}, "verify", "--all"); r.code != 0 {
		t.Fatalf("verify --all of B's store: %s", r)
	}
	if r := b.run(nil, "fetch", id0, "--from", srv.ticket, "--store", local, "--cache", cache); r.code != 0 || !strings.Contains(r.stderr, "already in") {
		t.Fatalf("a second fetch of an object the store holds: %s", r)
	}
	b.fails(exitUsage, []string{"whole storage_id"}, "fetch", id0[:12], "--from", srv.ticket, "--store", local)

	// An object B was granted no key for: served (rescan), its bytes
	// verify, but B holds no DEK for it.
	id2 := a.importJSON(bigCSV(t, dir, "c.csv", 6000, 1000), "--assign-field-ids").StorageID
	deadline := time.Now().Add(20 * time.Second)
	for b.sop("verify", id2).code != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("serve did not pick up a new object within 20 s: %s", b.sop("verify", id2))
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.fails(exitKey, []string{"no DEK"}, "export", id2, "--format", "csv")

	// A lying node: A's copy of id1 damaged under its iroh directory. B
	// fails with exit 4 and prints no row of it.
	srv.stop()
	damageIroh(t, irohA, id1)
	srv = serve(t, a, irohA, "--rescan", "0")
	b.store = "iroh://" + srv.ticket
	r = b.fails(exitVerify, []string{id1, "does not match the storage_id"}, "export", id1, "--format", "csv")
	if strings.Contains(r.stdout, "value-") {
		t.Errorf("rows of the damaged object printed:\n%.300s", r.stdout)
	}
	b.fails(exitVerify, []string{id1}, "verify", id1)
	r = b.run(nil, "fetch", id1, "--from", srv.ticket, "--store", filepath.Join(t.TempDir(), "s"), "--cache", filepath.Join(t.TempDir(), "c"))
	if r.code != exitVerify {
		t.Errorf("fetch from a lying node: %s, want exit %d", r, exitVerify)
	}
	// An undamaged object of the same node still reads.
	b.ok("verify", id0)

	// Resumed from the cache: with A gone, a fetch of objects the cache
	// holds whole needs no network.
	srv.stop()
	other := filepath.Join(t.TempDir(), "store-b2")
	r = b.run(nil, "fetch", id0, id1, "--from", srv.ticket, "--store", other, "--cache", cache)
	if r.code != 0 {
		t.Fatalf("fetch from the cache with the node gone: %s", r)
	}
}

// TestIrohFetchResume: a fetch interrupted (SIGINT) midway publishes
// nothing in the store, and the next fetch with the same cache receives
// only what is missing, then commits the whole object, verified.
func TestIrohFetchResume(t *testing.T) {
	t.Parallel()
	a, b := newEnv(t), newEnv(t)
	a.bin, b.bin = irohBinary(t), irohBinary(t)
	// Any blob is an object to fetch: 128 MiB of random bytes, two fetch
	// calls of 64 MiB.
	const size = 2 * fetchChunk
	d, err := blobs.CreateDir(a.store)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p, err := d.Create(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewChaCha8([32]byte{7}))
	buf := make([]byte, 1<<20)
	for range size / len(buf) {
		for i := range buf {
			buf[i] = byte(rng.Uint32())
		}
		if _, err := p.Write(buf); err != nil {
			t.Fatal(err)
		}
	}
	sid, err := p.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	id := sid.String()
	srv := serve(t, a, filepath.Join(t.TempDir(), "iroh-a"), "--rescan", "0")
	received := regexp.MustCompile(`; (\d+) bytes received from the node`)

	for _, delay := range []time.Duration{150 * time.Millisecond, 300 * time.Millisecond, 600 * time.Millisecond, 1200 * time.Millisecond, 2400 * time.Millisecond} {
		local := filepath.Join(t.TempDir(), "store")
		cache := filepath.Join(t.TempDir(), "cache")
		cmd := exec.Command(b.binary(), "fetch", id, "--from", srv.ticket, "--store", local, "--cache", cache)
		cmd.Env = b.vars
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(delay)
		cmd.Process.Signal(os.Interrupt)
		err := cmd.Wait()
		if err == nil {
			t.Logf("fetch ended before SIGINT at %v; trying sooner is pointless, giving up on resumption", delay)
			break
		}
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitInterrupted {
			t.Logf("fetch interrupted at %v: %v (%s); trying later", delay, err, stderr.String())
			continue
		}
		if _, err := os.Stat(filepath.Join(local, id+".data")); !os.IsNotExist(err) {
			t.Fatalf("an interrupted fetch left the object in the store: %v", err)
		}
		r := b.run(nil, "fetch", id, "--from", srv.ticket, "--store", local, "--cache", cache)
		m := received.FindStringSubmatch(r.stderr)
		if r.code != 0 || m == nil {
			t.Fatalf("fetch after an interruption: %s", r)
		}
		n, _ := strconv.Atoi(m[1])
		if n >= size {
			t.Logf("fetch interrupted at %v had kept nothing (%d bytes received after); trying later", delay, n)
			continue
		}
		t.Logf("interrupted at %v; the resumed fetch received %d of %d bytes", delay, n, size)
		if r := b.run([]string{"SOP_PME_STORE=" + local}, "verify", id); r.code != 0 {
			t.Fatalf("verify of the resumed fetch: %s", r)
		}
		return
	}
	t.Fatal("no interruption left a partial fetch to resume")
}

// TestIrohServeAllow: serve --allow TABLE serves the table's objects and
// refuses every other object of the store (exit 3 at the reader), even one
// an earlier serve without --allow had copied into the same iroh store;
// --allow ID serves that object alone.
func TestIrohServeAllow(t *testing.T) {
	t.Parallel()
	a, b := newEnv(t), newEnv(t)
	a.bin, b.bin = irohBinary(t), irohBinary(t)
	dir := t.TempDir()
	res := a.importTable("orders", []string{bigCSV(t, dir, "a.csv", 0, 500)})
	loose := a.importJSON(bigCSV(t, dir, "b.csv", 500, 500), "--assign-field-ids").StorageID
	irohA := filepath.Join(t.TempDir(), "iroh-a")
	srv := serve(t, a, irohA, "--rescan", "0")
	b.store = "iroh://" + srv.ticket
	b.ok("verify", loose, res[0].StorageID)
	srv.stop()

	srv = serve(t, a, irohA, "--rescan", "0", "--allow", "orders")
	b.store = "iroh://" + srv.ticket
	b.ok("verify", res[0].StorageID)
	b.fails(exitNotFound, []string{loose}, "verify", loose)
	srv.stop()

	srv = serve(t, a, irohA, "--rescan", "0", "--allow", loose[:12])
	b.store = "iroh://" + srv.ticket
	b.ok("verify", loose)
	b.fails(exitNotFound, []string{res[0].StorageID}, "verify", res[0].StorageID)
	a.fails(exitNotFound, []string{"nosuch"}, "serve", "--allow", "nosuch", "--iroh-dir", filepath.Join(t.TempDir(), "x"))
}

// ciphertextIn returns the files under dir that hold a 64-byte piece of data
// (residue.Files): every regular file, the iroh-blobs database included.
func ciphertextIn(t *testing.T, dir string, data []byte) []string {
	t.Helper()
	hits, err := residue.Files(dir, data)
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

// waitNotServed waits (at most 20 s) until a read of each id from b's
// iroh:// store exits 3 (not found).
func waitNotServed(t *testing.T, b *env, ids ...string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for _, id := range ids {
		for {
			r := b.sop("verify", id)
			if r.code == exitNotFound {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s still read from the node 20 s after rm: %s", id, r)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// goneFrom waits until no file under dir holds a 64-byte piece of any of
// ciphers, for 20 s at most: the node stops serving an object (its
// allow-list) a moment before its garbage collection has removed the
// files, in the same rescan.
func goneFrom(t *testing.T, dir string, what string, ciphers ...[]byte) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for _, c := range ciphers {
		for {
			hits := ciphertextIn(t, dir, c)
			if len(hits) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("%s: its ciphertext is still in %v 20 s later", what, hits)
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// TestIrohServeDelete: an object removed from a served store (sop-pme rm)
// stops being served within a --rescan or so (a remote read exits 3) while
// the others still read, and no file under the node's iroh directory, its
// database included, holds a 64-byte piece of its ciphertext: one object
// over 16 KiB (a data file of its own) and one under (which iroh-blobs
// keeps inline in its database by default). With --allow TABLE, the table
// is read from the catalog again at each rescan: an object appended to it
// is served, one removed from it is deleted from the node, and so are the
// table's objects when it is dropped.
func TestIrohServeDelete(t *testing.T) {
	t.Parallel()
	a, b := newEnv(t), newEnv(t)
	a.bin, b.bin = irohBinary(t), irohBinary(t)
	dir := t.TempDir()
	res := a.importTable("orders", []string{bigCSV(t, dir, "big.csv", 0, 3000), bigCSV(t, dir, "small.csv", 3000, 5)})
	big, small := res[0], res[1]
	if big.Size <= 16<<10 || small.Size >= 16<<10 {
		t.Fatalf("objects of %d and %d bytes: want one over 16 KiB and one under", big.Size, small.Size)
	}
	keep := a.importJSON(bigCSV(t, dir, "keep.csv", 4000, 5), "--assign-field-ids").StorageID
	cipher := map[string][]byte{}
	for _, id := range []string{big.StorageID, small.StorageID} {
		c, err := os.ReadFile(filepath.Join(a.store, id+".data"))
		if err != nil {
			t.Fatal(err)
		}
		cipher[id] = c
	}
	irohA := filepath.Join(t.TempDir(), "iroh-a")
	srv := serve(t, a, irohA, "--rescan", "200ms")
	b.store = "iroh://" + srv.ticket
	b.ok("verify", big.StorageID, small.StorageID, keep)
	for id, c := range cipher {
		if len(ciphertextIn(t, irohA, c)) == 0 {
			t.Fatalf("the test does not see %s's ciphertext under the node's iroh directory while it is served", id)
		}
	}

	start := time.Now()
	a.ok("rm", "--yes", "--table", "orders", big.StorageID, small.StorageID)
	waitNotServed(t, b, big.StorageID, small.StorageID)
	t.Logf("not served %v after rm (--rescan 200ms)", time.Since(start).Round(time.Millisecond))
	b.ok("verify", keep)
	for id, c := range cipher {
		goneFrom(t, irohA, id, c)
	}
	srv.stop()

	// --allow TABLE, resolved again at each rescan.
	srv = serve(t, a, irohA, "--rescan", "200ms", "--allow", "orders")
	b.store = "iroh://" + srv.ticket
	b.fails(exitNotFound, []string{keep}, "verify", keep)
	added := a.importTable("orders", []string{bigCSV(t, dir, "more.csv", 5000, 2000)})[0].StorageID
	deadline := time.Now().Add(20 * time.Second)
	for b.sop("verify", added).code != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("an object appended to the allowed table not served within 20 s: %s", b.sop("verify", added))
		}
		time.Sleep(100 * time.Millisecond)
	}
	addedCipher, err := os.ReadFile(filepath.Join(a.store, added+".data"))
	if err != nil {
		t.Fatal(err)
	}
	a.ok("rm", "--yes", "--table", "orders", added)
	waitNotServed(t, b, added)
	goneFrom(t, irohA, "the object removed from the table", addedCipher)
	// Still in the store, no longer allowed: keep, which an earlier serve
	// without --allow had copied, is gone from the node too.
	keepCipher, err := os.ReadFile(filepath.Join(a.store, keep+".data"))
	if err != nil {
		t.Fatal(err)
	}
	goneFrom(t, irohA, "an object no longer allowed", keepCipher)

	// The table dropped (rm TABLE): its objects go, and serve keeps going.
	last := a.importTable("orders", []string{bigCSV(t, dir, "last.csv", 8000, 2000)})[0].StorageID
	deadline = time.Now().Add(20 * time.Second)
	for b.sop("verify", last).code != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("an object appended to the allowed table not served within 20 s: %s", b.sop("verify", last))
		}
		time.Sleep(100 * time.Millisecond)
	}
	lastCipher, err := os.ReadFile(filepath.Join(a.store, last+".data"))
	if err != nil {
		t.Fatal(err)
	}
	a.ok("rm", "--yes", "orders")
	waitNotServed(t, b, last)
	goneFrom(t, irohA, "an object of the dropped table", lastCipher)
}
