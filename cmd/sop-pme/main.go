// Command sop-pme writes, reads, verifies and checks SOP-PME-1 objects in a
// directory store.
//
//	sop-pme demo    [-store DIR] [-kek FILE] [-keyring FILE] [-rows N]   write a sample table, read it back
//	sop-pme read    [-store DIR] [-kek FILE] [-keyring FILE] -id ID [-fields 1,3] [-limit N]
//	sop-pme verify  [-store DIR] [-kek FILE] [-keyring FILE] -id ID
//	sop-pme check   [-store DIR] [-kek FILE] [-keyring FILE] -id ID
//	sop-pme migrate [-store DIR] [-kek FILE] [-keyring FILE]            import DIR/keyring.json of earlier versions
//
// DEKs are kept wrapped in a keyring (package keyring) under a
// key-encryption key. The KEK never lives in the store directory, which is
// the untrusted side. It comes from, in this order:
//
//   - -kek FILE: a file holding the 32 raw bytes of the KEK, mode 0600;
//   - SOP_PME_KEK_FILE: the same, named by the environment;
//   - SOP_PME_KEK: the KEK itself, in standard base64;
//   - otherwise the file sop-pme/kek in the user's configuration directory
//     (os.UserConfigDir: $XDG_CONFIG_HOME or ~/.config on Linux).
//
// The keyring is -keyring FILE, or else the file "keyring" beside the KEK
// file (in the configuration directory when the KEK comes from SOP_PME_KEK).
// demo creates the KEK file (exclusively: two first runs end with one KEK)
// and the keyring if there are none, and says where; read, verify and check
// never create anything. No command prints a DEK or a KEK.
package main

