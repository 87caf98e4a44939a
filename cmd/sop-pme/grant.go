package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"filippo.io/age"
	"github.com/sovm/sop-pme/catalog"
	"github.com/sovm/sop-pme/keyring"
	"github.com/sovm/sop-pme/storageid"
	"github.com/spf13/cobra"
)

// Key grants: one node hands another the DEKs of some objects, and the
// catalog entries of some tables, without its KEK or its keyring. A grant
// is an age file (filippo.io/age, X25519) for the recipient's identity;
// its payload is described at grantMagic. The recipient adds the DEKs to
// its own keyring, under its own KEK, and the tables to its own catalog.

// maxAgeIdentityFile bounds the identity file read: one age secret key and
// its comment lines.
const maxAgeIdentityFile = 4 << 10

// maxGrantFile bounds the grant file read: the payload and age's header
// and per-chunk overhead (16 bytes in 64 KiB), with room to spare.
const maxGrantFile = maxGrantPayload + maxGrantPayload/256 + 64<<10

// ageIdentityPath resolves the identity file: --identity, $SOP_PME_IDENTITY,
// else "identity" beside the KEK file, else in the sop-pme configuration
// directory.
func (ks *keySource) ageIdentityPath(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if v := os.Getenv("SOP_PME_IDENTITY"); v != "" {
		return v, nil
	}
	if err := ks.resolve(); err != nil {
		return "", err
	}
	if ks.kekPath != "" {
		return filepath.Join(filepath.Dir(ks.kekPath), "identity"), nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no --identity, no $SOP_PME_IDENTITY, and no user configuration directory: %w", err)
	}
	return filepath.Join(dir, "sop-pme", "identity"), nil
}

// loadAgeIdentity reads the age X25519 identity in the file at path,
// strictly: a regular file of at most maxAgeIdentityFile bytes, not open to
// group or others (as a KEK file), holding comment lines and exactly one
// AGE-SECRET-KEY-1 line. Its errors never quote the file's lines: they may
// hold the key. A missing file matches fs.ErrNotExist.
func loadAgeIdentity(path string) (*age.X25519Identity, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|grantNoBlock, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	switch {
	case !st.Mode().IsRegular():
		return nil, fmt.Errorf("%w: %s is not a regular file", errIdentityFile, path)
	case runtime.GOOS != "windows" && runtime.GOOS != "plan9" && st.Mode().Perm()&0o077 != 0:
		return nil, fmt.Errorf("%w: %s has mode %04o, open to group or others (chmod 600 %s)", errIdentityFile, path, st.Mode().Perm(), path)
	case st.Size() > maxAgeIdentityFile:
		return nil, fmt.Errorf("%w: %s holds %d bytes, more than an identity", errIdentityFile, path, st.Size())
	}
	raw, err := io.ReadAll(io.LimitReader(f, maxAgeIdentityFile+1))
	defer clear(raw)
	if err != nil {
		return nil, err
	}
	if len(raw) > maxAgeIdentityFile {
		return nil, fmt.Errorf("%w: %s grew while it was read", errIdentityFile, path)
	}
	var id *age.X25519Identity
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if id != nil {
			return nil, fmt.Errorf("%w: %s holds more than one key (line %d)", errIdentityFile, path, n)
		}
		if id, err = age.ParseX25519Identity(line); err != nil {
			return nil, fmt.Errorf("%w: %s: line %d is not an age X25519 secret key (AGE-SECRET-KEY-1…)", errIdentityFile, path, n)
		}
	}
	if sc.Err() != nil || id == nil {
		return nil, fmt.Errorf("%w: %s holds no age X25519 secret key", errIdentityFile, path)
	}
	return id, nil
}

