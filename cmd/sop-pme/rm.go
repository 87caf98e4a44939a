package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/storageid"
	"github.com/spf13/cobra"
)

type rmResult struct {
	StorageID     string `json:"storage_id"`
	DEKForgotten  bool   `json:"dek_forgotten"`
	ObjectDeleted bool   `json:"object_deleted"`
}

func (a *app) rmCmd() *cobra.Command {
	var (
		store     storeFlag
		ks        keySource
		yes       bool
		asJSON    bool
		tableName string
	)
	cmd := &cobra.Command{
		Use:   "rm ID... | rm TABLE | rm --table TABLE ID...",
		Short: "Forget objects' DEKs (crypto-shredding), then delete the objects; drop tables",
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

Rm TABLE drops the table from its catalog, then forgets the DEK of each of its
objects and deletes it. Rm --table TABLE ID... removes objects from the table:
the catalog first (so that the table never names an object that is gone),
then the DEK, then the object. An object of a table is refused by rm ID,
which names the table: it goes through the table.

` + tablesHelp + `

` + keysHelp,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 0 && tableName != "":
				return usagef("rm --table %s takes the storage_ids of the objects to remove from it (see sop-pme rm -h)", tableName)
			case len(args) == 0:
				return usagef("rm takes one or more storage_ids, or a table (see sop-pme rm -h)")
			case len(args) > 1 && !isObjectArg(args[0]) && tableName == "":
				return usagef("rm takes one table, or storage_ids, not both (see sop-pme rm -h)")
			}
			return nil
		},
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			dropTable := ""
			if len(args) == 1 && !isObjectArg(args[0]) && tableName == "" {
				dropTable = args[0]
				if err := checkTableName(dropTable); err != nil {
					return err
				}
				args = nil
			}
			if tableName != "" {
				if err := checkTableName(tableName); err != nil {
					return err
				}
			}
			idArgs, err := parseIDArgs(args)
			if err != nil {
				return err
			}
			dir, err := store.path()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			st, err := store.open(ctx, storeWrite)
			if err != nil {
				return err
			}
			ids, err := resolveIDs(ctx, st, idArgs)
			if err != nil {
				return err
			}
			k, err := ks.openRing(ctx, dir, ringWrite, a.stderr)
			if err != nil {
				return err
			}
			defer k.Close()
			c := catalogOf(k)
			// Which objects go, and whether they may: an object of a
			// table goes through the table (rm --table NAME ID, or rm
			// NAME), so that the catalog never names a deleted object.
			what := ""
			switch {
			case dropTable != "":
				t, err := c.Table(ctx, dropTable)
				if err != nil {
					return tableErr(dropTable, err)
				}
				what = fmt.Sprintf("Drop the table %s, forget the DEKs of its %d %s and delete %s from %s?", dropTable,
					len(t.Objects), plural(len(t.Objects), "object", "objects"), plural(len(t.Objects), "it", "them"), store.name())
			default:
				for _, id := range ids {
					owner, ok, err := c.Owner(ctx, id)
					if err != nil {
						return about(k.ring.Path(), err)
					}
					switch {
					case tableName == "" && ok:
						return &cmdError{exitUsage, fmt.Sprintf("%s is an object of the table %s: remove it with sop-pme rm --table %s %s", id, owner, owner, id), nil}
					case tableName != "" && (!ok || owner != tableName):
						if _, err := c.Table(ctx, tableName); err != nil {
							return tableErr(tableName, err)
						}
						in := "no table"
						if ok {
							in = "the table " + owner
						}
						return &cmdError{exitNotFound, fmt.Sprintf("%s: not an object of the table %s (it is in %s)", id, tableName, in), nil}
					}
				}
				from := ""
				if tableName != "" {
					from = fmt.Sprintf("remove %s from the table %s, ", plural(len(ids), "it", "them"), tableName)
				}
				what = fmt.Sprintf("Forget the DEK of %d %s, %sand delete %s from %s?",
					len(ids), plural(len(ids), "object", "objects"), from, plural(len(ids), "it", "them"), store.name())
			}
			// Asked only now: what cannot go (an object of a table, a
			// name no table has) is refused as such, not as a missing
			// --yes.
			if !yes && !a.stdinTTY {
				return usagef("rm deletes for good: give --yes (stdin is not a terminal to ask on)")
			}
			if !yes {
				for i, a2 := range idArgs {
					if a2.prefix != "" {
						fmt.Fprintf(a.stderr, "%s is %s\n", a2.text, ids[i])
					}
				}
				fmt.Fprintf(a.stderr, "%s This cannot be undone. [y/N] ", what)
				line, _ := bufio.NewReader(a.stdin).ReadString('\n')
				if ans := strings.ToLower(strings.TrimSpace(line)); ans != "y" && ans != "yes" {
					return &cmdError{exitFailure, "nothing deleted", nil}
				}
			}
			switch {
			case dropTable != "":
				t, err := c.Drop(ctx, dropTable)
				if err != nil {
					return tableErr(dropTable, err)
				}
				ids = tableObjectIDs(t)
				if !asJSON {
					fmt.Fprintf(a.stdout, "table %s dropped from the catalog\n", dropTable)
				}
			case tableName != "":
				if err := c.RemoveObjects(ctx, tableName, ids...); err != nil {
					return tableErr(tableName, err)
				}
			}
			results := []rmResult{}
			for _, id := range ids {
				res, err := shred(ctx, k, st, id, dropTable != "" || tableName != "")
				if err != nil {
					return err
				}
				results = append(results, res)
				if !asJSON {
					switch {
					case res.DEKForgotten && res.ObjectDeleted:
						fmt.Fprintf(a.stdout, "%s: DEK forgotten, object deleted\n", id)
					case res.ObjectDeleted:
						fmt.Fprintf(a.stdout, "%s: object deleted (the keyring held no DEK for it)\n", id)
					case res.DEKForgotten:
						fmt.Fprintf(a.stdout, "%s: DEK forgotten (the store held no such object)\n", id)
					default:
						fmt.Fprintf(a.stdout, "%s: neither a DEK nor the object was left\n", id)
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
	cmd.Flags().StringVar(&tableName, "table", "", "remove the objects ID... from the table `name` (catalog, then DEK, then object)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

// shred forgets the DEK of id, then deletes the object. An object with
// neither is not found, unless gone is set (an object a table named, which
// an earlier rm may have half removed).
func shred(ctx context.Context, k *keys, st store, id storageid.ID, gone bool) (rmResult, error) {
	held, err := k.ring.Has(ctx, id)
	if err != nil {
		return rmResult{}, about(k.ring.Path(), err)
	}
	if err := k.ring.Delete(ctx, id); err != nil {
		return rmResult{}, about(id.String(), err)
	}
	res := rmResult{StorageID: id.String(), DEKForgotten: held[0]}
	err = st.Delete(ctx, id)
	switch {
	case err == nil:
		res.ObjectDeleted = true
	case errors.Is(err, blobs.ErrNotFound):
		if !held[0] && !gone {
			return rmResult{}, &cmdError{exitNotFound, fmt.Sprintf("%s: no such object in the store, and no DEK for it in the keyring", id), err}
		}
	default:
		return rmResult{}, about(id.String(), fmt.Errorf("the DEK is forgotten, but deleting the object failed: %w", err))
	}
	return res, nil
}
