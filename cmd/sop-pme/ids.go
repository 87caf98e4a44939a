package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/storageid"
)

// minPrefix is the fewest hex digits of a storage_id prefix given for an
// ID: 8, as restic asks, enough to be unique in a store of tens of
// thousands of objects (a second object shares a given 8-digit prefix with
// probability n/2^32).
const minPrefix = 8

// maxCandidates is how many storage_ids an ambiguous prefix's error lists.
const maxCandidates = 10

// An idArg is a storage_id as given on the command line: a whole one (64
// hex digits, or iroh's base32), or a unique prefix of at least minPrefix
// hex digits, which only the store can resolve, as git and restic resolve
// one.
type idArg struct {
	text   string
	id     storageid.ID // a whole storage_id
	prefix string       // lower-case hex digits, if a prefix
}

// parseIDArg parses an ID argument, without the store: a usage error for
// text that is neither a storage_id nor a prefix long enough.
func parseIDArg(s string) (idArg, error) {
	if id, err := storageid.Parse(s); err == nil {
		return idArg{text: s, id: id}, nil
	}
	p := strings.ToLower(s)
	if p == "" || len(p) >= 2*len(storageid.ID{}) || strings.Trim(p, "0123456789abcdef") != "" {
		return idArg{}, usagef("%q is not a storage_id (64 hex digits, or a unique prefix of at least %d)", s, minPrefix)
	}
	if len(p) < minPrefix {
		return idArg{}, usagef("%q is not a storage_id, and too short a prefix of one (at least %d hex digits)", s, minPrefix)
	}
	return idArg{text: s, prefix: p}, nil
}

// parseIDArgs parses every argument (see parseIDArg).
func parseIDArgs(args []string) ([]idArg, error) {
	out := make([]idArg, len(args))
	for i, s := range args {
		a, err := parseIDArg(s)
		if err != nil {
			return nil, err
		}
		out[i] = a
	}
	return out, nil
}

// resolveIDs returns the storage_ids args name in the store: a whole one as
// it is (whether or not the store holds it), a prefix as the one object
// of the store whose storage_id starts with it. A prefix that no object
// has is not found (exit 3); one that several have is a usage error that
// lists them (exit 2). The store is listed once, and only if a prefix is
// given.
func resolveIDs(ctx context.Context, st store, args []idArg) ([]storageid.ID, error) {
	ids := make([]storageid.ID, len(args))
	matches := make([][]storageid.ID, len(args))
	anyPrefix := false
	for i, a := range args {
		ids[i] = a.id
		anyPrefix = anyPrefix || a.prefix != ""
	}
	if !anyPrefix {
		return ids, nil
	}
	for b, err := range st.List(ctx) {
		if err != nil {
			return nil, err
		}
		hex := b.ID.String()
		for i, a := range args {
			if a.prefix != "" && strings.HasPrefix(hex, a.prefix) {
				matches[i] = append(matches[i], b.ID)
			}
		}
	}
	for i, a := range args {
		if a.prefix == "" {
			continue
		}
		switch m := matches[i]; len(m) {
		case 0:
			return nil, &cmdError{exitNotFound, fmt.Sprintf("%s: no object in the store has a storage_id starting with it", a.text), blobs.ErrNotFound}
		case 1:
			ids[i] = m[0]
		default:
			slices.SortFunc(m, func(x, y storageid.ID) int { return strings.Compare(x.String(), y.String()) })
			var list []string
			for _, id := range m[:min(len(m), maxCandidates)] {
				list = append(list, id.String())
			}
			more := ""
			if len(m) > maxCandidates {
				more = fmt.Sprintf(" and %d more", len(m)-maxCandidates)
			}
			return nil, usagef("%s is ambiguous: %d objects' storage_ids start with it: %s%s (give more digits)", a.text, len(m), strings.Join(list, ", "), more)
		}
	}
	return ids, nil
}
