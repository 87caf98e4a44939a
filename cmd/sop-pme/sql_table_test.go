//go:build duckdb

package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestSQLTables: every table of the catalog is a view of its name with no
// --view, read at its current schema by field ID; sop_scan('NAME') reads
// it too, and an object's storage_id still names the object.
func TestSQLTables(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.bin = sqlBinary(t)
	dir := t.TempDir()
	var files []string
	for i := range 3 {
		files = append(files, writeText(t, dir, fmt.Sprintf("f%d.csv", i), fmt.Sprintf("id,v\n%d,x%d\n%d,y%d\n", 2*i, i, 2*i+1, i)))
	}
	res := e.importTable("orders", files)
	e.ok("table", "rename-column", "orders", "v", "label")
	r := e.ok("sql", "--csv", "SELECT count(*) AS n, sum(id) AS s, min(label) AS m FROM orders")
	if want := "n,s,m\n6,15,x0\n"; r.stdout != want {
		t.Errorf("sql over the view orders:\n%s\nwant\n%s", r.stdout, want)
	}
	r = e.ok("sql", "--csv", "SELECT count(*) AS n FROM sop_scan('orders')")
	if r.stdout != "n\n6\n" {
		t.Errorf("sop_scan('orders'):\n%s", r.stdout)
	}
	r = e.ok("sql", "--csv", fmt.Sprintf("SELECT count(*) AS n FROM sop_scan('%s')", res[0].StorageID))
	if r.stdout != "n\n2\n" {
		t.Errorf("sop_scan of one object of the table:\n%s", r.stdout)
	}
	damage(t, e.store, res[2].StorageID, 10)
	r = e.fails(exitVerify, []string{res[2].StorageID}, "sql", "--csv", "SELECT sum(id) FROM orders")
	if strings.Contains(r.stdout, ",") {
		t.Errorf("rows printed after a verification failure:\n%s", r.stdout)
	}
}
