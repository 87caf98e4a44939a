package main

import (
	"bytes"
	"context"
	"io"
	"slices"

	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
	"github.com/spf13/cobra"
)

// objectFlags are the flags of a command that reads stored objects (check,
// schema, inspect, verify, export): the store, the keys, and --json.
type objectFlags struct {
	store  storeFlag
	ks     keySource
	asJSON bool
}

// add registers --store and the key flags on cmd, and --json, saying it
// prints json, unless json is "".
func (f *objectFlags) add(cmd *cobra.Command, json string) {
	addStoreFlag(cmd, &f.store)
	addKeyFlags(cmd, &f.ks)
	if json != "" {
		cmd.Flags().BoolVar(&f.asJSON, "json", false, json)
	}
}

// idsOrAll returns the argument check of a command over several objects:
// one or more IDs, or --all (*all), not both.
func idsOrAll(all *bool) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if *all == (len(args) > 0) {
			return usagef("%s takes one or more storage_ids, or --all (see %s -h)", subPath(cmd), cmd.CommandPath())
		}
		return nil
	}
}

// keyUse says when openObjects opens the keyring.
type keyUse int

const (
	// keysNow opens it with the store: the command reads with DEKs, and
	// fails without them.
	keysNow keyUse = iota
	// keysLater opens it only when objects.keyring is first called: the
	// command works without keys, and uses them if it finds them.
	keysLater
)

// objects is what a command that reads stored objects works on: the store,
// opened read-only, the storage_ids its arguments name in it, and the
// keyring, opened read-only. Neither the store nor the keyring is ever
// created. Close closes the keyring.
type objects struct {
	st  store
	dir string
	ks  *keySource
	ids []storageid.ID

	k       *keys // the keyring, once keyring was called
	kErr    error // what opening it gave
	kOpened bool
}

// openObjects opens the objects a command's arguments name, for reading:
// it parses the IDs (storage_ids or unique prefixes; a usage error before
// anything is opened), opens the store read-only and, with keysNow, the
// keyring read-only (its messages go to stderr), then resolves the IDs in
// the store, or with all, lists every object of the store, sorted.
func (a *app) openObjects(ctx context.Context, f *objectFlags, args []string, all bool, use keyUse) (*objects, error) {
	idArgs, err := parseIDArgs(args)
	if err != nil {
		return nil, err
	}
	st, err := f.store.openReadOnly(ctx)
	if err != nil {
		return nil, err
	}
	o := &objects{st: st, dir: f.store.value, ks: &f.ks}
	if use == keysNow {
		if _, err := o.keyring(ctx, a.stderr); err != nil {
			return nil, err
		}
	}
	if o.ids, err = objectIDs(ctx, st, idArgs, all); err != nil {
		o.Close()
		return nil, err
	}
	return o, nil
}

// Close closes the keyring, if it was opened.
func (o *objects) Close() { o.k.Close() }

// keyring returns the keyring, opened read-only the first time it is asked
// for (its messages, such as a rotation left unfinished, go to msg), or
// the error opening it gave.
func (o *objects) keyring(ctx context.Context, msg io.Writer) (*keys, error) {
	if !o.kOpened {
		o.kOpened = true
		o.k, o.kErr = o.ks.openRing(ctx, o.dir, ringRead, msg)
	}
	return o.k, o.kErr
}

// reader opens object id for reading through src (the store, or the store
// behind a meter), with its DEK from the keyring, which must be open. Its
// error is about id.
func (o *objects) reader(ctx context.Context, src verify.Source, id storageid.ID) (*reader.Reader, error) {
	r, err := reader.Open(ctx, src, id, o.k.ring)
	if err != nil {
		return nil, about(id.String(), err)
	}
	return r, nil
}

// withObjects returns the RunE of a command that reads stored objects: it
// opens the objects its arguments name (openObjects; with all set, every
// object of the store), runs fn on them with the command's context, and
// closes them.
func (a *app) withObjects(flags *objectFlags, all *bool, use keyUse, fn func(ctx context.Context, objs *objects) error) func(*cobra.Command, []string) error {
	return runE(func(cmd *cobra.Command, args []string) error {
		ctx := cmd.Context()
		objs, err := a.openObjects(ctx, flags, args, all != nil && *all, use)
		if err != nil {
			return err
		}
		defer objs.Close()
		return fn(ctx, objs)
	})
}

// objectIDs returns the objects a command over several objects works on:
// the IDs given, resolved, or with all, every object of the store, sorted.
func objectIDs(ctx context.Context, st store, args []idArg, all bool) ([]storageid.ID, error) {
	if !all {
		return resolveIDs(ctx, st, args)
	}
	var ids []storageid.ID
	for b, err := range st.List(ctx) {
		if err != nil {
			return nil, err
		}
		ids = append(ids, b.ID)
	}
	sortIDs(ids)
	return ids, nil
}

// sortIDs sorts storage_ids by their hex form (the order of their bytes).
func sortIDs(ids []storageid.ID) {
	slices.SortFunc(ids, func(x, y storageid.ID) int { return bytes.Compare(x[:], y[:]) })
}
