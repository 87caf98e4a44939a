package keyring_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/sovm/sop-pme/keyring"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/storageid"
)

// v1Ring copies testdata/v1 (a ring written by the version-1 code) and
// returns its path, its KEK and its DEKs.
func v1Ring(t *testing.T) (string, keyring.KEK, map[storageid.ID]pme.DEK) {
	t.Helper()
	raw, err := os.ReadFile("testdata/v1/ring.json")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "keyring.json")
	os.WriteFile(path, raw, 0o600)
	k, _ := os.ReadFile("testdata/v1/kek")
	kek, err := keyring.KEKFromBytes(k)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open("testdata/v1/deks.txt")
	defer f.Close()
	deks := map[storageid.ID]pme.DEK{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		id, err1 := storageid.Parse(fs[0])
		b, err2 := hex.DecodeString(fs[1])
		d, err3 := pme.DEKFromBytes(b)
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatalf("deks.txt: %q", sc.Text())
		}
		deks[id] = d
	}
	if len(deks) != 40 {
		t.Fatalf("deks.txt lists %d DEKs", len(deks))
	}
	return path, kek, deks
}

func TestImportV1(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	jsonPath, kek, deks := v1Ring(t)
	before, _ := os.ReadFile(jsonPath)
	if _, err := keyring.Open(ctx, jsonPath, kek); !errors.Is(err, keyring.ErrLegacyFormat) {
		t.Fatalf("Open of a version-1 file: %v", err)
	}
	if _, err := keyring.Open(ctx, jsonPath, kek, keyring.WithCreate()); !errors.Is(err, keyring.ErrLegacyFormat) {
		t.Fatalf("Open WithCreate of a version-1 file: %v", err)
	}
	path := filepath.Join(t.TempDir(), "ring")
	r := createRing(t, path, keyring.NewKEK()) // the new ring may have another master
	if _, err := r.ImportV1(ctx, jsonPath, keyring.NewKEK()); !errors.Is(err, keyring.ErrWrongKEK) {
		t.Fatalf("import under another KEK: %v", err)
	}
	n, err := r.ImportV1(ctx, jsonPath, kek)
	if err != nil || n != 40 {
		t.Fatalf("import: %d, %v", n, err)
	}
	for id, want := range deks {
		if got, err := r.ResolveDEK(ctx, id); err != nil || !got.Equal(want) {
			t.Fatalf("%s after import: %v", id, err)
		}
	}
	// Again: nothing new, nothing lost.
	if n, err := r.ImportV1(ctx, jsonPath, kek); err != nil || n != 0 {
		t.Fatalf("second import: %d, %v", n, err)
	}
	if after, _ := os.ReadFile(jsonPath); !bytes.Equal(before, after) {
		t.Fatal("the import changed the version-1 file")
	}
	// A different DEK held for one of the ids: the import is refused whole.
	var some storageid.ID
	for some = range deks {
		break
	}
	other := pme.NewDEK()
	r2 := createRing(t, filepath.Join(t.TempDir(), "ring"), keyring.NewKEK())
	r2.Put(ctx, some, other)
	if _, err := r2.ImportV1(ctx, jsonPath, kek); !errors.Is(err, keyring.ErrConflict) {
		t.Fatalf("conflicting import: %v", err)
	}
	if n := ringLen(t, r2); n != 1 {
		t.Fatalf("a refused import left %d DEKs", n)
	}
	if got, _ := r2.ResolveDEK(ctx, some); !got.Equal(other) {
		t.Fatal("a refused import replaced a DEK")
	}
}

