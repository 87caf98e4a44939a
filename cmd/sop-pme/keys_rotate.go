package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"
	"github.com/sovm/sop-pme/keyring"
	"github.com/spf13/cobra"
)

type rotateResult struct {
	Master   string `json:"master"`
	Keyring  string `json:"keyring"`
	DEKs     int    `json:"deks"`
	Rekeyed  bool   `json:"rekeyed"`
	Finished bool   `json:"finished_interrupted"`
}

func (a *app) keysCmd() *cobra.Command {
	keys := &cobra.Command{
		Use:   "keys",
		Short: "Manage the key-encryption key and the keyring, and share DEKs with another node",
		Long:  keysLong,
		Args:  exactArgs(0, "a subcommand (see sop-pme keys -h)"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			cmd.SetOut(a.stderr)
			cmd.Help()
			return usagef("keys takes a subcommand: rotate, identity, grant or accept")
		}),
	}
	keys.AddCommand(a.rotateCmd(), a.keysIdentityCmd(), a.grantCmd(), a.acceptCmd())
	return keys
}

func (a *app) rotateCmd() *cobra.Command {
	var (
		ks     keySource
		newKEK string
		toKMS  string
		rekey  bool
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "rotate",
		Short: "Replace the KEK and rewrap every DEK, so that no DEK is lost at any point",
		Long: `Rotate replaces the master key of the keyring. No object is touched
(SOP-PME-1 11.6).

With a KEK file (--kek, $SOP_PME_KEK_FILE or the default), rotate makes a new
KEK and a new ring key, and rewraps every DEK under them:
  1. the new KEK is written to KEK.next, created exclusively and synced, and
     published by an atomic link, with its directory synced;
  2. the keyring is re-keyed in one transaction: every DEK under the new ring
     key, wrapped under the new KEK, or (if it fails) none;
  3. KEK.next is renamed over the KEK file, atomically, and the directory
     synced.
A crash at any point loses no DEK: before step 2 commits the old KEK opens the
ring, and KEK.next is discarded by the next rotate; after it, every command
finds that KEK.next opens the ring and uses it, and the next rotate finishes
the rename. Rotations of one KEK file take a lock, one at a time. Commands
running meanwhile (an import that opened the keyring before the re-key and
stores its DEK after it) follow the rotation: they read KEK.next, then the
KEK file, again.

Once the re-key commits, the keyring file is overwritten in place where it
held the old ring key and every DEK wrapped under it (bbolt leaves freed pages
as they were; rotate zeroes them), so the retired KEK opens nothing in the
live file; if rotate dies before that ends, the next rotate (or rm) finishes
it. What rotate cannot reach, and what still opens under the retired KEK:
copies of the keyring made before (backups, snapshots, replicas, the
STORE/keyring.json that migrate read), blocks an SSD remapped when it
levelled wear, and old blocks kept by a copy-on-write file system (btrfs,
ZFS, APFS) or a reflinked copy. After a leak, destroy the old KEK and its
copies; with a KMS, destroy the old KMS key version (not just disable it):
that, not rotate, is the end of a master key.

With a KEK in $SOP_PME_KEK, the new KEK is written to --new-kek FILE (created
exclusively) before the ring is re-keyed; then point SOP_PME_KEK_FILE at it.

With a KMS key (--kms, $SOP_PME_KMS), rotate rewraps the one ring key under
the KMS key's current version, or under --to-kms URL; --rekey also makes a new
ring key and rewraps every DEK. --to-kms moves a KEK-held ring to a KMS too.
Without --rekey the ring key stays the same: the live file no longer holds it
wrapped under the old key, but a copy made before opens under the old key
version until that version is destroyed.

` + keysHelp,
		Args: exactArgs(0, "no argument"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if err := ks.resolve(); err != nil {
				return err
			}
			var (
				res rotateResult
				err error
			)
			switch {
			case toKMS != "" || ks.kmsURL != "":
				res, err = a.rotateKMS(ctx, &ks, toKMS, rekey)
			case ks.inline != "":
				if newKEK == "" {
					return usagef("the KEK is in $SOP_PME_KEK: give --new-kek FILE for the new one")
				}
				res, err = a.rotateKEK(ctx, &ks, newKEK)
			default:
				if newKEK != "" {
					return usagef("--new-kek is for a KEK in $SOP_PME_KEK; the KEK file %s is replaced in place", ks.kekPath)
				}
				res, err = a.rotateKEK(ctx, &ks, "")
			}
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(a.stdout, res)
			}
			switch {
			case res.Finished:
				fmt.Fprintf(a.stdout, "finished an interrupted rotation: the KEK in %s opens %s (%d DEKs)\n", res.Master, res.Keyring, res.DEKs)
			case res.Rekeyed:
				fmt.Fprintf(a.stdout, "rotated: %d DEKs in %s rewrapped under a new ring key, wrapped under %s\n", res.DEKs, res.Keyring, res.Master)
			default:
				fmt.Fprintf(a.stdout, "rotated: the ring key of %s (%d DEKs) rewrapped under %s\n", res.Keyring, res.DEKs, res.Master)
			}
			if ks.inline != "" {
				fmt.Fprintf(a.stdout, "the old KEK in $SOP_PME_KEK no longer opens the keyring: set SOP_PME_KEK_FILE=%s and unset SOP_PME_KEK\n", newKEK)
			}
			return nil
		}),
	}
	addKeyFlags(cmd, &ks)
	fl := cmd.Flags()
	fl.StringVar(&newKEK, "new-kek", "", "write the new KEK to `file` (only for a KEK in $SOP_PME_KEK)")
	fl.StringVar(&toKMS, "to-kms", "", "make the KMS key at `URL` the master")
	fl.BoolVar(&rekey, "rekey", false, "with a KMS: also make a new ring key and rewrap every DEK")
	fl.BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

