package main

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/sovm/sop-pme/reader"
	"github.com/spf13/cobra"
)

type checkResult struct {
	StorageID    string         `json:"storage_id"`
	Size         int64          `json:"size"`
	UnpaddedSize int64          `json:"unpadded_size"`
	KeyRef       string         `json:"key_ref"`
	Conformant   bool           `json:"conformant"`
	Checked      []string       `json:"checked"`
	Findings     []checkFinding `json:"findings"`
}

type checkFinding struct {
	Requirement string `json:"requirement"`
	Detail      string `json:"detail"`
}

func (a *app) checkCmd() *cobra.Command {
	var (
		store  storeFlag
		ks     keySource
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "check ID",
		Short: "Check an object's conformance to SOP-PME-1, requirement by requirement",
		Long: `Check verifies every byte of the object ID against its storage_id, then reads
it through verified ranges, opens every module with its DEK, and reports each
requirement of SOP-PME-1 it tests: storage_id, magic, algorithm, key_ref,
modules, pad entry, padded size, field IDs, and rows: it reads every row as
export does, so that an object check calls conformant is one export reads
(its pages pass the reader's checks and decode). It exits with 0 when the object is
conformant, 4 when its bytes do not match the storage_id, and 6 when it fails
another requirement.

` + keysHelp,
		Args: exactArgs(1, "one storage_id"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			id, err := parseID(args[0])
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			st, k, err := a.openRead(ctx, &store, &ks)
			if err != nil {
				return err
			}
			defer k.Close()
			rep, err := reader.Check(ctx, st, id, k.ring)
			if err != nil {
				return about(id.String(), err)
			}
			res := checkResult{StorageID: id.String(), Size: rep.Size, UnpaddedSize: rep.UnpaddedSize,
				KeyRef: rep.KeyRef.String(), Conformant: rep.Conformant(), Checked: []string{}, Findings: []checkFinding{}}
			for _, r := range rep.Checked {
				res.Checked = append(res.Checked, r.String())
			}
			for _, f := range rep.Findings {
				res.Findings = append(res.Findings, checkFinding{f.Requirement.String(), cleanText(f.Detail)})
			}
			if asJSON {
				if err := printJSON(a.stdout, res); err != nil {
					return err
				}
			} else {
				printReport(a.stdout, rep)
			}
			switch {
			case rep.Failed(reader.ReqStorageID):
				return &cmdError{exitVerify, id.String() + ": the bytes do not match the storage_id: the object is damaged, or is not the one asked for", nil}
			case !rep.Conformant():
				return &cmdError{exitNonConform, fmt.Sprintf("%s: %s (%d %s failed)", id, errNonConformant, len(rep.Findings), plural(len(rep.Findings), "requirement", "requirements")), errNonConformant}
			}
			return nil
		}),
	}
	addStoreFlag(cmd, &store)
	addKeyFlags(cmd, &ks)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

// printReport prints a conformance report, one requirement a line.
func printReport(w io.Writer, rep *reader.Report) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "storage_id\t%s\n", rep.ID)
	for r := reader.ReqStorageID; r <= reader.ReqFieldIDs; r++ {
		switch {
		case rep.Failed(r):
			for _, f := range rep.Findings {
				if f.Requirement == r {
					fmt.Fprintf(tw, "FAIL\t%s\t%s\n", r, cleanText(f.Detail))
				}
			}
		case slices.Contains(rep.Checked, r):
			fmt.Fprintf(tw, "ok\t%s\t\n", r)
		default:
			fmt.Fprintf(tw, "-\t%s\tnot tested (an earlier failure makes it meaningless)\n", r)
		}
	}
	tw.Flush()
	if rep.Conformant() {
		fmt.Fprintln(w, "a conformant SOP-PME-1 object")
	} else {
		fmt.Fprintln(w, "NOT a conformant SOP-PME-1 object")
	}
}
