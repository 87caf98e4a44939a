package main

import (
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/storageid"
	"github.com/spf13/cobra"
)

type lsEntry struct {
	StorageID string `json:"storage_id"`
	Size      uint64 `json:"size"`
	// DEK says whether the keyring holds a DEK for the object; null when
	// there is no keyring to ask.
	DEK *bool `json:"dek"`
}

func (a *app) lsCmd() *cobra.Command {
	var (
		store  storeFlag
		ks     keySource
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List the objects in a store, and whether the keyring holds their DEKs",
		Long: `Ls lists the objects of the store: storage_id, size in bytes, and whether the
keyring holds a DEK for each (an object without one cannot be read: its DEK was
forgotten, or is kept elsewhere). Without a KEK or keyring it lists the store
alone, with "-" for the DEK column. It reads no object bytes, and the order is
the directory's.

` + keysHelp,
		Args: exactArgs(0, "no argument"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			st, err := store.openReadOnly()
			if err != nil {
				return err
			}
			k, err := ks.openRing(ctx, store.dir, ringRead, a.stderr)
			var ce *cmdError
			if errors.As(err, &ce) && ce.code == exitNotFound {
				if !asJSON {
					fmt.Fprintf(a.stderr, "sop-pme: %s; DEK column not shown\n", ce.msg)
				}
				k, err = nil, nil
			}
			if err != nil {
				return err
			}
			defer k.Close()

			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			if !asJSON {
				fmt.Fprintln(tw, "STORAGE_ID\tSIZE\tDEK")
			}
			first := true
			var batch []blobs.Blob
			flush := func() error {
				held := make([]bool, len(batch))
				if k != nil {
					ids := make([]storageid.ID, len(batch))
					for i, b := range batch {
						ids[i] = b.ID
					}
					if held, err = k.ring.Has(ctx, ids...); err != nil {
						return about(k.ring.Path(), err)
					}
				}
				for i, b := range batch {
					e := lsEntry{StorageID: b.ID.String(), Size: b.Size}
					if k != nil {
						e.DEK = &held[i]
					}
					if asJSON {
						sep := ",\n"
						if first {
							sep = "[\n"
						}
						line, _ := jsonLine(e)
						fmt.Fprintf(a.stdout, "%s  %s", sep, line)
					} else {
						dek := "-"
						if e.DEK != nil {
							dek = map[bool]string{true: "yes", false: "no"}[*e.DEK]
						}
						fmt.Fprintf(tw, "%s\t%d\t%s\n", e.StorageID, e.Size, dek)
					}
					first = false
				}
				batch = batch[:0]
				return nil
			}
			for b, err := range st.List(ctx) {
				if err != nil {
					return about(store.dir, err)
				}
				if batch = append(batch, b); len(batch) == 1024 {
					if err := flush(); err != nil {
						return err
					}
				}
			}
			if err := flush(); err != nil {
				return err
			}
			if asJSON {
				if first {
					fmt.Fprintln(a.stdout, "[]")
				} else {
					fmt.Fprintln(a.stdout, "\n]")
				}
				return nil
			}
			return tw.Flush()
		}),
	}
	addStoreFlag(cmd, &store)
	addKeyFlags(cmd, &ks)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	return cmd
}
