package main

import (
	"bufio"
	"errors"
	"fmt"
	"strings"

	"github.com/sovm/sop-pme/blobs"
	"github.com/spf13/cobra"
)

type rmResult struct {
	StorageID     string `json:"storage_id"`
	DEKForgotten  bool   `json:"dek_forgotten"`
	ObjectDeleted bool   `json:"object_deleted"`
}

func (a *app) rmCmd() *cobra.Command {
	var (
		store  storeFlag
		ks     keySource
		yes    bool
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "rm ID...",
		Short: "Forget objects' DEKs (crypto-shredding), then delete the objects",
		Long: `Rm makes the objects unreadable for good and removes them: for each ID it first
forgets the DEK in the keyring, then deletes the object from the store. It asks
for confirmation on a terminal; --yes skips the question, and is required when
stdin is not a terminal.

Why the DEK first: forgetting it is what makes the data unreadable
(crypto-shredding). Copies of the ciphertext may live where rm cannot reach,
in backups, replicas or other stores, and only the DEK's end makes them
useless. If rm stops between the two steps, what is left is ciphertext
without a key: unreadable, and removed by running rm again. The other order
could leave the key of a deleted object behind, still opening every copy.

Forgetting the DEK removes it from the keyring file itself: the file is
overwritten in place where bbolt's freed pages held the wrapped DEK, so it
cannot be written back or found by rolling the file back a transaction. If rm
dies before that ends, running it again finishes it. What rm cannot reach: a
DEK survives in copies of the keyring made before rm (backups, snapshots,
replicas, the STORE/keyring.json that migrate read), in blocks an SSD
remapped when it levelled wear, and in old blocks kept by a copy-on-write
file system (btrfs, ZFS, APFS) or a reflinked copy. Such a copy opens under
the KEK of its time: to end it, rotate (sop-pme keys rotate) and destroy the
old KEK and its copies; with a KMS, destroy the old key version.

` + keysHelp,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("rm takes one or more storage_ids (see sop-pme rm -h)")
			}
			return nil
		},
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			idArgs, err := parseIDArgs(args)
			if err != nil {
				return err
			}
			if !yes && !a.stdinTTY {
				return usagef("rm deletes for good: give --yes (stdin is not a terminal to ask on)")
			}
			dir, err := store.path()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			st, err := blobs.OpenDir(dir)
			if err != nil {
				return storeErr(dir, err)
			}
			ids, err := resolveIDs(ctx, st, idArgs)
			if err != nil {
				return err
			}
			if !yes {
				for i, a2 := range idArgs {
					if a2.prefix != "" {
						fmt.Fprintf(a.stderr, "%s is %s\n", a2.text, ids[i])
					}
				}
				fmt.Fprintf(a.stderr, "Forget the DEK of %d %s and delete %s from %s? This cannot be undone. [y/N] ",
					len(ids), plural(len(ids), "object", "objects"), plural(len(ids), "it", "them"), dir)
				line, _ := bufio.NewReader(a.stdin).ReadString('\n')
				if ans := strings.ToLower(strings.TrimSpace(line)); ans != "y" && ans != "yes" {
					return &cmdError{exitFailure, "nothing deleted", nil}
				}
			}
			k, err := ks.openRing(ctx, dir, ringWrite, a.stderr)
			if err != nil {
				return err
			}
			defer k.Close()
			var results []rmResult
			for _, id := range ids {
				held, err := k.ring.Has(ctx, id)
				if err != nil {
					return about(k.ring.Path(), err)
				}
				if err := k.ring.Delete(ctx, id); err != nil {
					return about(id.String(), err)
				}
				res := rmResult{StorageID: id.String(), DEKForgotten: held[0]}
				err = st.Delete(ctx, id)
				switch {
				case err == nil:
					res.ObjectDeleted = true
				case errors.Is(err, blobs.ErrNotFound):
					if !held[0] {
						return &cmdError{exitNotFound, fmt.Sprintf("%s: no such object in the store, and no DEK for it in the keyring", id), err}
					}
				default:
					return about(id.String(), fmt.Errorf("the DEK is forgotten, but deleting the object failed: %w", err))
				}
				results = append(results, res)
				if !asJSON {
					switch {
					case res.DEKForgotten && res.ObjectDeleted:
						fmt.Fprintf(a.stdout, "%s: DEK forgotten, object deleted\n", id)
					case res.ObjectDeleted:
						fmt.Fprintf(a.stdout, "%s: object deleted (the keyring held no DEK for it)\n", id)
					default:
						fmt.Fprintf(a.stdout, "%s: DEK forgotten (the store held no such object)\n", id)
					}
				}
			}
			if asJSON {
				return printJSON(a.stdout, results)
			}
			return nil
		}),
	}
	addStoreFlag(cmd, &store)
	addKeyFlags(cmd, &ks)
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}