// rotateKEK rotates a KEK master: see the command's help for the steps and
// why a crash at any of them loses no DEK. out is where the new KEK goes
// when the KEK is not in a file (SOP_PME_KEK); "" means KEK.next, then the
// KEK file itself.
func (a *app) rotateKEK(ctx context.Context, ks *keySource, out string) (rotateResult, error) {
	res := rotateResult{Keyring: ks.ringPath, Rekeyed: true}
	if ks.kekPath != "" {
		// One rotation of a KEK file at a time: a second one would take the
		// first one's KEK.next for a stale file and remove it.
		lock := flock.New(ks.kekPath + ".rotate-lock")
		locked, err := lock.TryLockContext(ctx, 50*time.Millisecond)
		if err != nil || !locked {
			return res, fmt.Errorf("%s: cannot lock for rotation: %v", ks.kekPath, err)
		}
		defer lock.Unlock()
	}
	k, err := ks.openRing(ctx, "", ringWrite, discard{})
	if err != nil {
		return res, err
	}
	defer k.Close()
	if ks.kekPath != "" {
		next := nextKEK(ks.kekPath)
		res.Master = ks.kekPath
		if nk, err := keyring.LoadKEKFile(next); err == nil && nk.Equal(k.master.kek) {
			// The ring opened under KEK.next: an earlier rotation re-keyed
			// it and stopped before the rename, perhaps before its re-key
			// had zeroed the pages that hold the old ring key and the DEKs
			// wrapped under it. Finish both.
			if err := k.ring.Scrub(ctx); err != nil {
				return res, about(ks.ringPath, err)
			}
			if err := publish(next, ks.kekPath); err != nil {
				return res, err
			}
			res.Finished, res.Rekeyed = true, false
			res.DEKs, err = k.ring.Len(ctx)
			return res, err
		}
		// A KEK.next that does not open the ring is from a rotation that
		// stopped before its re-key committed: nothing is wrapped under it.
		if err := os.Remove(next); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return res, err
		}
		out = next
	} else {
		res.Master = out
	}
	nk, err := keyring.CreateKEKFile(out)
	if err != nil {
		return res, about(out, err)
	}
	crashPoint("after-new-kek")
	if err := k.ring.Rekey(ctx, nk); err != nil {
		return res, about(ks.ringPath, err)
	}
	crashPoint("after-rekey")
	if ks.kekPath != "" {
		if err := publish(out, ks.kekPath); err != nil {
			return res, err
		}
	}
	res.DEKs, err = k.ring.Len(ctx)
	return res, err
}

// publish renames the new KEK file over the old one, atomically, and syncs
// the directory so that the rename is durable.
func publish(next, path string) error {
	if err := os.Rename(next, path); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// rotateKMS rewraps the ring key under a KMS key: the current one (which
// the KMS may have rotated to a new version) or toKMS; with rekey, under a
// new ring key with every DEK rewrapped.
func (a *app) rotateKMS(ctx context.Context, ks *keySource, toKMS string, rekey bool) (rotateResult, error) {
	res := rotateResult{Keyring: ks.ringPath, Rekeyed: rekey}
	k, err := ks.openRing(ctx, "", ringWrite, a.stderr)
	if err != nil {
		return res, err
	}
	defer k.Close()
	var m keyring.Master = k.master.Master
	res.Master = redactURL(ks.kmsURL)
	if toKMS != "" {
		to, closeKMS, err := openKMS(ctx, toKMS)
		if err != nil {
			return res, usagef("--to-kms %s: %s", redactURL(toKMS), clean(err))
		}
		defer closeKMS()
		m, res.Master = to, redactURL(toKMS)
	}
	if rekey {
		err = k.ring.Rekey(ctx, m)
	} else {
		err = k.ring.Rotate(ctx, m)
	}
	if err != nil {
		return res, about(ks.ringPath, err)
	}
	res.DEKs, err = k.ring.Len(ctx)
	return res, err
}

// discard is an io.Writer that drops what it is given.
type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
