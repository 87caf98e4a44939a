package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"time"

	"github.com/sovm/sop-pme/catalog"
)

// runTable imports each file of paths ("-" for stdin) as an object of the
// table im.table, one after another, and stops at the first failure (the
// files before it stay in the table). The KEK, the keyring and the store
// are created first if missing: the catalog, in the keyring, numbers the
// input's columns before the object is written.
func (im *importer) runTable(ctx context.Context, paths []string) error {
	a, dir := im.a, im.dir
	if err := checkTableName(im.table); err != nil {
		return err
	}
	if im.assign {
		return usagef("--assign-field-ids is for an import without --table: a table's catalog gives the field IDs")
	}
	if n := len(slices.DeleteFunc(slices.Clone(paths), func(p string) bool { return p != "-" })); n > 1 {
		return usagef("stdin (-) can be read once")
	}
	if err := im.ks.checkApart(dir); err != nil {
		return err
	}
	st, _, err := im.store.create(ctx)
	if err != nil {
		return err
	}
	k, err := im.ks.openRing(ctx, dir, ringCreate, a.stderr)
	if err != nil {
		return err
	}
	defer k.Close()
	c := catalogOf(k)
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(importMemoryLimit(im.rgBytes, im.parallel))
	}
	results := []importResult{}
	for i, path := range paths {
		res, err := im.importInto(ctx, st, k, c, path)
		if err != nil {
			if i > 0 && !im.asJSON {
				fmt.Fprintf(a.stderr, "sop-pme: %d of %d files imported into %s before this failure\n", i, len(paths), im.table)
			}
			return err
		}
		results = append(results, res)
		if !im.asJSON {
			if i > 0 {
				fmt.Fprintln(a.stdout)
			}
			fmt.Fprintf(a.stdout, "file           %s\n", res.File)
			im.print(res)
		}
	}
	if im.asJSON {
		return printJSON(a.stdout, results)
	}
	return nil
}

// importInto imports the file at path as an object of the table: the
// catalog plans the input's field IDs (creating the table, or evolving it
// under --evolve), the object is written with them, its DEK put into the
// keyring, and then it is appended to the table. If the append fails, the
// DEK is forgotten and the object deleted.
func (im *importer) importInto(ctx context.Context, st store, k *keys, c *catalog.Catalog, path string) (importResult, error) {
	name := path
	total := int64(-1)
	if path == "-" {
		name = "stdin"
	} else if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
		total = fi.Size()
	}
	m := im.a.newMeter("import", total)
	src, err := im.source(ctx, path, name, m.add)
	if err != nil {
		m.abort()
		return importResult{}, err
	}
	defer src.close()
	in, rr, err := im.open(ctx, src, name, m)
	if err != nil {
		m.abort()
		return importResult{}, err
	}
	defer in.Close()

	var opts []catalog.PlanOption
	if im.evolve {
		opts = append(opts, catalog.WithEvolve())
	}
	plan, err := c.Plan(ctx, im.table, in.Schema(), opts...)
	if err != nil {
		m.abort()
		return importResult{}, inFile(name, tableErr(im.table, err))
	}
	w, err := im.write(ctx, st, in.Format, rr, src, m, plan.Schema)
	if err != nil {
		m.abort()
		return importResult{}, about(name, err)
	}
	id := w.obj.StorageID
	if err := k.ring.Put(ctx, id, w.obj.DEK); err != nil {
		m.abort()
		st.Delete(ctx, id)
		return importResult{}, about(k.ring.Path(), err)
	}
	// A crash here leaves the object and its DEK in no table: ls lists it
	// among the objects in no table, and rm removes it.
	crashPoint("import-before-append")
	obj := catalog.Object{
		ID: id, Version: plan.Version, Rows: w.prog.Rows,
		UnpaddedSize: int64(w.obj.UnpaddedSize), Size: int64(w.obj.Size),
		Appended: time.Now().UTC(),
	}
	if err := c.Append(ctx, plan, obj); err != nil {
		m.abort()
		// Not in the table: the object goes, its DEK first.
		derr := k.ring.Delete(ctx, id)
		if derr == nil {
			derr = st.Delete(ctx, id)
		}
		err = inFile(name, tableErr(im.table, err))
		var ce *cmdError
		if derr != nil && errors.As(err, &ce) {
			return importResult{}, &cmdError{ce.code, fmt.Sprintf("%s (and removing the object %s failed: %s; sop-pme rm removes it)", ce.msg, id, clean(derr)), ce.err}
		}
		return importResult{}, err
	}
	res := im.finish(m, w, name)
	res.Table, res.Version, res.File = im.table, plan.Version, path
	return res, nil
}

// inFile puts the input's name before a command error's line.
func inFile(name string, err error) error {
	var ce *cmdError
	if errors.As(err, &ce) {
		return &cmdError{ce.code, name + ": " + ce.msg, ce.err}
	}
	return about(name, err)
}
