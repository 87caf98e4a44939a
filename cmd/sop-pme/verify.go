package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
	"github.com/spf13/cobra"
)

type verifyResult struct {
	StorageID string `json:"storage_id"`
	Size      int64  `json:"size"`
	Verified  bool   `json:"verified"`
	// For an object that failed: the one line, the exit code, and, when
	// bytes did not match, the first damaged range and the regions of the
	// object it falls in (when the keyring holds the object's DEK).
	Error    string         `json:"error,omitempty"`
	Code     int            `json:"code,omitempty"`
	Damaged  *damagedRange  `json:"damaged,omitempty"`
	Location []locationJSON `json:"location,omitempty"`
}

// damagedRange is a verify.RangeError in JSON.
type damagedRange struct {
	Offset int64 `json:"offset"`
	Length int64 `json:"length"`
	// Proof: the range's parent hashes (the outboard) do not match; its
	// bytes may be intact.
	Proof bool `json:"proof"`
}

// locationJSON is a reader.Location in JSON.
type locationJSON struct {
	Part     string `json:"part"`
	Offset   int64  `json:"offset"`
	Length   int64  `json:"length"`
	RowGroup *int   `json:"row_group,omitempty"`
	Column   string `json:"column,omitempty"`
	FieldID  *int32 `json:"field_id,omitempty"`
}

// verifySummary is verify --json for several objects.
type verifySummary struct {
	Objects  []verifyResult `json:"objects"`
	Total    int            `json:"total"`
	Verified int            `json:"verified"`
	Failed   int            `json:"failed"`
}

func (a *app) verifyCmd() *cobra.Command {
	var (
		flags objectFlags
		all   bool
	)
	cmd := &cobra.Command{
		Use:   "verify ID... | --all | TABLE",
		Short: "Check every byte of objects against their storage_ids (no key needed)",
		Long: `Verify hashes every byte of each object ID (or, with --all, of every object in
the store), in bounded memory, and checks the result against its storage_id:
the only check after which an object counts as verified (SOP-PME-1 11.10).
It needs no key: the storage_id is the hash of the ciphertext.

An object that does not match is reported with the first damaged range: the
first 16 KiB group whose bytes do not match (or whose proof, the parent
hashes of the outboard, does not). If the keyring holds the object's DEK,
the range is also told in the object's terms: the row group and column whose
chunk it falls in, or the footer. Without a keyring, verify says only the
range.

An ID is a storage_id or a unique prefix of one (at least 8 hex digits).
With several objects, verify prints a line for each and a summary, and goes
on past a failure. The exit code is 0 if every object verified; otherwise
that of the gravest failure: 4 (bytes do not match) before 3 (no such
object), then the others.

Given a TABLE's name, verify verifies every object of the table, as for
several IDs: a line for each, a summary, and a non-zero exit code if any
failed. It needs the keyring, which holds the table's catalog.

` + tablesHelp + `

` + keysHelp,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 && !isObjectArg(args[0]) && !all {
				return nil
			}
			return idsOrAll(&all)(cmd, args)
		},
		RunE: tableOr(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			name := args[0]
			st, k, c, err := a.openTables(ctx, &flags.store, &flags.ks, ringRead)
			if err != nil {
				return err
			}
			defer k.Close()
			t, err := c.Table(ctx, name)
			if err != nil {
				return tableErr(name, err)
			}
			objs := &objects{st: st, dir: flags.store.value, ks: &flags.ks, ids: tableObjectIDs(t), k: k, kOpened: true}
			if len(objs.ids) == 0 {
				if flags.asJSON {
					return printJSON(a.stdout, verifySummary{Objects: []verifyResult{}})
				}
				fmt.Fprintf(a.stdout, "table %s has no objects\n", name)
				return nil
			}
			return a.verifyObjects(ctx, objs, true, flags.asJSON, "table "+name)
		}, a.withObjects(&flags, &all, keysLater, func(ctx context.Context, objs *objects) error {
			return a.verifyObjects(ctx, objs, all || len(objs.ids) > 1, flags.asJSON, "")
		})),
	}
	flags.add(cmd, "print the result as JSON")
	cmd.Flags().BoolVar(&all, "all", false, "verify every object in the store")
	return cmd
}

// verifyObjects verifies objs.ids, one after another, printing a line for
// each if many, and a summary (about of, such as "table t", if not "").
func (a *app) verifyObjects(ctx context.Context, objs *objects, many, asJSON bool, of string) error {
	ids := objs.ids
	m := a.newMeter("verify", -1)
	results := []verifyResult{}
	var failures []error
	var total int64
	for _, id := range ids {
		res, err := objs.verify(ctx, countingSource{objs.st, m}, id)
		total += max(res.Size, 0)
		if err != nil && errors.Is(err, context.Canceled) {
			m.abort()
			return err
		}
		if err != nil {
			failures = append(failures, err)
			res.Code, res.Error = exitCode(err)
		}
		results = append(results, res)
		if asJSON {
			continue
		}
		switch {
		case err == nil:
			fmt.Fprintf(a.stdout, "%s: every byte matches its storage_id (%d bytes)\n", id, res.Size)
		case many:
			fmt.Fprintf(a.stdout, "%s: FAILED: %s\n", id, strings.TrimPrefix(res.Error, id.String()+": "))
		}
	}
	// The rate, on success only: a failure ends with its line.
	switch {
	case len(failures) > 0:
		m.abort()
	case many:
		m.done("verified %d %s (%s)", len(ids), plural(len(ids), "object", "objects"), mb(total))
	default:
		m.done("verified %s (%s)", ids[0], mb(total))
	}
	sum := verifySummary{Objects: results, Total: len(ids), Verified: len(ids) - len(failures), Failed: len(failures)}
	switch {
	case asJSON && many:
		if err := printJSON(a.stdout, sum); err != nil {
			return err
		}
	case asJSON:
		if err := printJSON(a.stdout, results[0]); err != nil {
			return err
		}
	case many:
		fmt.Fprintf(a.stdout, "%d %s: %d verified, %d failed\n", sum.Total, plural(sum.Total, "object", "objects"), sum.Verified, sum.Failed)
	}
	what := "failed verification"
	if of != "" {
		what = "of " + of + " " + what
	}
	return manyFailed(failures, len(ids), many, what)
}

