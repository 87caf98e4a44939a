package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/sovm/sop-pme/keyring"
	"github.com/spf13/cobra"
)

// The key custody of the command. The KEK (or the KMS key) is the master of
// the keyring (package keyring: two levels, the master wraps one ring key,
// the ring key wraps the DEKs). It never lives in the store directory, the
// untrusted side, and comes from, in this order:
//
//   - --kms URL or --kek FILE (not both);
//   - $SOP_PME_KMS, $SOP_PME_KEK_FILE or $SOP_PME_KEK (base64), one of them;
//   - the file sop-pme/kek in the user configuration directory.
//
// The keyring is --keyring FILE, $SOP_PME_KEYRING, or the file "keyring"
// beside the KEK file (in the configuration directory otherwise).
const keysHelp = `Keys:
  The KEK (key-encryption key) wraps the keyring's ring key, which wraps each
  object's DEK. It never lives in the store, the untrusted side. It comes from
  --kms URL or --kek FILE, else $SOP_PME_KMS, $SOP_PME_KEK_FILE or $SOP_PME_KEK
  (standard base64), else sop-pme/kek in the user configuration directory
  ($XDG_CONFIG_HOME or ~/.config on Linux). A KMS URL is one of hashivault://
  (Vault Transit), awskms://, gcpkms://, azurekeyvault:// or base64key:// (a
  key in the URL: tests only). The keyring is --keyring FILE, $SOP_PME_KEYRING,
  or "keyring" beside the KEK file.`

// keySource says where the master key and the keyring are.
type keySource struct {
	kmsFlag, kekFlag, ringFlag string

	kmsURL   string // the KMS key, if the master is in a KMS
	kekPath  string // the KEK file, if the KEK is in one
	inline   string // $SOP_PME_KEK
	ringPath string
	resolved bool
}

func addKeyFlags(cmd *cobra.Command, ks *keySource) {
	f := cmd.Flags()
	f.StringVar(&ks.kekFlag, "kek", "", "`file` holding the 32-byte KEK (see Keys below)")
	f.StringVar(&ks.kmsFlag, "kms", "", "`URL` of the KMS key that is the master instead of a KEK")
	f.StringVar(&ks.ringFlag, "keyring", "", "keyring `file` (default: \"keyring\" beside the KEK file)")
}

// resolve fills in the paths from the flags, the environment and the
// defaults.
func (ks *keySource) resolve() error {
	if ks.resolved {
		return nil
	}
	if ks.kmsFlag != "" && ks.kekFlag != "" {
		return usagef("give --kms or --kek, not both")
	}
	env := map[string]string{}
	for _, k := range []string{"SOP_PME_KMS", "SOP_PME_KEK_FILE", "SOP_PME_KEK"} {
		if v := os.Getenv(k); v != "" {
			env[k] = v
		}
	}
	switch {
	case ks.kmsFlag != "":
		ks.kmsURL = ks.kmsFlag
	case ks.kekFlag != "":
		ks.kekPath = ks.kekFlag
	case len(env) > 1:
		return usagef("more than one of SOP_PME_KMS, SOP_PME_KEK_FILE and SOP_PME_KEK is set: set one")
	default:
		ks.kmsURL, ks.kekPath, ks.inline = env["SOP_PME_KMS"], env["SOP_PME_KEK_FILE"], env["SOP_PME_KEK"]
	}
	ringFlag := ks.ringFlag
	if ringFlag == "" {
		ringFlag = os.Getenv("SOP_PME_KEYRING")
	}
	var conf string
	if ks.kekPath == "" && (ringFlag == "" || (ks.kmsURL == "" && ks.inline == "")) {
		dir, err := os.UserConfigDir()
		if err != nil {
			return fmt.Errorf("no --kek, --kms or key in the environment, and no user configuration directory: %w", err)
		}
		conf = filepath.Join(dir, "sop-pme")
		if ks.kekPath == "" && ks.kmsURL == "" && ks.inline == "" {
			ks.kekPath = filepath.Join(conf, "kek")
		}
	}
	switch {
	case ringFlag != "":
		ks.ringPath = ringFlag
	case ks.kekPath != "":
		ks.ringPath = filepath.Join(filepath.Dir(ks.kekPath), "keyring")
	default:
		ks.ringPath = filepath.Join(conf, "keyring")
	}
	// keys rotate replaces the KEK file by a rename, and the keyring may be
	// replaced the same way: a symlink given for either stands for its
	// target, which is the file replaced, so that the link is kept and the
	// new key goes where the old one was.
	var err error
	if ks.kekPath, err = linkTarget(ks.kekPath); err != nil {
		return err
	}
	if ks.ringPath, err = linkTarget(ks.ringPath); err != nil {
		return err
	}
	ks.resolved = true
	return nil
}