// loadOrCreateAgeIdentity loads the identity at path, or creates one there
// if there is none (its directory 0700), and reports whether it created
// it. Two processes that call it at once end with the same identity (see
// writeKeyFile).
func loadOrCreateAgeIdentity(path string) (id *age.X25519Identity, created bool, err error) {
	for range 3 {
		id, err = loadAgeIdentity(path)
		if !errors.Is(err, fs.ErrNotExist) {
			return id, false, err
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, false, err
		}
		nid, gerr := age.GenerateX25519Identity()
		if gerr != nil {
			return nil, false, gerr
		}
		body := []byte(fmt.Sprintf("# sop-pme identity (age X25519), created %s\n# public key: %s\n%s\n",
			time.Now().UTC().Format(time.RFC3339), nid.Recipient(), nid))
		err = writeKeyFile(path, body, false)
		clear(body)
		if err == nil {
			return nid, true, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, false, err
		}
	}
	return nil, false, err
}

// writeKeyFile writes data to path, mode 0600, as the KEK file is written
// (keyring.CreateKEKFile): to a temporary file created exclusively beside
// it and synced, then published whole, by link(2), which fails with
// fs.ErrExist if path exists, or with replace by rename(2) over it; then
// the directory is synced. So path never holds a part of data.
func writeKeyFile(path string, data []byte, replace bool) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".sop-pme-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if replace {
		err = os.Rename(tmp.Name(), path)
	} else {
		err = os.Link(tmp.Name(), path)
	}
	if err != nil {
		var le *os.LinkError
		if errors.As(err, &le) {
			err = le.Err
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && runtime.GOOS != "windows" {
		return err
	}
	return nil
}

// ageIdentityErr says what went wrong reading the identity at path.
func ageIdentityErr(path string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &cmdError{exitNotFound, fmt.Sprintf("no identity at %s (sop-pme keys identity creates one; or give --identity FILE)", path), err}
	case errors.Is(err, errIdentityFile):
		return &cmdError{exitKey, cleanText(strings.TrimPrefix(err.Error(), errIdentityFile.Error()+": ")) + " (" + errIdentityFile.Error() + ")", err}
	}
	return about(path, err)
}

func (a *app) keysIdentityCmd() *cobra.Command {
	var (
		ks       keySource
		identity string
	)
	cmd := &cobra.Command{
		Use:   "identity",
		Short: "Show this node's identity for grants (its age recipient), creating it if absent",
		Long: `Identity prints the age recipient (age1…) of this node's identity, which a
node that grants it objects gives to keys grant --to. It creates the identity
first if there is none: an age X25519 key, written 0600, never printed. The
identity is --identity FILE, else $SOP_PME_IDENTITY, else "identity" beside
the KEK file (in the sop-pme configuration directory by default). Keep it as
secret as the KEK: it opens every grant made for it.`,
		Args: exactArgs(0, "no argument"),
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			path, err := ks.ageIdentityPath(identity)
			if err != nil {
				return err
			}
			id, created, err := loadOrCreateAgeIdentity(path)
			if err != nil {
				return ageIdentityErr(path, err)
			}
			if created && !a.quiet {
				fmt.Fprintf(a.stderr, "sop-pme: created an identity in %s: keep it secret; give its recipient, below, to the node that grants you objects\n", path)
			}
			fmt.Fprintln(a.stdout, id.Recipient().String())
			return nil
		}),
	}
	addKeyFlags(cmd, &ks)
	cmd.Flags().StringVar(&identity, "identity", "", "identity `file` (default: \"identity\" beside the KEK file)")
	return cmd
}

type grantResult struct {
	To      string   `json:"to"`
	Output  string   `json:"output"`
	Objects []string `json:"objects"`
	Tables  []string `json:"tables"`
}

