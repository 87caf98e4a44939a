package keyring_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/sovm/sop-pme/keyring"
)

// rawRecords returns the stored (encrypted) values of a space, by key.
func rawRecords(t *testing.T, path, space string) map[string][]byte {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := map[string][]byte{}
	db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("records")).Bucket([]byte(space))
		return b.ForEach(func(k, v []byte) error {
			out[string(k)] = bytes.Clone(v)
			return nil
		})
	})
	return out
}

func putRecords(t *testing.T, rs *keyring.Records, kv map[string]string) {
	t.Helper()
	err := rs.Update(context.Background(), func(tx *keyring.RecordTx) error {
		for k, v := range kv {
			if err := tx.Put([]byte(k), []byte(v)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func getRecord(rs *keyring.Records, key string) (string, error) {
	var v []byte
	err := rs.View(context.Background(), func(tx *keyring.RecordTx) error {
		var err error
		v, err = tx.Get([]byte(key))
		return err
	})
	return string(v), err
}

func TestRecordsRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ring")
	kek := keyring.NewKEK()
	r := createRing(t, path, kek)
	rs := r.Records("catalog")
	// A space never written reads as empty.
	if _, err := getRecord(rs, "a"); !errors.Is(err, keyring.ErrNoRecord) {
		t.Fatalf("empty space: %v", err)
	}
	putRecords(t, rs, map[string]string{"b": "two", "a": "one", "c": ""})
	putRecords(t, r.Records("other"), map[string]string{"a": "elsewhere"})
	r2 := openRing(t, path, kek)
	if v, err := getRecord(r2.Records("catalog"), "a"); err != nil || v != "one" {
		t.Fatalf("Get a = %q, %v", v, err)
	}
	if v, err := getRecord(r2.Records("other"), "a"); err != nil || v != "elsewhere" {
		t.Fatalf("Get other/a = %q, %v", v, err)
	}
	var keys []string
	err := r2.Records("catalog").View(ctx, func(tx *keyring.RecordTx) error {
		return tx.ForEach(func(k, v []byte) error {
			keys = append(keys, string(k)+"="+string(v))
			return nil
		})
	})
	if err != nil || strings.Join(keys, ",") != "a=one,b=two,c=" {
		t.Fatalf("ForEach: %v, %v", keys, err)
	}
	// An error of the function is returned as it is, and nothing is written.
	mine := errors.New("mine")
	err = rs.Update(ctx, func(tx *keyring.RecordTx) error {
		tx.Put([]byte("d"), []byte("x"))
		return mine
	})
	if err != mine {
		t.Fatalf("Update returned %v, want the function's error", err)
	}
	if _, err := getRecord(rs, "d"); !errors.Is(err, keyring.ErrNoRecord) {
		t.Fatalf("a failed Update wrote: %v", err)
	}
	// Delete, and the DEKs are unaffected.
	err = rs.Update(ctx, func(tx *keyring.RecordTx) error { return tx.Delete([]byte("b")) })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := getRecord(rs, "b"); !errors.Is(err, keyring.ErrNoRecord) {
		t.Fatalf("deleted record: %v", err)
	}
	if n := ringLen(t, r); n != 0 {
		t.Fatalf("records counted as DEKs: %d", n)
	}
	// Bounds.
	err = rs.Update(ctx, func(tx *keyring.RecordTx) error {
		if err := tx.Put(make([]byte, keyring.MaxRecordKey+1), nil); !errors.Is(err, keyring.ErrRecordSize) {
			t.Errorf("long key: %v", err)
		}
		if err := tx.Put(nil, nil); !errors.Is(err, keyring.ErrRecordSize) {
			t.Errorf("empty key: %v", err)
		}
		if err := tx.Put([]byte("k"), make([]byte, keyring.MaxRecordValue+1)); !errors.Is(err, keyring.ErrRecordSize) {
			t.Errorf("long value: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := getRecord(r.Records(""), "a"); !errors.Is(err, keyring.ErrRecordSize) {
		t.Errorf("empty space: %v", err)
	}
	// Writes inside View are refused.
	err = rs.View(ctx, func(tx *keyring.RecordTx) error { return tx.Put([]byte("a"), nil) })
	if !errors.Is(err, keyring.ErrReadOnly) {
		t.Errorf("Put in View: %v", err)
	}
}

// TestRecordsAD: a record's space and key are its associated data: a value
// copied to another key, or to the same key of another space, does not open.
func TestRecordsAD(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ring")
	kek := keyring.NewKEK()
	r := createRing(t, path, kek)
	putRecords(t, r.Records("s1"), map[string]string{"a": "one", "b": "two"})
	putRecords(t, r.Records("s2"), map[string]string{"x": "three"})
	editFile(t, path, func(tx *bolt.Tx) error {
		top := tx.Bucket([]byte("records"))
		s1, s2 := top.Bucket([]byte("s1")), top.Bucket([]byte("s2"))
		a := bytes.Clone(s1.Get([]byte("a")))
		if err := s1.Put([]byte("b"), a); err != nil {
			return err
		}
		if err := s2.Put([]byte("a"), a); err != nil {
			return err
		}
		return s2.Put([]byte("short"), a[:20])
	})
	r2 := openRing(t, path, kek)
	if v, err := getRecord(r2.Records("s1"), "a"); err != nil || v != "one" {
		t.Fatalf("untouched record: %q, %v", v, err)
	}
	for _, c := range []struct{ space, key string }{{"s1", "b"}, {"s2", "a"}, {"s2", "short"}} {
		if _, err := getRecord(r2.Records(c.space), c.key); !errors.Is(err, keyring.ErrRecord) {
			t.Errorf("moved record %s/%s: %v", c.space, c.key, err)
		}
	}
	// A re-key refuses to carry it, and changes nothing.
	before, _ := os.ReadFile(path)
	if err := r2.Rekey(context.Background(), nil); !errors.Is(err, keyring.ErrRecord) {
		t.Fatalf("Rekey over a moved record: %v", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("a failed Rekey changed the file")
	}
}

// TestRecordsRekey: Rekey rewraps every record with the DEKs; the old
// stored values are nowhere in the file. Rotate leaves records as they are.
func TestRecordsRekey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ring")
	k1, k2, k3 := keyring.NewKEK(), keyring.NewKEK(), keyring.NewKEK()
	r := createRing(t, path, k1)
	fillRing(t, r, 50)
	kv := map[string]string{}
	for i := range 200 {
		kv[fmt.Sprint("key ", i)] = strings.Repeat(fmt.Sprint(i), 40)
	}
	putRecords(t, r.Records("catalog"), kv)
	old := map[string][]byte{}
	for k, v := range rawRecords(t, path, "catalog") {
		old["the old record "+k] = v
	}
	mustHold(t, path, old)
	if err := r.Rekey(ctx, k2); err != nil {
		t.Fatal(err)
	}
	fileHolds(t, path, "after Rekey", old)
	if pages, tail := residue(t, path); len(pages) > 0 || tail {
		t.Errorf("after Rekey, free pages %v hold bytes (past the last page: %v)", pages, tail)
	}
	before := rawRecords(t, path, "catalog")
	if err := r.Rotate(ctx, k3); err != nil {
		t.Fatal(err)
	}
	after := rawRecords(t, path, "catalog")
	for k, v := range before {
		if !bytes.Equal(after[k], v) {
			t.Fatalf("Rotate rewrote record %q", k)
		}
	}
	r2 := openRing(t, path, k3)
	for k, want := range kv {
		if v, err := getRecord(r2.Records("catalog"), k); err != nil || v != want {
			t.Fatalf("record %q after Rekey and Rotate: %q, %v", k, v, err)
		}
	}
	if n := ringLen(t, r2); n != 50 {
		t.Fatalf("%d DEKs after Rekey", n)
	}
}

// TestRecordsShred: a deleted or replaced record is nowhere in the file
// once Update returns, and no free page holds anything.
func TestRecordsShred(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ring")
	r := createRing(t, path, keyring.NewKEK())
	rs := r.Records("catalog")
	kv := map[string]string{}
	for i := range 100 {
		kv[fmt.Sprint("key ", i)] = strings.Repeat(fmt.Sprint(i), 30)
	}
	putRecords(t, rs, kv)
	raw := rawRecords(t, path, "catalog")
	gone := map[string][]byte{"the deleted record": raw["key 7"], "the replaced record": raw["key 8"]}
	mustHold(t, path, gone)
	err := rs.Update(ctx, func(tx *keyring.RecordTx) error {
		if err := tx.Delete([]byte("key 7")); err != nil {
			return err
		}
		return tx.Put([]byte("key 8"), []byte("new"))
	})
	if err != nil {
		t.Fatal(err)
	}
	fileHolds(t, path, "after Delete and Put", gone)
	if pages, tail := residue(t, path); len(pages) > 0 || tail {
		t.Errorf("free pages %v hold bytes (past the last page: %v)", pages, tail)
	}
}

func TestRecordsReadOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ring")
	kek := keyring.NewKEK()
	putRecords(t, createRing(t, path, kek).Records("s"), map[string]string{"a": "one"})
	ro, err := keyring.Open(ctx, path, kek, keyring.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	if v, err := getRecord(ro.Records("s"), "a"); err != nil || v != "one" {
		t.Fatalf("read-only Get: %q, %v", v, err)
	}
	err = ro.Records("s").Update(ctx, func(tx *keyring.RecordTx) error { return nil })
	if !errors.Is(err, keyring.ErrReadOnly) {
		t.Fatalf("read-only Update: %v", err)
	}
}

// recordsChild runs n Updates, each incrementing the shared record
// "counter" and putting a record of its own, and prints "rec KEY" for each
// one acknowledged.
func recordsChild(ctx context.Context, path string, kek keyring.KEK, n int) int {
	r, err := keyring.Open(ctx, path, kek)
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		return 3
	}
	rs := r.Records("counters")
	prefix := os.Getenv("SOP_PME_PREFIX")
	for i := range n {
		key := fmt.Sprintf("%s%d", strings.ReplaceAll(prefix, " ", "_"), i)
		err := rs.Update(ctx, func(tx *keyring.RecordTx) error {
			return bump(tx, key)
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "update:", err)
			return 1
		}
		fmt.Printf("rec %s\n", key)
	}
	return 0
}

func bump(tx *keyring.RecordTx, key string) error {
	v, err := tx.Get([]byte("counter"))
	if err != nil && !errors.Is(err, keyring.ErrNoRecord) {
		return err
	}
	var c uint64
	if len(v) == 8 {
		c = binary.BigEndian.Uint64(v)
	}
	if err := tx.Put([]byte("counter"), binary.BigEndian.AppendUint64(nil, c+1)); err != nil {
		return err
	}
	return tx.Put([]byte(key), []byte("x"))
}

// TestRecordsConcurrentProcesses: Updates from two child processes and this
// one, read-modify-write of one counter, lose nothing.
func TestRecordsConcurrentProcesses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ring")
	kek := keyring.NewKEK()
	r := createRing(t, path, kek)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const n = 40
	var mu sync.Mutex
	acked := map[string]bool{}
	var wg sync.WaitGroup
	for i := range 2 {
		cmd := exec.CommandContext(ctx, exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"=records",
			"SOP_PME_RING="+path, "SOP_PME_KEK="+hex.EncodeToString(kek.Bytes()),
			"SOP_PME_N="+strconv.Itoa(n), fmt.Sprintf("SOP_PME_PREFIX=child %d ", i),
			"SOP_PME_DEADLINE=90s")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			if err := cmd.Wait(); err != nil {
				t.Errorf("child %d: %v\n%s", i, err, stderr.String())
			}
			mu.Lock()
			defer mu.Unlock()
			for line := range strings.Lines(stdout.String()) {
				if f := strings.Fields(line); len(f) == 2 && f[0] == "rec" {
					acked[f[1]] = true
				}
			}
		})
	}
	rs := r.Records("counters")
	deadline := time.Now().Add(90 * time.Second)
	for i := range n {
		key := fmt.Sprint("parent_", i)
		if err := rs.Update(ctx, func(tx *keyring.RecordTx) error { return bump(tx, key) }); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		acked[key] = true
		mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatal("too slow")
		}
	}
	wg.Wait()
	if len(acked) != 3*n {
		t.Fatalf("%d Updates acknowledged, want %d", len(acked), 3*n)
	}
	seen := 0
	err = openRing(t, path, kek).Records("counters").View(ctx, func(tx *keyring.RecordTx) error {
		v, err := tx.Get([]byte("counter"))
		if err != nil {
			return err
		}
		if c := binary.BigEndian.Uint64(v); c != 3*n {
			t.Errorf("counter %d, want %d", c, 3*n)
		}
		return tx.ForEach(func(k, _ []byte) error {
			if acked[string(k)] {
				seen++
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen != 3*n {
		t.Fatalf("%d of %d acknowledged records found", seen, 3*n)
	}
}

// TestRecordsRaceRekey: Updates and Views through two Rings while a third
// Ring and a child process re-key the ring again and again: every
// acknowledged Update is found, the counter counts each once, and no View
// fails (a re-key between a View's reading and its unwrapping is retried).
func TestRecordsRaceRekey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ring")
	kek := keyring.NewKEK()
	createRing(t, path, kek)
	const n = 30
	var wg sync.WaitGroup
	for g := range 2 {
		rs := openRing(t, path, kek).Records("counters")
		wg.Go(func() {
			for i := range n {
				key := fmt.Sprint("g", g, "_", i)
				if err := rs.Update(ctx, func(tx *keyring.RecordTx) error { return bump(tx, key) }); err != nil {
					t.Errorf("update: %v", err)
					return
				}
				if _, err := getRecord(rs, key); err != nil {
					t.Errorf("view: %v", err)
					return
				}
			}
		})
	}
	rk := openRing(t, path, kek)
	wg.Go(func() {
		for range 10 {
			if err := rk.Rekey(ctx, nil); err != nil {
				t.Errorf("rekey: %v", err)
				return
			}
		}
	})
	runChildren(t, path, kek, 10, "rekey")
	wg.Wait()
	v, err := getRecord(openRing(t, path, kek).Records("counters"), "counter")
	if err != nil {
		t.Fatal(err)
	}
	if c := binary.BigEndian.Uint64([]byte(v)); c != 2*n {
		t.Fatalf("counter %d, want %d", c, 2*n)
	}
}
