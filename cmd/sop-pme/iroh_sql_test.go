//go:build iroh && duckdb

package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// irohSQLBinary has both iroh and DuckDB.
var irohSQLBinary = builder("sop-pme-iroh-sql", "iroh duckdb")

// TestIrohSQL: node B, with a grant of the table only, runs sop-pme sql
// over node A's table through --store iroh://TICKET and gets A's answer; with A's copy of one object
// damaged, the query fails with exit 4 and prints no row.
func TestIrohSQL(t *testing.T) {
	t.Parallel()
	a, b := newEnv(t), newEnv(t)
	a.bin, b.bin = irohSQLBinary(t), irohSQLBinary(t)
	dir := t.TempDir()
	res := a.importTable("orders", []string{bigCSV(t, dir, "a.csv", 0, 3000), bigCSV(t, dir, "b.csv", 3000, 3000)})
	grantTable(t, a, b, "orders")
	irohA := filepath.Join(t.TempDir(), "iroh-a")
	srv := serve(t, a, irohA, "--rescan", "0")
	b.store = "iroh://" + srv.ticket

	const q = "SELECT count(*) AS n, sum(id) AS s, max(v) AS m FROM orders"
	want := a.ok("sql", "--csv", q).stdout
	if !strings.HasPrefix(want, "n,s,m\n6000,17997000,value-") {
		t.Fatalf("A's own answer: %q", want)
	}
	if got := b.ok("sql", "--csv", q).stdout; got != want {
		t.Fatalf("B's answer over iroh:\n%s\nwant\n%s", got, want)
	}

	srv.stop()
	damageIroh(t, irohA, res[1].StorageID)
	srv = serve(t, a, irohA, "--rescan", "0")
	b.store = "iroh://" + srv.ticket
	r := b.fails(exitVerify, []string{res[1].StorageID}, "sql", "--csv", q)
	if r.stdout != "" {
		t.Errorf("rows printed after a verification failure:\n%s", r.stdout)
	}
	// The undamaged object alone still answers.
	r = b.ok("sql", "--csv", "SELECT count(*) AS n FROM sop_scan('"+res[0].StorageID+"')")
	if r.stdout != "n\n3000\n" {
		t.Errorf("the undamaged object: %q", r.stdout)
	}
}
