package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
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
	// For an object that failed: its one line and exit code; for bytes
	// that do not match, the first damaged range and where it falls.
	Error    string         `json:"error,omitempty"`
	Code     int            `json:"code,omitempty"`
	Damaged  *damagedRange  `json:"damaged,omitempty"`
	Location []locationJSON `json:"location,omitempty"`
}

type checkFinding struct {
	Requirement string `json:"requirement"`
	Detail      string `json:"detail"`
}

// checkSummary is check --json for several objects.
type checkSummary struct {
	Objects    []checkResult `json:"objects"`
	Total      int           `json:"total"`
	Conformant int           `json:"conformant"`
	Failed     int           `json:"failed"`
}

func (a *app) checkCmd() *cobra.Command {
	var (
		flags objectFlags
		all   bool
	)
	cmd := &cobra.Command{
		Use:   "check ID... | --all",
		Short: "Check objects' conformance to SOP-PME-1, requirement by requirement",
		Long: `Check verifies every byte of each object ID (or, with --all, of every object in
the store) against its storage_id, then reads it through verified ranges,
opens every module with its DEK, and reports each requirement of SOP-PME-1
it tests: storage_id, magic, algorithm, key_ref, modules, pad entry, padded
size, field IDs, and rows: it reads every row as export does, so that an
object check calls conformant is one export reads (its pages pass the
reader's checks and decode). For an object whose bytes do not match, it
names the first damaged range and the row group and column, or the footer,
it falls in.

An ID is a storage_id or a unique prefix of one (at least 8 hex digits).
With several objects, check reports each and ends with a summary, going on
past a failure. It exits with 0 when every object is conformant; otherwise
with the code of the gravest failure: 4 when bytes do not match a
storage_id, 6 when an object fails another requirement, then 5 (no DEK), 3
(no such object), 1.

` + keysHelp,
		Args: idsOrAll(&all),
		RunE: a.withObjects(&flags, &all, keysNow, func(ctx context.Context, objs *objects) error {
			ids, asJSON := objs.ids, flags.asJSON
			many := all || len(ids) > 1
			results := []checkResult{}
			var failures []error
			reported := false // a report of the (first) object exists
			for i, id := range ids {
				if many && !asJSON && i > 0 {
					fmt.Fprintln(a.stdout)
				}
				res, rep, err := objs.check(ctx, id)
				if errors.Is(err, context.Canceled) {
					return err
				}
				if err != nil {
					failures = append(failures, err)
					res.Code, res.Error = exitCode(err)
				}
				results = append(results, res)
				reported = reported || rep != nil
				switch {
				case asJSON:
				case rep != nil:
					printReport(a.stdout, rep)
				case many:
					fmt.Fprintf(a.stdout, "storage_id  %s\nFAILED: %s\n", id, strings.TrimPrefix(res.Error, id.String()+": "))
				}
			}
			sum := checkSummary{Objects: results, Total: len(ids), Conformant: len(ids) - len(failures), Failed: len(failures)}
			switch {
			case asJSON && many:
				if err := printJSON(a.stdout, sum); err != nil {
					return err
				}
			case asJSON && reported:
				if err := printJSON(a.stdout, results[0]); err != nil {
					return err
				}
			case many:
				fmt.Fprintf(a.stdout, "\n%d %s: %d conformant, %d failed\n", sum.Total, plural(sum.Total, "object", "objects"), sum.Conformant, sum.Failed)
			}
			return manyFailed(failures, len(ids), many, "failed the check")
		}),
	}
	flags.add(cmd, "print the report as JSON")
	cmd.Flags().BoolVar(&all, "all", false, "check every object in the store")
	return cmd
}

// check checks one object: its result, its report (nil if the check could
// not run: no such object, no DEK), and the error the object gives, if it
// is not conformant.
func (o *objects) check(ctx context.Context, id storageid.ID) (checkResult, *reader.Report, error) {
	res := checkResult{StorageID: id.String(), Size: -1, UnpaddedSize: -1, Checked: []string{}, Findings: []checkFinding{}}
	rep, err := reader.Check(ctx, o.st, id, o.k.ring)
	if err != nil {
		return res, nil, about(id.String(), err)
	}
	res = checkResult{StorageID: id.String(), Size: rep.Size, UnpaddedSize: rep.UnpaddedSize,
		KeyRef: rep.KeyRef.String(), Conformant: rep.Conformant(), Checked: []string{}, Findings: []checkFinding{}}
	for _, r := range rep.Checked {
		res.Checked = append(res.Checked, r.String())
	}
	for _, f := range rep.Findings {
		res.Findings = append(res.Findings, checkFinding{f.Requirement.String(), cleanText(f.Detail)})
	}
	switch {
	case rep.Failed(reader.ReqStorageID):
		msg := id.String() + ": the bytes do not match the storage_id: the object is damaged, or is not the one asked for"
		// Where: the first damaged range, as verify finds it.
		var re *verify.RangeError
		if err := verify.Verify(ctx, o.st, id); errors.As(err, &re) {
			res.Damaged = &damagedRange{int64(re.Off), int64(re.Len), re.Proof}
			var where string
			res.Location, where = o.locate(ctx, id, re)
			msg += damageText(re, where)
		}
		return res, rep, &cmdError{exitVerify, msg, nil}
	case !rep.Conformant():
		return res, rep, &cmdError{exitNonConform, fmt.Sprintf("%s: %s (%d %s failed)", id, errNonConformant, len(rep.Findings), plural(len(rep.Findings), "requirement", "requirements")), errNonConformant}
	}
	return res, rep, nil
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
