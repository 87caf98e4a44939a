//go:build !duckdb

package main

import "github.com/spf13/cobra"

// sqlBuilt says whether this build has the sql command: this one, built
// without the duckdb tag, is pure Go and links no DuckDB.
const sqlBuilt = false

// runSQL, in a build without DuckDB, says how to get one.
func (a *app) runSQL(*cobra.Command, *sqlFlags, []string) error { return errNoSQL }
