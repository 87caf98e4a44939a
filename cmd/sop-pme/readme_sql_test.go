//go:build duckdb

package main

import (
	"strings"
	"testing"
)

// TestSQLREADME runs the README's commands (see TestREADME) with the
// build with DuckDB: its sql commands must succeed.
func TestSQLREADME(t *testing.T) {
	t.Parallel()
	runREADME(t, sqlBinary(t))
}

// TestSQLVersion: the build with DuckDB says it has SQL (see TestVersion).
func TestSQLVersion(t *testing.T) {
	t.Parallel()
	checkVersion(t, sqlBinary(t), true)
}

// TestSQLViewPrefix: --view NAME=ID takes a unique prefix of a storage_id,
// as every ID argument does; an ambiguous one is a usage error.
func TestSQLViewPrefix(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.bin = sqlBinary(t)
	id := e.demoObject(100)
	q := "SELECT count(*), sum(amount) FROM orders"
	full := e.ok("sql", "--csv", "--view", "orders="+id, q)
	if r := e.ok("sql", "--csv", "--view", "orders="+id[:10], q); r.stdout != full.stdout || !strings.Contains(r.stdout, "100,") {
		t.Errorf("--view with a prefix:\n%s\nwith the storage_id:\n%s", r.stdout, full.stdout)
	}
	plantObject(t, e.store, id[:9]+strings.Repeat("0", 55))
	e.fails(exitUsage, []string{"--view orders", "ambiguous", id}, "sql", "--view", "orders="+id[:9], q)
}