// linkTarget returns the file path names: path itself, or, if path is a
// symlink whose target exists, that target (every link on the way
// resolved).
func linkTarget(path string) (string, error) {
	if path == "" {
		return path, nil
	}
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return path, nil
	}
	t, err := filepath.EvalSymlinks(path)
	if errors.Is(err, fs.ErrNotExist) {
		return path, nil // a dangling link: creating the file will say so
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// where says where the master key is, for messages.
func (ks *keySource) where() string {
	switch {
	case ks.kmsURL != "":
		return "the KMS key " + redactURL(ks.kmsURL)
	case ks.inline != "":
		return "the KEK in $SOP_PME_KEK"
	}
	return "the KEK in " + ks.kekPath
}

// redactURL hides the key material a base64key:// URL carries.
func redactURL(u string) string {
	if strings.HasPrefix(u, "base64key://") {
		return "base64key://…"
	}
	return u
}

// inside reports whether path is in the directory dir or below it.
func inside(path, dir string) bool {
	if dir == "" {
		return false
	}
	p, err1 := filepath.Abs(path)
	d, err2 := filepath.Abs(dir)
	if err1 != nil || err2 != nil {
		return false
	}
	if rp, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
		p = filepath.Join(rp, filepath.Base(p))
	}
	if rd, err := filepath.EvalSymlinks(d); err == nil {
		d = rd
	}
	rel, err := filepath.Rel(d, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// checkApart refuses a KEK file or keyring in the store directory. A store
// in S3 holds no file of the keys: they stay on this machine (by default
// in the user configuration directory).
func (ks *keySource) checkApart(store string) error {
	if err := ks.resolve(); err != nil {
		return err
	}
	if isStoreURL(store) {
		return nil
	}
	if ks.kekPath != "" && inside(ks.kekPath, store) {
		return fmt.Errorf("the KEK file %s is inside the store %s, which is the untrusted side: keep it elsewhere (--kek)", ks.kekPath, store)
	}
	if inside(ks.ringPath, store) {
		return fmt.Errorf("the keyring %s is inside the store %s, which is the untrusted side: keep it elsewhere (--keyring)", ks.ringPath, store)
	}
	return nil
}

// master is an opened master key.
type master struct {
	keyring.Master
	kek     keyring.KEK // the KEK, if the master is one
	close   func()
	created bool // the KEK file was created now
}

// loadMaster opens the master key. With create, a missing KEK file is
// created (exclusively, mode 0600, with its directory 0700); otherwise a
// missing one is an error matching fs.ErrNotExist.
func (ks *keySource) loadMaster(ctx context.Context, create bool) (*master, error) {
	if err := ks.resolve(); err != nil {
		return nil, err
	}
	switch {
	case ks.kmsURL != "":
		k, closeKMS, err := openKMS(ctx, ks.kmsURL)
		if err != nil {
			return nil, usagef("--kms %s: %s", redactURL(ks.kmsURL), clean(err))
		}
		return &master{Master: k, close: closeKMS}, nil
	case ks.inline != "":
		raw, err := base64.StdEncoding.Strict().DecodeString(strings.TrimSpace(ks.inline))
		if err != nil {
			return nil, errors.New("SOP_PME_KEK is not standard base64")
		}
		defer clear(raw)
		k, err := keyring.KEKFromBytes(raw)
		if err != nil {
			return nil, fmt.Errorf("SOP_PME_KEK: %w", err)
		}
		return &master{Master: k, kek: k, close: func() {}}, nil
	}
	if !create {
		k, err := keyring.LoadKEKFile(ks.kekPath)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &cmdError{exitNotFound, fmt.Sprintf("no KEK at %s (give --kek FILE, --kms URL, SOP_PME_KEK_FILE or SOP_PME_KEK; sop-pme import creates one)", ks.kekPath), err}
		}
		if err != nil {
			return nil, err
		}
		return &master{Master: k, kek: k, close: func() {}}, nil
	}
	if err := os.MkdirAll(filepath.Dir(ks.kekPath), 0o700); err != nil {
		return nil, err
	}
	k, created, err := keyring.LoadOrCreateKEKFile(ks.kekPath)
	if err != nil {
		return nil, err
	}
	return &master{Master: k, kek: k, close: func() {}, created: created}, nil
}

// nextKEK is where keys rotate writes a new KEK before it rewraps the ring,
// beside the KEK file.
func nextKEK(path string) string { return path + ".next" }

// ringMode says how a command uses the keyring.
type ringMode int

const (
	ringRead   ringMode = iota // resolve DEKs only; create and change nothing
	ringWrite                  // change an existing keyring
	ringCreate                 // change it, creating the KEK and keyring if missing
)

// keys is an opened keyring and its master.
type keys struct {
	ring   *keyring.Ring
	master *master
	src    *keySource
}

func (k *keys) Close() {
	if k != nil && k.master != nil {
		k.master.close()
	}
}

// openRing opens the keyring under its master. It creates the KEK file and
// the keyring only in ringCreate mode, and says so on msg.
//
// With a KEK file, the ring follows a keys rotate made by another process,
// at Open and at every later operation (keyring.WithReload): when the KEK
// no longer opens the ring key, it tries the file a rotation writes first
// (nextKEK), then the KEK file read again. So an import that opened the
// ring before a rotation committed still puts its DEK after it. If the ring
// opens under nextKEK, a keys rotate was interrupted after it rewrapped the
// ring and before it renamed the new KEK into place (or is between the two
// now): the new KEK is used, and a warning says to run keys rotate to
// finish.
func (ks *keySource) openRing(ctx context.Context, store string, mode ringMode, msg io.Writer) (*keys, error) {
	if err := ks.checkApart(store); err != nil {
		return nil, err
	}
	m, err := ks.loadMaster(ctx, mode == ringCreate)
	if err != nil {
		return nil, err
	}
	if m.created {
		fmt.Fprintf(msg, "sop-pme: created a new KEK in %s: keep it safe and apart from the store; without it no DEK can be unwrapped\n", ks.kekPath)
	}
	var opts []keyring.Option
	switch mode {
	case ringRead:
		opts = append(opts, keyring.WithReadOnly())
	case ringCreate:
		if err := os.MkdirAll(filepath.Dir(ks.ringPath), 0o700); err != nil {
			m.close()
			return nil, err
		}
		opts = append(opts, keyring.WithCreate())
	}
	if ks.kekPath != "" {
		opts = append(opts, keyring.WithReload(keyring.ReloadKEKFiles(nextKEK(ks.kekPath), ks.kekPath)))
	}
	_, statErr := os.Stat(ks.ringPath)
	ring, err := keyring.Open(ctx, ks.ringPath, m, opts...)
	if err == nil && ks.kekPath != "" {
		if cur, ok := ring.Master().(keyring.KEK); ok && !cur.Equal(m.kek) {
			// Reloaded: from KEK.next (a rotation re-keyed the ring and has
			// not renamed it yet), or from the KEK file renamed since it
			// was read.
			if nk, err := keyring.LoadKEKFile(nextKEK(ks.kekPath)); err == nil && nk.Equal(cur) {
				fmt.Fprintf(msg, "sop-pme: warning: the keyring opens under %s, left by an interrupted keys rotate (or one still running): run sop-pme keys rotate to finish it\n", nextKEK(ks.kekPath))
			}
			m.close()
			m = &master{Master: cur, kek: cur, close: func() {}}
		}
	}
	if err != nil {
		m.close()
		switch {
		case errors.Is(err, keyring.ErrNoRing):
			return nil, &cmdError{exitNotFound, fmt.Sprintf("no keyring at %s (give --keyring FILE; sop-pme import creates one)", ks.ringPath), err}
		case errors.Is(err, keyring.ErrMaster) && errors.As(err, new(*kmsError)):
			// A KMS that refused, or did not answer: say which.
			var ke *kmsError
			errors.As(err, &ke)
			return nil, &cmdError{exitKey, fmt.Sprintf("%s does not open the keyring %s: %s", ks.where(), ks.ringPath, clean(ke)), err}
		case errors.Is(err, keyring.ErrMaster):
			return nil, &cmdError{exitKey, fmt.Sprintf("%s does not open the keyring %s: wrong key", ks.where(), ks.ringPath), err}
		case errors.Is(err, keyring.ErrLegacyFormat):
			return nil, &cmdError{exitFailure, fmt.Sprintf("%s is a keyring of an earlier version: import it with sop-pme migrate", ks.ringPath), err}
		}
		return nil, about(ks.ringPath, err)
	}
	if mode == ringCreate && errors.Is(statErr, fs.ErrNotExist) {
		fmt.Fprintf(msg, "sop-pme: created a keyring in %s\n", ks.ringPath)
	}
	return &keys{ring: ring, master: m, src: ks}, nil
}