// gravity orders exit codes for a command over several objects: the code
// it exits with is that of its gravest failure.
var gravity = []int{exitVerify, exitNonConform, exitKey, exitNotFound, exitFailure, exitUsage}

// manyFailed returns the error a command over n objects ends with, given
// its failures: nil if none; the one failure as it is for a single object;
// otherwise a line counting them, with the exit code of the gravest.
func manyFailed(failures []error, n int, many bool, what string) error {
	if len(failures) == 0 {
		return nil
	}
	if !many {
		return failures[0]
	}
	code := exitFailure
	rank := len(gravity)
	for _, err := range failures {
		c, _ := exitCode(err)
		for i, g := range gravity {
			if g == c && i < rank {
				code, rank = c, i
			}
		}
	}
	// Not wrapping the failures: the line is this one, whatever they say.
	return &cmdError{code, fmt.Sprintf("%d of %d objects %s", len(failures), n, what), nil}
}

// verify verifies one object. Its error, for a damaged object, says where
// the first damage is.
func (o *objects) verify(ctx context.Context, src verify.Source, id storageid.ID) (verifyResult, error) {
	res := verifyResult{StorageID: id.String(), Size: -1}
	vr, err := verify.NewReader(ctx, o.st, id)
	var opts []verify.Option
	switch {
	case err == nil:
		res.Size = vr.Size()
		opts = append(opts, verify.WithExpectedSize(vr.Size()))
	case errors.Is(err, verify.ErrVerify), errors.Is(err, verify.ErrSize):
		// The last group, which proves the size, does not verify: Verify
		// says where the first damage is.
	default:
		return res, about(id.String(), err)
	}
	if err := verify.Verify(ctx, src, id, opts...); err != nil {
		var re *verify.RangeError
		if !errors.As(err, &re) {
			return res, about(id.String(), err)
		}
		res.Damaged = &damagedRange{int64(re.Off), int64(re.Len), re.Proof}
		locs, where := o.locate(ctx, id, re)
		res.Location = locs
		code, msg := exitCode(about(id.String(), err))
		return res, &cmdError{code, msg + damageText(re, where), err}
	}
	res.Verified = true
	return res, nil
}

// damageText says where the first damage is, for the error line.
func damageText(re *verify.RangeError, where string) string {
	s := fmt.Sprintf(" (first damaged range: bytes [%d, %d)", re.Off, re.Off+re.Len)
	if re.Proof {
		s = fmt.Sprintf(" (first damaged range: the proof of bytes [%d, %d)", re.Off, re.Off+re.Len)
	}
	if where != "" {
		s += ", in " + where
	}
	return s + ")"
}

// maxPlaces is how many regions the error line names for one range.
const maxPlaces = 3

// locate tells a damaged range in the object's terms, if the keyring holds
// its DEK: the regions it overlaps, in JSON and as text ("" if unknown).
// Without a keyring (it is opened, read-only, the first time it is needed)
// the damage is told by its range only.
func (o *objects) locate(ctx context.Context, id storageid.ID, re *verify.RangeError) ([]locationJSON, string) {
	if _, err := o.keyring(ctx, io.Discard); err != nil {
		return nil, ""
	}
	r, err := o.reader(ctx, o.st, id)
	if err != nil {
		// Open reads and verifies the trailer and the footer region only:
		// if it fails on the very range, that range is in the footer.
		var ore *verify.RangeError
		if errors.As(err, &ore) && *ore == *re {
			return []locationJSON{{Part: reader.PartFooter.String(), Offset: int64(re.Off), Length: int64(re.Len)}}, "the footer"
		}
		return nil, ""
	}
	locs, err := r.Locate(ctx, int64(re.Off), int64(re.Len))
	if err != nil || len(locs) == 0 {
		return nil, ""
	}
	var out []locationJSON
	var text []string
	for i, l := range locs {
		j := locationJSON{Part: l.Part.String(), Offset: l.Off, Length: l.Len}
		if l.Part == reader.PartColumnChunk {
			rg, fid := l.RowGroup, l.FieldID
			j.RowGroup, j.Column = &rg, l.Path
			if fid >= 0 {
				j.FieldID = &fid
			}
		}
		out = append(out, j)
		if i < maxPlaces {
			text = append(text, l.String())
		}
	}
	if len(locs) > maxPlaces {
		text = append(text, fmt.Sprintf("%d more", len(locs)-maxPlaces))
	}
	return out, strings.Join(text, "; ")
}