import (
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/keyring"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/writer"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	ctx := context.Background()
	var err error
	switch os.Args[1] {
	case "demo":
		err = demo(ctx, os.Stdout, os.Args[2:])
	case "read":
		err = read(ctx, os.Stdout, os.Args[2:])
	case "verify":
		err = verifyCmd(ctx, os.Stdout, os.Args[2:])
	case "check":
		err = check(ctx, os.Stdout, os.Args[2:])
	case "migrate":
		err = migrate(ctx, os.Stdout, os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sop-pme:", err)
		os.Exit(1)
	}
}

var errNotConformant = errors.New("not a conformant SOP-PME-1 object")

func usage() {
	fmt.Fprintln(os.Stderr, `usage:
  sop-pme demo    [-store DIR] [-kek FILE] [-keyring FILE] [-rows N]
  sop-pme read    [-store DIR] [-kek FILE] [-keyring FILE] -id ID [-fields 1,3] [-limit N]
  sop-pme verify  [-store DIR] [-kek FILE] [-keyring FILE] -id ID
  sop-pme check   [-store DIR] [-kek FILE] [-keyring FILE] -id ID
  sop-pme migrate [-store DIR] [-kek FILE] [-keyring FILE]
The KEK comes from -kek, $SOP_PME_KEK_FILE, $SOP_PME_KEK (base64), or
sop-pme/kek in the user configuration directory.`)
	os.Exit(2)
}

// env is a store and its keyring.
type env struct {
	dir   string
	store *blobs.Dir
	ring  *keyring.Ring
	keys  keySource
}

// openEnv opens the keyring, then the store. A command that writes (write)
// creates the KEK file, the keyring and the store if there are none, and
// says so on out; any other command creates none of them, and opens the
// store read-only.
func openEnv(ctx context.Context, dir string, ks keySource, write bool, out io.Writer) (*env, error) {
	ring, err := ks.open(ctx, dir, write, out)
	if err != nil {
		return nil, err
	}
	var store *blobs.Dir
	if write {
		store, err = blobs.CreateDir(dir)
	} else {
		store, err = blobs.OpenDir(dir, blobs.ReadOnly())
	}
	if err != nil {
		return nil, err
	}
	return &env{dir: dir, store: store, ring: ring, keys: ks}, nil
}

// keySource says where the KEK and the keyring are: the -kek and -keyring
// flags, then the environment, then the user configuration directory.
type keySource struct {
	kekFlag, ringFlag string
	kekPath           string // the KEK file, if the KEK is in one
	inline            string // SOP_PME_KEK
	ringPath          string
}

func addKeyFlags(fs *flag.FlagSet, ks *keySource) {
	fs.StringVar(&ks.kekFlag, "kek", "", "`file` holding the 32-byte KEK (default $SOP_PME_KEK_FILE, $SOP_PME_KEK, or sop-pme/kek in the user config directory)")
	fs.StringVar(&ks.ringFlag, "keyring", "", "keyring `file` (default: \"keyring\" beside the KEK file)")
}

// resolve fills in the paths from the flags, the environment and the
// defaults.
func (ks *keySource) resolve() error {
	kekFile, inline := os.Getenv("SOP_PME_KEK_FILE"), os.Getenv("SOP_PME_KEK")
	switch {
	case ks.kekFlag != "":
		ks.kekPath = ks.kekFlag
	case kekFile != "" && inline != "":
		return errors.New("both SOP_PME_KEK_FILE and SOP_PME_KEK are set: set one")
	case kekFile != "":
		ks.kekPath = kekFile
	case inline != "":
		ks.inline = inline
	}
	var conf string
	if ks.kekPath == "" && (ks.inline == "" || ks.ringFlag == "") {
		dir, err := os.UserConfigDir()
		if err != nil {
			return fmt.Errorf("no -kek, SOP_PME_KEK_FILE or SOP_PME_KEK, and no user configuration directory: %w", err)
		}
		conf = filepath.Join(dir, "sop-pme")
		if ks.kekPath == "" && ks.inline == "" {
			ks.kekPath = filepath.Join(conf, "kek")
		}
	}
	switch {
	case ks.ringFlag != "":
		ks.ringPath = ks.ringFlag
	case ks.kekPath != "":
		ks.ringPath = filepath.Join(filepath.Dir(ks.kekPath), "keyring")
	default:
		ks.ringPath = filepath.Join(conf, "keyring")
	}
	return nil
}

// inside reports whether path is in the directory dir or below it.
func inside(path, dir string) bool {
	p, err1 := filepath.Abs(path)
	d, err2 := filepath.Abs(dir)
	if err1 != nil || err2 != nil {
		return false
	}
	rel, err := filepath.Rel(d, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// kek returns the KEK. With create, a missing KEK file is created
// (exclusively, mode 0600, with its directory 0700 if that is missing).
func (ks *keySource) kek(store string, create bool, out io.Writer) (keyring.KEK, error) {
	if ks.inline != "" {
		raw, err := base64.StdEncoding.Strict().DecodeString(strings.TrimSpace(ks.inline))
		if err != nil {
			return keyring.KEK{}, errors.New("SOP_PME_KEK is not standard base64")
		}
		defer clear(raw)
		return keyring.KEKFromBytes(raw)
	}
	if inside(ks.kekPath, store) {
		return keyring.KEK{}, fmt.Errorf("the KEK file %s is inside the store %s, which is the untrusted side: keep it elsewhere (-kek)", ks.kekPath, store)
	}
	if !create {
		k, err := keyring.LoadKEKFile(ks.kekPath)
		if errors.Is(err, fs.ErrNotExist) {
			return k, fmt.Errorf("no KEK at %s (give -kek FILE, SOP_PME_KEK_FILE or SOP_PME_KEK; sop-pme demo creates one)", ks.kekPath)
		}
		return k, err
	}
	if err := os.MkdirAll(filepath.Dir(ks.kekPath), 0o700); err != nil {
		return keyring.KEK{}, err
	}
	k, created, err := keyring.LoadOrCreateKEKFile(ks.kekPath)
	if err == nil && created {
		fmt.Fprintf(out, "created a new KEK in %s: keep it safe and apart from the store; without it no DEK can be unwrapped\n", ks.kekPath)
	}
	return k, err
}

// open opens the keyring under the KEK: read-only unless write, and
// created (with the KEK) only if write.
func (ks *keySource) open(ctx context.Context, store string, write bool, out io.Writer) (*keyring.Ring, error) {
	if err := ks.resolve(); err != nil {
		return nil, err
	}
	if inside(ks.ringPath, store) {
		return nil, fmt.Errorf("the keyring %s is inside the store %s, which is the untrusted side: keep it elsewhere (-keyring)", ks.ringPath, store)
	}
	kek, err := ks.kek(store, write, out)
	if err != nil {
		return nil, err
	}
	if !write {
		ring, err := keyring.Open(ctx, ks.ringPath, kek, keyring.WithReadOnly())
		if errors.Is(err, keyring.ErrNoRing) {
			return nil, fmt.Errorf("no keyring at %s (give -keyring FILE; sop-pme demo creates one)", ks.ringPath)
		}
		return ring, err
	}
	if err := os.MkdirAll(filepath.Dir(ks.ringPath), 0o700); err != nil {
		return nil, err
	}
	_, statErr := os.Stat(ks.ringPath)
	ring, err := keyring.Open(ctx, ks.ringPath, kek, keyring.WithCreate())
	if err == nil && errors.Is(statErr, fs.ErrNotExist) {
		fmt.Fprintf(out, "created a keyring in %s\n", ks.ringPath)
	}
	return ring, err
}

// command parses a command's flags (-store, -kek, -keyring, -id unless it
// is demo or migrate, and those extra adds) and opens the store and its
// keyring, for writing if write.
func command(ctx context.Context, name string, args []string, write bool, out io.Writer, extra func(*flag.FlagSet)) (*env, storageid.ID, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	dir := fs.String("store", "demo-store", "directory of the blob store")
	var ks keySource
	addKeyFlags(fs, &ks)
	var idStr *string
	if name != "demo" && name != "migrate" {
		idStr = fs.String("id", "", "storage_id of the object (64 hex digits)")
	}
	if extra != nil {
		extra(fs)
	}
	if err := fs.Parse(args); err != nil {
		return nil, storageid.ID{}, err
	}
	var id storageid.ID
	if idStr != nil {
		var err error
		if id, err = storageid.Parse(*idStr); err != nil {
			return nil, id, err
		}
	}
	if name == "migrate" {
		// migrate reads the old files in the store directory, and needs
		// only the keyring.
		ring, err := ks.open(ctx, *dir, write, out)
		if err != nil {
			return nil, id, err
		}
		return &env{dir: *dir, ring: ring, keys: ks}, id, nil
	}
	e, err := openEnv(ctx, *dir, ks, write, out)
	return e, id, err
}

func demo(ctx context.Context, out io.Writer, args []string) error {
	var rows int
	e, _, err := command(ctx, "demo", args, true, out, func(fs *flag.FlagSet) { fs.IntVar(&rows, "rows", 100_000, "rows to write") })
	if err != nil {
		return err
	}
	schema, rec := sampleTable(rows)
	defer rec.Release()
	w, err := writer.New(e.store, schema, writer.WithRowGroupRows(32_768))
	if err != nil {
		return err
	}
	if err := w.Write(rec); err != nil {
		return err
	}
	obj, err := w.Close(ctx)
	if err != nil {
		return err
	}
	if err := e.ring.Put(ctx, obj.StorageID, obj.DEK); err != nil {
		return err
	}
	fmt.Fprintf(out, "wrote a %d-row sample table to %s\n", rows, e.dir)
	fmt.Fprintf(out, "storage_id     %s\n", obj.StorageID)
	fmt.Fprintf(out, "size           %d bytes (Padmé target of the unpadded size)\n", obj.Size)
	fmt.Fprintf(out, "unpadded size  %d bytes (keep it in the encrypted catalog)\n", obj.UnpaddedSize)
	fmt.Fprintf(out, "key_ref        %s (opaque; resolves nothing)\n", obj.KeyRef)
	fmt.Fprintf(out, "DEK            %v, wrapped in %s\n", obj.DEK, e.ring.Path())
	if e.keys.kekPath != "" {
		fmt.Fprintf(out, "KEK            in %s (not in the store)\n\n", e.keys.kekPath)
	} else {
		fmt.Fprintf(out, "KEK            from SOP_PME_KEK\n\n")
	}

	r, err := reader.Open(ctx, e.store, obj.StorageID, e.ring)
	if err != nil {
		return err
	}
	n, sum, err := sumColumn(ctx, r, 3)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "projection of field 3 (amount) through verified ranges: %d rows, sum %d; object verified: %v\n", n, sum, r.Verified())
	if err := r.Verify(ctx); err != nil {
		return err
	}
	fmt.Fprintf(out, "full verification against storage_id: ok; object verified: %v\n", r.Verified())
	rep, err := reader.Check(ctx, e.store, obj.StorageID, e.ring)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, rep)
	var keyArgs string
	if e.keys.kekFlag != "" {
		keyArgs += " -kek " + e.keys.kekFlag
	}
	if e.keys.ringFlag != "" {
		keyArgs += " -keyring " + e.keys.ringFlag
	}
	fmt.Fprintf(out, "\nnext: go run ./cmd/sop-pme read -store %s%s -id %s -limit 5\n", e.dir, keyArgs, obj.StorageID)
	return nil
}

// sampleTable is a small table of orders, every field with a field ID.
func sampleTable(n int) (*arrow.Schema, arrow.RecordBatch) {
	fid := func(id int) arrow.Metadata {
		return arrow.NewMetadata([]string{writer.FieldIDKey}, []string{strconv.Itoa(id)})
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "order_id", Type: arrow.PrimitiveTypes.Int64, Metadata: fid(1)},
		{Name: "customer", Type: arrow.BinaryTypes.String, Metadata: fid(2)},
		{Name: "amount", Type: arrow.PrimitiveTypes.Int64, Metadata: fid(3)},
		{Name: "placed_at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Metadata: fid(4)},
		{Name: "paid", Type: arrow.FixedWidthTypes.Boolean, Nullable: true, Metadata: fid(5)},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("customer-%05d", i%9973))
		b.Field(2).(*array.Int64Builder).Append(int64(i%1000) * 7)
		b.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(1_767_225_600_000_000 + int64(i)*1_000_000))
		if i%20 == 0 {
			b.Field(4).AppendNull()
		} else {
			b.Field(4).(*array.BooleanBuilder).Append(i%3 != 0)
		}
	}
	return schema, b.NewRecordBatch()
}

