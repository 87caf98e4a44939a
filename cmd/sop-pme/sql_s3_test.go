//go:build duckdb

package main

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestSQLS3: sql over a table whose objects are in an s3:// store, through
// its view and sop_scan; a byte flipped in the server's copy fails the
// query with exit 4, printing no row. The secret is never printed.
func TestSQLS3(t *testing.T) {
	t.Parallel()
	srv := startS3(t)
	e := s3Env(t, srv)
	e.bin = sqlBinary(t)
	dir := t.TempDir()
	var files []string
	for i := range 3 {
		files = append(files, writeText(t, dir, fmt.Sprintf("f%d.csv", i), fmt.Sprintf("id,v\n%d,x%d\n%d,y%d\n", 2*i, i, 2*i+1, i)))
	}
	res := e.importTable("orders", files)
	r := e.ok("sql", "--csv", "SELECT count(*) AS n, sum(id) AS s, min(v) AS m FROM orders")
	noSecret(t, r)
	if want := "n,s,m\n6,15,x0\n"; r.stdout != want {
		t.Errorf("sql over the view orders:\n%s\nwant\n%s", r.stdout, want)
	}
	r = e.ok("sql", "--csv", fmt.Sprintf("SELECT count(*) AS n FROM sop_scan('%s')", res[1].StorageID))
	if r.stdout != "n\n2\n" {
		t.Errorf("sop_scan of one object of the table:\n%s", r.stdout)
	}
	p := srv.path(res[2].StorageID + ".data")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[10] ^= 0x40
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	r = e.fails(exitVerify, []string{res[2].StorageID}, "sql", "--csv", "SELECT sum(id) FROM orders")
	noSecret(t, r)
	if strings.Contains(r.stdout, ",") {
		t.Errorf("rows printed after a verification failure:\n%s", r.stdout)
	}
}