func TestImportV1Malformed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	kek, _ := keyring.KEKFromBytes(make([]byte, keyring.KEKSize))
	r := createRing(t, filepath.Join(t.TempDir(), "ring"), kek)
	raw, _ := os.ReadFile("testdata/v1/ring.json")
	dir := t.TempDir()
	for name, content := range map[string]string{
		"empty":         "",
		"not json":      "hello",
		"wrong format":  `{"format":"x","check":"","keys":{}}`,
		"unknown field": `{"format":"sop-pme-keyring-v1","check":"","keys":{},"x":1}`,
		"trailing":      `{"format":"sop-pme-keyring-v1","check":"","keys":{}} {}`,
		"bad check":     `{"format":"sop-pme-keyring-v1","check":"!!","keys":{}}`,
		"short check":   `{"format":"sop-pme-keyring-v1","check":"AAAA","keys":{}}`,
		"other kek":     string(raw),
	} {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		os.WriteFile(path, []byte(content), 0o600)
		if _, err := r.ImportV1(ctx, path, kek); !errors.Is(err, keyring.ErrFile) && !errors.Is(err, keyring.ErrWrongKEK) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if n := ringLen(t, r); n != 0 {
		t.Fatalf("malformed imports left %d DEKs", n)
	}
}

// pageSize and meta offsets of a bbolt file (version 2, little-endian).
const (
	metaOff     = 16
	offPageSize = metaOff + 8
	offRoot     = metaOff + 16
	offFreelist = metaOff + 32
	offPgid     = metaOff + 40
	offSum      = metaOff + 56
)

// resum recomputes the checksum of the meta page at off, as someone who
// crafts a file would.
func resum(b []byte, off int) {
	h := fnv.New64a()
	h.Write(b[off+metaOff : off+offSum])
	binary.LittleEndian.PutUint64(b[off+offSum:], h.Sum64())
}

func TestMalformedFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	kek, _ := keyring.KEKFromBytes(make([]byte, keyring.KEKSize))
	good := filepath.Join(t.TempDir(), "ring")
	r := createRing(t, good, kek)
	r.Put(ctx, ids(1)[0], pme.NewDEK())
	valid, _ := os.ReadFile(good)
	ps := int(binary.LittleEndian.Uint32(valid[offPageSize:]))
	edit := func(f func(b []byte)) []byte {
		b := bytes.Clone(valid)
		f(b)
		return b
	}
	bothMetas := func(f func(b []byte, off int)) []byte {
		return edit(func(b []byte) {
			for _, off := range []int{0, ps} {
				f(b, off)
				resum(b, off)
			}
		})
	}
	noise := make([]byte, 5*ps)
	for i := range noise {
		noise[i] = byte(i * 7)
	}
	dir := t.TempDir()
	cases := map[string][]byte{
		"empty":     {},
		"short":     []byte("PAR1"),
		"noise":     noise,
		"truncated": valid[:len(valid)/2],
		"metas zeroed": edit(func(b []byte) {
			clear(b[:2*ps])
		}),
		"pages beyond the file": bothMetas(func(b []byte, off int) {
			binary.LittleEndian.PutUint64(b[off+offPgid:], uint64(len(b)/ps+1))
		}),
		"root beyond the pages": bothMetas(func(b []byte, off int) {
			binary.LittleEndian.PutUint64(b[off+offRoot:], binary.LittleEndian.Uint64(b[off+offPgid:]))
		}),
		"page size 3000": bothMetas(func(b []byte, off int) {
			binary.LittleEndian.PutUint32(b[off+offPageSize:], 3000)
		}),
		// bbolt would allocate 2^40 page ids for this freelist.
		"freelist count": edit(func(b []byte) {
			for _, off := range []int{0, ps} {
				fl := int(binary.LittleEndian.Uint64(b[off+offFreelist:]))
				binary.LittleEndian.PutUint16(b[fl*ps+10:], 0xFFFF)
				binary.LittleEndian.PutUint64(b[fl*ps+16:], 1<<40)
			}
		}),
		"freelist names a meta page": edit(func(b []byte) {
			for _, off := range []int{0, ps} {
				fl := int(binary.LittleEndian.Uint64(b[off+offFreelist:]))
				binary.LittleEndian.PutUint16(b[fl*ps+10:], 1)
				binary.LittleEndian.PutUint64(b[fl*ps+16:], 1)
			}
		}),
	}
	for name, content := range cases {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		os.WriteFile(path, content, 0o600)
		for _, opt := range []keyring.Option{keyring.WithReadOnly(), keyring.WithLockTimeout(time.Second)} {
			if _, err := keyring.Open(ctx, path, kek, opt); !errors.Is(err, keyring.ErrFile) {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
	// Valid bbolt files that are not rings.
	bad := func(name string, fn func(tx *bolt.Tx) error) string {
		path := filepath.Join(dir, name)
		os.WriteFile(path, valid, 0o600)
		editFile(t, path, fn)
		return path
	}
	for name, fn := range map[string]func(tx *bolt.Tx) error{
		"no ring": func(tx *bolt.Tx) error { tx.DeleteBucket([]byte("deks")); return tx.DeleteBucket([]byte("meta")) },
		"no deks": func(tx *bolt.Tx) error { return tx.DeleteBucket([]byte("deks")) },
		"format": func(tx *bolt.Tx) error {
			return tx.Bucket([]byte("meta")).Put([]byte("format"), []byte("sop-pme-keyring-v9"))
		},
		"no ring key":  func(tx *bolt.Tx) error { return tx.Bucket([]byte("meta")).Delete([]byte("ring-key")) },
		"big ring key": func(tx *bolt.Tx) error { return tx.Bucket([]byte("meta")).Put([]byte("ring-key"), make([]byte, 1<<20)) },
	} {
		if _, err := keyring.Open(ctx, bad(name, fn), kek); !errors.Is(err, keyring.ErrFile) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// A ring key the master opens but of the wrong size.
	short, _ := kek.Encrypt(ctx, make([]byte, 16))
	p := bad("short ring key", func(tx *bolt.Tx) error { return tx.Bucket([]byte("meta")).Put([]byte("ring-key"), short) })
	if _, err := keyring.Open(ctx, p, kek); !errors.Is(err, keyring.ErrFile) {
		t.Errorf("short ring key: %v", err)
	}
	// A wrapped DEK of the wrong length, and a key that is not a storage_id.
	id := ids(1)[0]
	p = bad("bad entry", func(tx *bolt.Tx) error {
		d := tx.Bucket([]byte("deks"))
		if err := d.Put(id[:], make([]byte, 1000)); err != nil {
			return err
		}
		return d.Put([]byte("short key"), make([]byte, 60))
	})
	r2 := openRing(t, p, kek)
	if _, err := r2.ResolveDEK(ctx, id); !errors.Is(err, keyring.ErrFile) {
		t.Errorf("a wrapped DEK of 1000 bytes: %v", err)
	}
	if err := r2.Rekey(ctx, nil); !errors.Is(err, keyring.ErrFile) {
		t.Errorf("Rekey over a bad entry: %v", err)
	}
	// A ring file that is a directory.
	if _, err := keyring.Open(ctx, t.TempDir(), kek); err == nil {
		t.Error("a directory opened as a ring")
	}
}

// A master that is not a KEK: it counts its calls, and notes any call made
// while the ring file is locked for writing (a master inside a write
// transaction).
type countingMaster struct {
	kek              keyring.KEK
	path             string
	enc, dec, locked int
}

func (m *countingMaster) Encrypt(ctx context.Context, pt []byte) ([]byte, error) {
	m.enc++
	if writeLocked(m.path) {
		m.locked++
	}
	return m.kek.Encrypt(ctx, pt)
}

func (m *countingMaster) Decrypt(ctx context.Context, ct []byte) ([]byte, error) {
	m.dec++
	if writeLocked(m.path) {
		m.locked++
	}
	return m.kek.Decrypt(ctx, ct)
}

// TestMasterCalls: a master is called once per ring key, never per DEK, and
// never while the file is locked for writing, even when another Ring
// re-keys the ring between two Puts.
func TestMasterCalls(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ring")
	m := &countingMaster{kek: keyring.NewKEK(), path: path}
	r, err := keyring.Open(ctx, path, m, keyring.WithCreate())
	if err != nil {
		t.Fatal(err)
	}
	if m.enc != 1 || m.dec != 0 {
		t.Fatalf("creation: %d encryptions, %d decryptions", m.enc, m.dec)
	}
	for _, id := range ids(20) {
		if err := r.Put(ctx, id, pme.NewDEK()); err != nil {
			t.Fatal(err)
		}
		if _, err := r.ResolveDEK(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if m.enc != 1 || m.dec != 0 {
		t.Fatalf("20 puts and resolutions: %d encryptions, %d decryptions", m.enc, m.dec)
	}
	other, err := keyring.Open(ctx, path, &countingMaster{kek: m.kek, path: path})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := other.Rekey(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if err := r.Put(ctx, storageid.Sum([]byte(fmt.Sprint("after ", m.dec))), pme.NewDEK()); err != nil {
			t.Fatal(err)
		}
	}
	if m.dec != 3 {
		t.Fatalf("3 re-keys elsewhere cost %d decryptions", m.dec)
	}
	if err := r.Rotate(ctx, m); err != nil {
		t.Fatal(err)
	}
	if err := r.Rekey(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if m.locked != 0 {
		t.Fatalf("%d master calls while the ring file was locked for writing", m.locked)
	}
	for _, id := range ids(20) {
		if _, err := openRing(t, path, m.kek).ResolveDEK(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
}

func TestKEKFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "kek")
	k, err := keyring.CreateKEKFile(path)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 || st.Size() != keyring.KEKSize {
		t.Fatalf("KEK file: mode %v, %d bytes", st.Mode(), st.Size())
	}
	raw, _ := os.ReadFile(path)
	if !bytes.Equal(raw, k.Bytes()) {
		t.Fatal("the file does not hold the KEK")
	}
	if _, err := keyring.CreateKEKFile(path); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("CreateKEKFile over a file: %v", err)
	}
	if again, _ := os.ReadFile(path); !bytes.Equal(again, raw) {
		t.Fatal("CreateKEKFile replaced a KEK")
	}
	l, err := keyring.LoadKEKFile(path)
	if err != nil || !l.Equal(k) {
		t.Fatalf("load: %v", err)
	}
	l, created, err := keyring.LoadOrCreateKEKFile(path)
	if err != nil || created || !l.Equal(k) {
		t.Fatalf("load or create of an existing file: %v, created %v", err, created)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("temporary files left: %v", ents)
	}
	if _, err := keyring.LoadKEKFile(filepath.Join(dir, "none")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
	for name, c := range map[string]struct {
		content []byte
		mode    os.FileMode
	}{
		"short":        {make([]byte, 31), 0o600},
		"long":         {make([]byte, 33), 0o600},
		"hex":          {[]byte(hex.EncodeToString(raw)), 0o600},
		"group reads":  {raw, 0o640},
		"others read":  {raw, 0o604},
		"others write": {raw, 0o602},
	} {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		os.WriteFile(p, c.content, 0o600)
		os.Chmod(p, c.mode)
		if _, err := keyring.LoadKEKFile(p); !errors.Is(err, keyring.ErrKEKFile) {
			t.Errorf("%s: %v", name, err)
		}
		if _, _, err := keyring.LoadOrCreateKEKFile(p); !errors.Is(err, keyring.ErrKEKFile) {
			t.Errorf("load or create, %s: %v", name, err)
		}
	}
	if _, err := keyring.LoadKEKFile(dir); !errors.Is(err, keyring.ErrKEKFile) {
		t.Errorf("a directory: %v", err)
	}
}

// TestKEKFileRace: goroutines that load-or-create one KEK file at once all
// end with the same KEK (version 1 of the CLI wrote without O_EXCL, and
// the last writer won).
func TestKEKFileRace(t *testing.T) {
	t.Parallel()
	for trial := range 20 {
		path := filepath.Join(t.TempDir(), "kek")
		const n = 8
		keys := make([]keyring.KEK, n)
		made := make([]bool, n)
		errs := make([]error, n)
		start := make(chan struct{})
		done := make(chan int)
		for i := range n {
			go func() {
				<-start
				keys[i], made[i], errs[i] = keyring.LoadOrCreateKEKFile(path)
				done <- i
			}()
		}
		close(start)
		for range n {
			<-done
		}
		creators := 0
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("trial %d: %v", trial, errs[i])
			}
			if !keys[i].Equal(keys[0]) {
				t.Fatalf("trial %d: two KEKs", trial)
			}
			if made[i] {
				creators++
			}
		}
		if creators != 1 {
			t.Fatalf("trial %d: %d creators", trial, creators)
		}
	}
}

// secretForms lists the ways fmt could show a key's bytes.
func secretForms(key []byte) []string {
	return []string{
		string(key),
		hex.EncodeToString(key),
		strings.ToUpper(hex.EncodeToString(key)),
		fmt.Sprint(key), // [12 34 …], as fmt prints a []byte field it cannot format
		fmt.Sprintf("%v", key[:8])[1:20],
		fmt.Sprintf("%#v", key)[8:40],
		fmt.Sprintf("%q", key)[1:20],
	}
}

type kekInner struct {
	k keyring.KEK
}

type KEKHolder struct {
	K      keyring.KEK
	k      keyring.KEK
	P      *keyring.KEK
	p      *keyring.KEK
	in     kekInner
	In     kekInner
	list   []keyring.KEK
	byName map[string]keyring.KEK
	any    any
}

// TestKEKPrinting prints KEKs in every position fmt reaches: version 1
// printed the raw key of a KEK held in an unexported field.
func TestKEKPrinting(t *testing.T) {
	t.Parallel()
	k := keyring.NewKEK()
	h := KEKHolder{K: k, k: k, P: &k, p: &k, in: kekInner{k}, In: kekInner{k},
		list: []keyring.KEK{k, k}, byName: map[string]keyring.KEK{"a": k}, any: k}
	values := map[string]any{
		"value": k, "pointer": &k, "struct": h, "struct pointer": &h,
		"slice": []keyring.KEK{k}, "array": [1]keyring.KEK{k}, "map": map[string]keyring.KEK{"x": k},
		"map key": map[keyring.KEK]int{k: 1}, "nested slice": []kekInner{{k}}, "slice of any": []any{k, h},
	}
	forms := secretForms(k.Bytes())
	for name, v := range values {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%x", "%X", "%q", "%d"} {
			out := fmt.Sprintf(verb, v)
			for _, f := range forms {
				if strings.Contains(out, f) {
					t.Errorf("%s with %s printed the key: %s", name, verb, out)
					break
				}
			}
		}
	}
	if out := fmt.Sprint(k); out != "keyring.KEK(REDACTED)" {
		t.Errorf("a KEK printed %q", out)
	}
}

func TestKEKAsMaster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	k := keyring.NewKEK()
	ct, err := k.Encrypt(ctx, []byte("ring key"))
	if err != nil {
		t.Fatal(err)
	}
	if pt, err := k.Decrypt(ctx, ct); err != nil || string(pt) != "ring key" {
		t.Fatal(err)
	}
	for name, c := range map[string][]byte{"empty": nil, "short": ct[:20], "altered": append(ct[:len(ct)-1:len(ct)-1], ct[len(ct)-1]^1)} {
		if _, err := k.Decrypt(ctx, c); !errors.Is(err, keyring.ErrWrongKEK) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := keyring.NewKEK().Decrypt(ctx, ct); !errors.Is(err, keyring.ErrWrongKEK) {
		t.Fatal(err)
	}
	if _, err := (keyring.KEK{}).Encrypt(ctx, nil); !errors.Is(err, keyring.ErrKEK) {
		t.Fatal(err)
	}
	if _, err := json_(k); err == nil {
		t.Fatal("a KEK marshalled")
	}
}

func json_(v any) ([]byte, error) { return json.Marshal(v) }
