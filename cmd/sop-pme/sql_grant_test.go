//go:build duckdb

package main

import (
	"fmt"
	"path/filepath"
	"testing"
)

// TestSQLGrant: a node that accepts a grant of a table queries it with
// sql, as the view of its name and through sop_scan('NAME'), with its own
// KEK and keyring, as the node that granted it does.
func TestSQLGrant(t *testing.T) {
	t.Parallel()
	a, b := newEnv(t), newEnv(t)
	a.bin, b.bin = sqlBinary(t), sqlBinary(t)
	b.store = a.store
	dir := t.TempDir()
	var files []string
	for i := range 2 {
		files = append(files, writeText(t, dir, fmt.Sprintf("f%d.csv", i), fmt.Sprintf("id,v\n%d,x%d\n%d,y%d\n", 2*i, i, 2*i+1, i)))
	}
	a.importTable("orders", files)
	g := filepath.Join(dir, "g.age")
	a.ok("keys", "grant", "orders", "--to", b.grantIdentity(), "-o", g)
	b.ok("keys", "accept", g)
	const q = "SELECT count(*) AS n, sum(id) AS s, min(v) AS m FROM sop_scan('orders')"
	want := a.ok("sql", "--csv", q).stdout
	if want != "n,s,m\n4,6,x0\n" {
		t.Fatalf("A's sql: %q", want)
	}
	if got := b.ok("sql", "--csv", q).stdout; got != want {
		t.Errorf("B's sql over sop_scan('orders'): %q, want %q", got, want)
	}
	if got := b.ok("sql", "--csv", "SELECT count(*) AS n, sum(id) AS s, min(v) AS m FROM orders").stdout; got != want {
		t.Errorf("B's sql over the view orders: %q, want %q", got, want)
	}
}
