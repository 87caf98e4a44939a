package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/sovm/sop-pme/keyring"
	"github.com/spf13/cobra"
)

func (a *app) migrateCmd() *cobra.Command {
	var (
		store storeFlag
		ks    keySource
	)
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Import the keyring an earlier version kept in the store",
		Long: `Migrate imports the keyring of earlier versions, STORE/keyring.json with its
KEK in STORE/kek, into the keyring (created with its KEK if need be). It
changes nothing in the store: once the objects read, delete STORE/kek and
STORE/keyring.json by hand, since a KEK in the store is exposed.

` + keysHelp,
		Args: exactArgs(0, "no argument"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			dir, err := store.path()
			if err != nil {
				return err
			}
			if err := store.dirOnly("migrate"); err != nil {
				return err
			}
			k, err := ks.openRing(ctx, dir, ringCreate, a.stdout)
			if err != nil {
				return err
			}
			defer k.Close()
			oldPath, oldKEK := filepath.Join(dir, "keyring.json"), filepath.Join(dir, "kek")
			raw, err := os.ReadFile(oldKEK)
			if err != nil {
				return &cmdError{exitNotFound, fmt.Sprintf("%s: no KEK of an earlier version", oldKEK), err}
			}
			kek, err := keyring.KEKFromBytes(raw)
			clear(raw)
			if err != nil {
				return about(oldKEK, err)
			}
			n, err := k.ring.ImportV1(ctx, oldPath, kek)
			if err != nil {
				return about(oldPath, err)
			}
			fmt.Fprintf(a.stdout, "imported %d DEKs from %s into %s\n", n, oldPath, k.ring.Path())
			fmt.Fprintf(a.stdout, "once the objects read, delete %s and %s: a KEK in the store is exposed\n", oldKEK, oldPath)
			return nil
		}),
	}
	addStoreFlag(cmd, &store)
	addKeyFlags(cmd, &ks)
	return cmd
}