func sumColumn(ctx context.Context, r *reader.Reader, id int32) (n, sum int64, err error) {
	rr, err := r.Scan(ctx, reader.WithFields(id))
	if err != nil {
		return 0, 0, err
	}
	defer rr.Release()
	for rr.Next() {
		col, ok := rr.RecordBatch().Column(0).(*array.Int64)
		if !ok {
			return 0, 0, fmt.Errorf("field %d is not int64", id)
		}
		for i := range col.Len() {
			sum += col.Value(i)
		}
		n += int64(col.Len())
	}
	return n, sum, rr.Err()
}

func read(ctx context.Context, out io.Writer, args []string) error {
	var fieldList string
	var limit int64
	e, id, err := command(ctx, "read", args, false, out, func(fs *flag.FlagSet) {
		fs.StringVar(&fieldList, "fields", "", "comma-separated field IDs to project (default: all)")
		fs.Int64Var(&limit, "limit", 20, "rows to print")
	})
	if err != nil {
		return err
	}
	r, err := reader.Open(ctx, e.store, id, e.ring)
	if err != nil {
		return err
	}
	var opts []reader.ScanOption
	if fieldList != "" {
		for _, s := range strings.Split(fieldList, ",") {
			v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
			if err != nil {
				return fmt.Errorf("bad field ID %q", s)
			}
			opts = append(opts, reader.WithFields(int32(v)))
		}
	}
	rr, err := r.Scan(ctx, opts...)
	if err != nil {
		return err
	}
	defer rr.Release()
	var printed, total int64
	for rr.Next() {
		rec := rr.RecordBatch()
		for i := 0; i < int(rec.NumRows()) && printed < limit; i++ {
			var cells []string
			for j := range int(rec.NumCols()) {
				cells = append(cells, rec.Schema().Field(j).Name+"="+rec.Column(j).ValueStr(i))
			}
			fmt.Fprintln(out, strings.Join(cells, "  "))
			printed++
		}
		total += rec.NumRows()
	}
	if err := rr.Err(); err != nil {
		return err
	}
	fmt.Fprintf(out, "(%d rows read through verified ranges; object verified: %v)\n", total, r.Verified())
	return nil
}

