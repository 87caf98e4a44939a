//go:build duckdb

package main

import "testing"

// TestSQLREADME runs the README's commands (see TestREADME) with the
// build with DuckDB: its sql commands must succeed.
func TestSQLREADME(t *testing.T) { runREADME(t, sqlBinary) }

// TestSQLVersion: the build with DuckDB says it has SQL (see TestVersion).
func TestSQLVersion(t *testing.T) { checkVersion(t, sqlBinary, true) }
