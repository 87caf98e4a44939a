package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/sovm/sop-pme/catalog"
)

// lsTableEntry is a table in ls --json.
type lsTableEntry struct {
	Name         string  `json:"name"`
	Objects      int     `json:"objects"`
	Rows         int64   `json:"rows"`
	UnpaddedSize int64   `json:"unpadded_size"`
	Size         int64   `json:"size"`
	Version      int     `json:"version"`
	Created      string  `json:"created"`
	LastAppend   *string `json:"last_append"` // null for a table without objects
}

// lsObjectEntry is an object of a table in ls TABLE --json.
type lsObjectEntry struct {
	StorageID    string `json:"storage_id"`
	Version      int    `json:"version"`
	Rows         int64  `json:"rows"`
	Size         int64  `json:"size"`
	UnpaddedSize int64  `json:"unpadded_size"`
	Appended     string `json:"appended"`
}

func tableEntry(t *catalog.Table) lsTableEntry {
	e := lsTableEntry{Name: t.Name, Objects: len(t.Objects), Version: t.Current().ID, Created: t.Created.UTC().Format(timeFormat)}
	var last time.Time
	for _, o := range t.Objects {
		e.Rows += o.Rows
		e.UnpaddedSize += o.UnpaddedSize
		e.Size += o.Size
		if o.Appended.After(last) {
			last = o.Appended
		}
	}
	if !last.IsZero() {
		s := last.UTC().Format(timeFormat)
		e.LastAppend = &s
	}
	return e
}

// printTables prints the tables of ls: a table of them, then a blank line,
// or none if there are none; under --json, the opening of ls's object and
// its "tables" array.
func (a *app) printTables(tables []*catalog.Table, asJSON bool) error {
	entries := make([]lsTableEntry, len(tables))
	for i, t := range tables {
		entries[i] = tableEntry(t)
	}
	if asJSON {
		line, err := jsonLine(entries)
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "{\"tables\": %s, \"objects\": ", line)
		return nil
	}
	if len(tables) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tOBJECTS\tROWS\tUNPADDED BYTES\tLAST APPEND")
	for _, e := range entries {
		last := "-"
		if e.LastAppend != nil {
			last = *e.LastAppend
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\n", e.Name, e.Objects, e.Rows, e.UnpaddedSize, last)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(a.stdout)
	return nil
}

// lsTable lists the objects of the table name.
func (a *app) lsTable(ctx context.Context, store *storeFlag, ks *keySource, name string, asJSON bool) error {
	if err := checkTableName(name); err != nil {
		return err
	}
	_, k, c, err := a.openTables(ctx, store, ks, ringRead)
	if err != nil {
		return err
	}
	defer k.Close()
	t, err := c.Table(ctx, name)
	if err != nil {
		return tableErr(name, err)
	}
	entries := make([]lsObjectEntry, len(t.Objects))
	for i, o := range t.Objects {
		entries[i] = lsObjectEntry{o.ID.String(), o.Version, o.Rows, o.Size, o.UnpaddedSize, o.Appended.UTC().Format(timeFormat)}
	}
	if asJSON {
		return printJSON(a.stdout, entries)
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STORAGE_ID\tVERSION\tROWS\tSIZE\tUNPADDED\tAPPENDED")
	for _, e := range entries {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\n", e.StorageID, e.Version, e.Rows, e.Size, e.UnpaddedSize, e.Appended)
	}
	return tw.Flush()
}