func verifyCmd(ctx context.Context, out io.Writer, args []string) error {
	e, id, err := command(ctx, "verify", args, false, out, nil)
	if err != nil {
		return err
	}
	r, err := reader.Open(ctx, e.store, id, e.ring)
	if err != nil {
		return err
	}
	if err := r.Verify(ctx); err != nil {
		return err
	}
	fmt.Fprintf(out, "%s: every byte matches\n", id)
	return nil
}

func check(ctx context.Context, out io.Writer, args []string) error {
	e, id, err := command(ctx, "check", args, false, out, nil)
	if err != nil {
		return err
	}
	rep, err := reader.Check(ctx, e.store, id, e.ring)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, rep)
	if !rep.Conformant() {
		return errNotConformant
	}
	return nil
}

// migrate imports the keyring of earlier versions, DIR/keyring.json with
// its KEK in DIR/kek, into the keyring (created with its KEK if need be).
// It changes nothing in the store: once the objects read, delete DIR/kek
// and DIR/keyring.json by hand.
func migrate(ctx context.Context, out io.Writer, args []string) error {
	e, _, err := command(ctx, "migrate", args, true, out, nil)
	if err != nil {
		return err
	}
	oldPath, oldKEK := filepath.Join(e.dir, "keyring.json"), filepath.Join(e.dir, "kek")
	raw, err := os.ReadFile(oldKEK)
	if err != nil {
		return fmt.Errorf("no KEK of an earlier version: %w", err)
	}
	kek, err := keyring.KEKFromBytes(raw)
	clear(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", oldKEK, err)
	}
	n, err := e.ring.ImportV1(ctx, oldPath, kek)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "imported %d DEKs from %s into %s\n", n, oldPath, e.ring.Path())
	fmt.Fprintf(out, "once the objects read, delete %s and %s: a KEK in the store is exposed\n", oldKEK, oldPath)
	return nil
}