func (a *app) grantCmd() *cobra.Command {
	var (
		ks     keySource
		to     string
		out    string
		force  bool
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "grant ID|TABLE... --to RECIPIENT -o FILE",
		Short: "Give another node the DEKs of some objects and tables, for its age identity",
		Long: `Grant writes, for one age recipient (the age1… that sop-pme keys identity prints
on the node that receives it), the DEKs of the objects named, and for each
TABLE named its catalog entry (name, schema versions, objects with their row
counts and exact sizes) and the DEK of every object of it. The recipient adds
them to its own keyring with sop-pme keys accept, and reads the objects from
the same store (or a copy of it) with its own KEK.

An ID is a whole storage_id (64 hex digits): a grant reads no store, so it
cannot resolve a prefix. Each DEK is sealed in the grant for its storage_id,
so it opens only for that object. A grant holds neither the KEK nor the
keyring's ring key; what it reveals to its recipient is the storage_ids, the
tables' names, schemas and sizes, and the DEKs. A DEK once given cannot be
taken back: to revoke, re-encrypt the data (import it again, under new DEKs)
and remove the old objects.

-o FILE is written mode 0600, whole or not at all; an existing file is
refused without --force. -o - writes the grant to stdout.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("keys grant takes one or more IDs or TABLEs (see %s -h)", cmd.CommandPath())
			}
			return nil
		},
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if to == "" {
				return usagef("keys grant needs --to RECIPIENT (the age1… that sop-pme keys identity prints on the receiving node)")
			}
			if out == "" {
				return usagef("keys grant needs -o FILE (or -o - for stdout)")
			}
			rcpt, err := age.ParseX25519Recipient(strings.TrimSpace(to))
			if err != nil {
				return usagef("--to %q is not an age X25519 recipient (age1…)", to)
			}
			if out == "-" && a.stdoutTTY {
				return usagef("-o -: a grant is binary; not writing it to a terminal (give -o FILE, or redirect stdout)")
			}
			if out != "-" && !force {
				if _, err := os.Lstat(out); err == nil {
					return usagef("%s exists: give --force to replace it", out)
				}
			}
			var ids []storageid.ID
			var tables []string
			for _, s := range args {
				if isObjectArg(s) {
					id, err := storageid.Parse(s)
					if err != nil {
						return usagef("%q: give a whole storage_id (64 hex digits): a grant reads no store to resolve a prefix", s)
					}
					ids = append(ids, id)
					continue
				}
				if err := checkTableName(s); err != nil {
					return err
				}
				tables = append(tables, s)
			}
			k, err := ks.openRing(ctx, "", ringRead, a.stderr)
			if err != nil {
				return err
			}
			defer k.Close()
			payload, res, err := buildGrant(ctx, k, ids, tables)
			if err != nil {
				return err
			}
			var buf bytes.Buffer
			w, err := age.Encrypt(&buf, rcpt)
			if err != nil {
				return err
			}
			if _, err := w.Write(payload); err != nil {
				return err
			}
			clear(payload)
			if err := w.Close(); err != nil {
				return err
			}
			res.To, res.Output = rcpt.String(), out
			if out == "-" {
				if _, err := a.stdout.Write(buf.Bytes()); err != nil {
					return err
				}
				res.Output = "stdout"
			} else if err := writeKeyFile(out, buf.Bytes(), force); err != nil {
				if errors.Is(err, fs.ErrExist) {
					return usagef("%s exists: give --force to replace it", out)
				}
				return about(out, err)
			}
			switch {
			case asJSON && out != "-":
				return printJSON(a.stdout, res)
			case asJSON:
				line, _ := jsonLine(res)
				fmt.Fprintln(a.stderr, line)
			case !a.quiet:
				fmt.Fprintf(a.stderr, "sop-pme: granted %d DEKs (%d tables) to %s in %s\n", len(res.Objects), len(res.Tables), res.To, res.Output)
			}
			return nil
		}),
	}
	addKeyFlags(cmd, &ks)
	f := cmd.Flags()
	f.StringVar(&to, "to", "", "the recipient's age `RECIPIENT` (age1…, from sop-pme keys identity)")
	f.StringVarP(&out, "output", "o", "", "grant `file` to write (mode 0600; - for stdout)")
	f.BoolVar(&force, "force", false, "replace an existing -o file")
	f.BoolVar(&asJSON, "json", false, "print what was granted as JSON")
	return cmd
}

// buildGrant makes the payload of a grant of the objects ids and the
// tables: the DEK of each object named and of every object of each table,
// and each table's catalog records.
func buildGrant(ctx context.Context, k *keys, ids []storageid.ID, tables []string) ([]byte, grantResult, error) {
	res := grantResult{Objects: []string{}, Tables: []string{}}
	g := newGrantPayload()
	cat := catalogOf(k)
	var entries []keyring.Entry
	resolve := func(id storageid.ID, subject string) error {
		dek, err := k.ring.ResolveDEK(ctx, id)
		if err != nil {
			return about(subject, err)
		}
		entries = append(entries, keyring.Entry{ID: id, DEK: dek})
		return nil
	}
	for _, id := range ids {
		if err := resolve(id, id.String()); err != nil {
			return nil, res, err
		}
	}
	seen := map[string]bool{}
	for _, name := range tables {
		if seen[name] {
			continue
		}
		seen[name] = true
		t, recs, err := cat.ExportTable(ctx, name)
		if err != nil {
			return nil, res, tableErr(name, err)
		}
		for _, o := range t.Objects {
			if err := resolve(o.ID, fmt.Sprintf("table %s: object %s", name, o.ID)); err != nil {
				return nil, res, err
			}
		}
		g.tables = append(g.tables, recs)
		res.Tables = append(res.Tables, name)
	}
	slices.SortFunc(g.tables, func(a, b []catalog.Record) int { return bytes.Compare(a[0].Key, b[0].Key) })
	g.seal(entries)
	for _, d := range g.deks {
		res.Objects = append(res.Objects, d.id.String())
	}
	return g.encode(), res, nil
}

type acceptResult struct {
	Grant   string   `json:"grant"`
	DEKs    int      `json:"deks"`
	Added   int      `json:"deks_added"`
	Tables  []string `json:"tables"`
	Objects int      `json:"table_objects_added"`
}

func (a *app) acceptCmd() *cobra.Command {
	var (
		ks       keySource
		identity string
		asJSON   bool
	)
	cmd := &cobra.Command{
		Use:   "accept GRANT",
		Short: "Add the DEKs and tables of a grant made for this node's identity to its keyring",
		Long: `Accept opens GRANT (a file written by sop-pme keys grant; - for stdin) with this
node's identity (see sop-pme keys identity), checks every entry, and adds the
DEKs to this node's keyring and the tables to its catalog, all in one
transaction or nothing (the KEK and keyring are created if absent, as import
creates them). Accepting a grant again changes nothing. A DEK held already
for a storage_id is never replaced: a different one in the grant refuses it
(exit 5). A table of the same name that is another table refuses it; the
same table again (a later grant with more objects) merges.`,
		Args: exactArgs(1, "one grant file"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			path, err := ks.ageIdentityPath(identity)
			if err != nil {
				return err
			}
			id, err := loadAgeIdentity(path)
			if err != nil {
				return ageIdentityErr(path, err)
			}
			src := args[0]
			g, err := readGrant(a.stdin, src, id)
			if err != nil {
				return err
			}
			entries, err := g.open()
			if err != nil {
				return &cmdError{exitKey, fmt.Sprintf("%s: %s", src, clean(err)), err}
			}
			have := make(map[storageid.ID]bool, len(entries))
			for _, e := range entries {
				have[e.ID] = true
			}
			for _, recs := range g.tables {
				t, err := catalog.TableOf(recs)
				if err != nil {
					return fmt.Errorf("%s: %w: %s", src, errGrantFormat, catalogText(err))
				}
				if err := checkTableName(t.Name); err != nil {
					// Not a usage error: the name is the grant's.
					return fmt.Errorf("%s: %w: %s", src, errGrantFormat, err.Error())
				}
				for _, o := range t.Objects {
					if !have[o.ID] {
						return fmt.Errorf("%s: %w: table %s: object %s has no DEK in the grant", src, errGrantFormat, t.Name, o.ID)
					}
				}
			}
			k, err := ks.openRing(ctx, "", ringCreate, a.stderr)
			if err != nil {
				return err
			}
			defer k.Close()
			im, err := catalogOf(k).Import(ctx, g.tables, entries)
			switch {
			case errors.Is(err, keyring.ErrConflict):
				return &cmdError{exitKey, fmt.Sprintf("%s: %s: the keyring holds a different DEK for that object; nothing was accepted", src, clean(err)), err}
			case errors.Is(err, catalog.ErrConflict):
				return &cmdError{exitFailure, fmt.Sprintf("%s: %s; nothing was accepted", src, catalogText(err)), err}
			case err != nil:
				return about(src, err)
			}
			res := acceptResult{Grant: src, DEKs: len(entries), Added: im.DEKs, Tables: im.Tables, Objects: im.Objects}
			if res.Tables == nil {
				res.Tables = []string{}
			}
			switch {
			case asJSON:
				return printJSON(a.stdout, res)
			case !a.quiet:
				fmt.Fprintf(a.stderr, "sop-pme: accepted %d DEKs (%d new) and %d tables (%d new objects) from %s\n", res.DEKs, res.Added, len(res.Tables), res.Objects, src)
			}
			return nil
		}),
	}
	addKeyFlags(cmd, &ks)
	f := cmd.Flags()
	f.StringVar(&identity, "identity", "", "identity `file` (default: \"identity\" beside the KEK file)")
	f.BoolVar(&asJSON, "json", false, "print what was accepted as JSON")
	return cmd
}

// readGrant reads and decrypts the grant at src (stdin for "-") with id,
// and parses its payload, in bounded memory.
func readGrant(stdin io.Reader, src string, id *age.X25519Identity) (*grantPayload, error) {
	var r io.Reader = stdin
	if src != "-" {
		f, err := os.OpenFile(src, os.O_RDONLY|grantNoBlock, 0)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, &cmdError{exitNotFound, fmt.Sprintf("%s: no such grant file", src), err}
			}
			return nil, about(src, err)
		}
		defer f.Close()
		if st, err := f.Stat(); err != nil {
			return nil, about(src, err)
		} else if !st.Mode().IsRegular() {
			return nil, fmt.Errorf("%s: %w: not a regular file", src, errGrantFormat)
		}
		r = f
	}
	raw, err := io.ReadAll(io.LimitReader(r, maxGrantFile+1))
	if err != nil {
		return nil, about(src, err)
	}
	if len(raw) > maxGrantFile {
		return nil, fmt.Errorf("%s: %w: larger than %d bytes", src, errGrantFormat, maxGrantFile)
	}
	dr, err := age.Decrypt(bytes.NewReader(raw), id)
	var nm *age.NoIdentityMatchError
	switch {
	case errors.As(err, &nm):
		return nil, &cmdError{exitKey, fmt.Sprintf("%s: %s, whose recipient is %s", src, errGrantIdentity, id.Recipient()), errGrantIdentity}
	case err != nil:
		return nil, fmt.Errorf("%s: %w: not an age file", src, errGrantFormat)
	}
	payload, err := io.ReadAll(io.LimitReader(dr, maxGrantPayload+1))
	defer clear(payload)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: it does not decrypt whole (damaged or cut short)", src, errGrantFormat)
	}
	g, err := decodeGrant(payload)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	return g, nil
}

// keysLong is the help of sop-pme keys.
const keysLong = `Keys manages the key custody of this node: the KEK (or KMS key) that wraps the
keyring's ring key, which wraps each object's DEK.

  rotate     replace the KEK and rewrap every DEK
  identity   show this node's age recipient for grants, creating its identity
  grant      write, for another node's recipient, the DEKs of some objects and
             the catalog entries of some tables (never the KEK or the ring key)
  accept     add a grant made for this node's identity to its keyring

Sharing: the receiving node runs sop-pme keys identity and hands over the
age1… it prints; the granting node runs sop-pme keys grant ID|TABLE... --to
age1… -o grant.age; the receiving node runs sop-pme keys accept grant.age,
then reads the objects from the same store. A grant reveals to its recipient
the storage_ids, the tables' names, schemas and sizes, and the DEKs. A DEK
given cannot be taken back: revoking means re-encrypting the data.`
