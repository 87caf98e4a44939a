package main

import (
	"fmt"

	"github.com/sovm/sop-pme/verify"
	"github.com/spf13/cobra"
)

type verifyResult struct {
	StorageID string `json:"storage_id"`
	Size      int64  `json:"size"`
	Verified  bool   `json:"verified"`
}

func (a *app) verifyCmd() *cobra.Command {
	var (
		store  storeFlag
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "verify ID",
		Short: "Check every byte of an object against its storage_id (no key needed)",
		Long: `Verify hashes every byte of the object ID, in bounded memory, and checks the
result against its storage_id: the only check after which an object counts as
verified (SOP-PME-1 11.10). It needs no key: the storage_id is the hash of the
ciphertext. A mismatch exits with code 4.`,
		Args: exactArgs(1, "one storage_id"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			id, err := parseID(args[0])
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			st, err := store.openReadOnly()
			if err != nil {
				return err
			}
			m := a.newMeter("verify", -1)
			vr, err := verify.NewReader(ctx, st, id)
			if err != nil {
				m.abort()
				return about(id.String(), err)
			}
			if m.bar != nil {
				m.bar.ChangeMax64(vr.Size())
			}
			if err := verify.Verify(ctx, countingSource{st, m}, id, verify.WithExpectedSize(vr.Size())); err != nil {
				m.abort()
				return about(id.String(), err)
			}
			m.done("verified %s (%s)", id, mb(vr.Size()))
			if asJSON {
				return printJSON(a.stdout, verifyResult{id.String(), vr.Size(), true})
			}
			fmt.Fprintf(a.stdout, "%s: every byte matches its storage_id (%d bytes)\n", id, vr.Size())
			return nil
		}),
	}
	addStoreFlag(cmd, &store)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}
