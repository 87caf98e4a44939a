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
		Use:   "ls [TABLE]",
		Short: "List the tables and objects in a store, and whether the keyring holds their DEKs",
		Long: `Ls lists the tables of the store first, from their catalog in the keyring: name,
objects, rows, unpadded bytes and the time of the last append. Then it lists
the objects in no table: storage_id, size in bytes, and whether the keyring
holds a DEK for each (an object without one cannot be read: its DEK was
forgotten, or is kept elsewhere). Without a KEK or keyring it lists the store
alone, every object, with "-" for the DEK column. It reads no object bytes,
and the order of the objects is the directory's.

Ls TABLE lists the objects of the table, in the order they were appended:
storage_id, the schema version each was written at, rows, size, unpadded
size and the time of its append.

--json prints {"tables": [...], "objects": [...]} ("tables" is null without
a keyring to read the catalog from), or for ls TABLE an array of the table's
objects.

` + tablesHelp + `

` + keysHelp,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("ls takes no argument, or one table (see sop-pme ls -h)")
			}
			return nil
		},
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if len(args) == 1 {
				return a.lsTable(ctx, &store, &ks, args[0], asJSON)
			}
			st, err := store.openReadOnly(ctx)
			if err != nil {
				return err
			}
			k, err := ks.openRing(ctx, store.value, ringRead, a.stderr)
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

			// The tables first, and the objects they hold are not listed
			// again below.
			inTable := map[storageid.ID]bool{}
			hadTables := false
			if k != nil {
				tables, err := catalogOf(k).Tables(ctx)
				if err != nil {
					return about(k.ring.Path(), err)
				}
				hadTables = len(tables) > 0
				if err := a.printTables(tables, asJSON); err != nil {
					return err
				}
				for _, t := range tables {
					for _, o := range t.Objects {
						inTable[o.ID] = true
					}
				}
			} else if asJSON {
				fmt.Fprint(a.stdout, "{\"tables\": null, \"objects\": ")
			}

			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			// The header goes with the first object, or alone if there
			// is no table either.
			header := func() {
				if !asJSON {
					fmt.Fprintln(tw, "STORAGE_ID\tSIZE\tDEK")
				}
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
					if first {
						header()
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
					return about(store.name(), err)
				}
				if inTable[b.ID] {
					continue
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
			if first && len(inTable) == 0 && !hadTables {
				header()
			}
			if asJSON {
				if first {
					fmt.Fprintln(a.stdout, "[]}")
				} else {
					fmt.Fprintln(a.stdout, "\n]}")
				}
				return nil
			}
			return tw.Flush()
		}),
	}
	addStoreFlag(cmd, &store)
	addKeyFlags(cmd, &ks)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
