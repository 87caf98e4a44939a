package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sovm/sop-pme/blobs/s3/s3test"
)

// The S3 tests run the command against versitygw on 127.0.0.1 (a posix
// backend in a temporary directory), as blobs/s3's tests do.
const (
	s3TestAccess = "sop-pme-cli-access"
	s3TestSecret = "sop-pme-CLI-SECRET-never-printed-Kq72"
	s3TestBucket = "sop-bucket"
	s3TestPrefix = "objs/cli"
)

// An s3Server is s3test's versitygw (the one blobs/s3's tests run), with
// the bucket s3TestBucket.
type s3Server struct {
	*s3test.Server
	dir      string // the posix root; the bucket is dir/s3TestBucket
	endpoint string
}

func startS3(t testing.TB) *s3Server {
	t.Helper()
	s := s3test.Start(t, s3TestAccess, s3TestSecret, s3TestBucket)
	return &s3Server{Server: s, dir: s.Dir, endpoint: s.Endpoint}
}

// url is the store URL of the bucket and prefix, with extra parameters.
func (s *s3Server) url(extra ...string) string {
	u := "s3://" + s3TestBucket + "/" + s3TestPrefix + "?endpoint=" + s.endpoint + "&region=us-east-1&use_path_style=true"
	for _, p := range extra {
		u += "&" + p
	}
	return u
}

// path returns the file of versitygw's posix backend that holds key name
// (under the prefix).
func (s *s3Server) path(name string) string {
	return filepath.Join(s.dir, s3TestBucket, filepath.FromSlash(s3TestPrefix), name)
}

// s3Env is an env whose store is the server's bucket, with the server's
// credentials in the environment. Every command it runs is checked not to
// print the secret.
func s3Env(t *testing.T, srv *s3Server) *env {
	e := newEnv(t)
	e.store = srv.url()
	e.vars = append(e.vars, "AWS_ACCESS_KEY_ID="+s3TestAccess, "AWS_SECRET_ACCESS_KEY="+s3TestSecret, "AWS_EC2_METADATA_DISABLED=true")
	return e
}

// noSecret fails the test if r printed the secret.
func noSecret(t *testing.T, r result) {
	t.Helper()
	if strings.Contains(r.stdout+r.stderr, s3TestSecret) {
		t.Errorf("the secret was printed:\n%s", r)
	}
}

// TestS3Store: import a CSV and a Parquet file into an s3:// store, ls,
// export (equal to the input), verify and check; a flipped byte in the
// server's copy makes verify exit 4 and export fail; rm removes the object
// and its DEK. The KEK and keyring stay in the user configuration
// directory; the bucket holds only .data and .obao4 files. The secret is
// never printed.
func TestS3Store(t *testing.T) {
	t.Parallel()
	srv := startS3(t)
	e := s3Env(t, srv)
	dir := t.TempDir()
	var outputs []result
	ok := func(args ...string) result {
		t.Helper()
		r := e.ok(args...)
		outputs = append(outputs, r)
		return r
	}

	csvText := "id,name\n1,ann\n2,bob\n3,cy\n"
	csvIn := writeText(t, dir, "a.csv", csvText)
	c := e.importJSON(csvIn, "--assign-field-ids", "-q")
	p := tableParquet(t, dir, "b.parquet", []int64{4, 5}, []int32{40, 50}, []string{"d", "e"})
	pq := e.importJSON(p, "-q")
	if pq.Path != pathSealed {
		t.Errorf("the Parquet file was %s (%s), want sealed", pq.Path, pq.ReencodeReason)
	}

	// The keys are on this machine, the objects in the bucket.
	for _, f := range []string{e.kekPath(), e.ringPath()} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("the default KEK and keyring: %v", err)
		}
	}
	var inBucket []string
	filepath.Walk(filepath.Join(srv.dir, s3TestBucket), func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && !strings.Contains(p, string(filepath.Separator)+".") {
			inBucket = append(inBucket, strings.TrimPrefix(p, srv.path("")+string(filepath.Separator)))
		}
		return nil
	})
	slices.Sort(inBucket)
	want := []string{c.StorageID + ".data", c.StorageID + ".obao4", pq.StorageID + ".data", pq.StorageID + ".obao4"}
	slices.Sort(want)
	if !slices.Equal(inBucket, want) {
		t.Errorf("the bucket holds %q, want %q", inBucket, want)
	}

	all := e.lsJSON()
	var listed []string
	for _, o := range all.Objects {
		listed = append(listed, o.StorageID)
		if o.DEK == nil || !*o.DEK {
			t.Errorf("ls: %s without its DEK", o.StorageID)
		}
	}
	slices.Sort(listed)
	if wantIDs := slices.Sorted(slices.Values([]string{c.StorageID, pq.StorageID})); !slices.Equal(listed, wantIDs) {
		t.Errorf("ls lists %q, want %q", listed, wantIDs)
	}
	ok("ls")

	if r := ok("export", c.StorageID, "--format", "csv"); r.stdout != csvText {
		t.Errorf("export of the CSV object:\n%s\nwant\n%s", r.stdout, csvText)
	}
	// The Parquet object exports as the same file imported into a
	// directory store does.
	d := newEnv(t)
	dpq := d.importJSON(p, "-q")
	if r, dr := ok("export", pq.StorageID, "--format", "csv"), d.ok("export", dpq.StorageID, "--format", "csv"); r.stdout != dr.stdout || !strings.Contains(r.stdout, "d") {
		t.Errorf("export of the Parquet object from s3:\n%s\nfrom a directory:\n%s", r.stdout, dr.stdout)
	}
	// A prefix of a storage_id resolves by listing the bucket.
	ok("export", c.StorageID[:12], "--format", "csv", "-o", filepath.Join(dir, "out.csv"))
	if b, _ := os.ReadFile(filepath.Join(dir, "out.csv")); string(b) != csvText {
		t.Errorf("export -o by prefix: %q", b)
	}

	ok("verify", "--all")
	ok("check", c.StorageID, pq.StorageID)

	// A byte flipped in the server's copy.
	b, err := os.ReadFile(srv.path(pq.StorageID + ".data"))
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x40
	if err := os.WriteFile(srv.path(pq.StorageID+".data"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	outputs = append(outputs, e.fails(exitVerify, []string{pq.StorageID}, "verify", pq.StorageID))
	r := e.sop("export", pq.StorageID, "--format", "csv")
	outputs = append(outputs, r)
	if r.code == 0 {
		t.Errorf("export of the damaged object succeeded:\n%s", r)
	}
	ok("verify", c.StorageID)

	// rm: the DEK, then the object.
	ok("rm", "--yes", pq.StorageID)
	if held := e.ringHas(pq.StorageID, c.StorageID); held[0] || !held[1] {
		t.Errorf("after rm, the keyring holds %v of [removed, kept]", held)
	}
	if _, err := os.Stat(srv.path(pq.StorageID + ".data")); !os.IsNotExist(err) {
		t.Errorf("after rm, the object's data: %v", err)
	}
	if all := e.lsJSON(); len(all.Objects) != 1 || all.Objects[0].StorageID != c.StorageID {
		t.Errorf("ls after rm: %+v", all.Objects)
	}
	outputs = append(outputs, e.fails(exitNotFound, []string{pq.StorageID}, "rm", "--yes", pq.StorageID))

	for _, r := range outputs {
		noSecret(t, r)
	}
}

// TestS3Table: a table whose objects are in an s3:// store: import --table,
// ls NAME, export NAME, verify NAME, rm NAME; the catalog stays in the
// keyring, on this machine.
func TestS3Table(t *testing.T) {
	t.Parallel()
	srv := startS3(t)
	e := s3Env(t, srv)
	dir := t.TempDir()
	a := writeText(t, dir, "a.csv", "id,n,name,junk\n1,10,a,x\n2,20,b,y\n")
	p := tableParquet(t, dir, "c.parquet", []int64{3, 4}, []int32{30, 40}, []string{"c", "d"})
	res := e.importTable("orders", []string{a, p})
	if res[1].Path != pathSealed {
		t.Errorf("the Parquet file was %s (%s), want sealed", res[1].Path, res[1].ReencodeReason)
	}
	objs := e.tableObjects("orders")
	if len(objs) != 2 || objs[0].StorageID != res[0].StorageID || objs[1].StorageID != res[1].StorageID {
		t.Errorf("ls orders: %+v", objs)
	}
	var outputs []result
	r := e.ok("export", "orders", "--format", "csv")
	outputs = append(outputs, r)
	if want := "id,n,name,junk\n1,10,a,x\n2,20,b,y\n3,30,c,zz\n4,40,d,zz\n"; r.stdout != want {
		t.Errorf("export orders:\n%s\nwant\n%s", r.stdout, want)
	}
	outputs = append(outputs, e.ok("verify", "orders"))
	outputs = append(outputs, e.ok("rm", "--yes", "orders"))
	for _, id := range []string{res[0].StorageID, res[1].StorageID} {
		if _, err := os.Stat(srv.path(id + ".data")); !os.IsNotExist(err) {
			t.Errorf("after rm orders, %s: %v", id, err)
		}
	}
	if held := e.ringHas(res[0].StorageID, res[1].StorageID); held[0] || held[1] {
		t.Errorf("after rm orders, the keyring holds DEKs: %v", held)
	}
	outputs = append(outputs, e.fails(exitNotFound, []string{"orders"}, "ls", "orders"))
	for _, r := range outputs {
		noSecret(t, r)
	}
}

// TestS3StoreURL: --store and SOP_PME_STORE take the URL; a URL with an
// unknown parameter, credentials in it or another scheme is a usage error
// (exit 2), a missing bucket is not found (exit 3), and neither prints the
// secret; demo and migrate refuse a URL.
func TestS3StoreURL(t *testing.T) {
	t.Parallel()
	srv := startS3(t)
	e := s3Env(t, srv)
	dir := t.TempDir()
	res := e.importJSON(writeText(t, dir, "a.csv", "v\n1\n"), "--assign-field-ids", "-q")

	// --store, with no SOP_PME_STORE.
	r := e.run(nil, "ls", "--store", srv.url())
	if r.code != 0 || !strings.Contains(r.stdout, res.StorageID) {
		t.Errorf("ls --store URL:\n%s", r)
	}
	noSecret(t, r)
	// whole_outboard (s3.WithWholeOutboard) is taken, and checked.
	r = e.run(nil, "verify", "--store", srv.url("whole_outboard=1048576"), res.StorageID)
	if r.code != 0 {
		t.Errorf("verify --store URL&whole_outboard=1048576:\n%s", r)
	}

	for _, c := range []struct {
		url  string
		code int
		want []string
	}{
		{srv.url("bogus=1"), exitUsage, []string{`unknown parameter "bogus"`, "s3://" + s3TestBucket + "/" + s3TestPrefix}},
		{srv.url("region=eu-west-1"), exitUsage, []string{"region", "2 times"}},
		{srv.url("whole_outboard=4MiB"), exitUsage, []string{"whole_outboard", "number of bytes"}},
		{"s3://" + s3TestAccess + ":" + s3TestSecret + "@" + s3TestBucket + "/p?endpoint=" + srv.endpoint, exitUsage, []string{"credentials in a store URL are refused", "AWS_SECRET_ACCESS_KEY"}},
		{"gs://bucket/p", exitUsage, []string{`scheme "gs"`}},
		{"s3:///p?endpoint=" + srv.endpoint, exitUsage, []string{"no bucket"}},
		{"s3://no-such-bucket/p?endpoint=" + srv.endpoint + "&region=us-east-1&use_path_style=true", exitNotFound, []string{"s3://no-such-bucket/p", "no such bucket"}},
	} {
		for _, args := range [][]string{{"ls"}, {"import", "-q", "--assign-field-ids", filepath.Join(dir, "a.csv")}, {"verify", "--all"}} {
			r := e.run([]string{"SOP_PME_STORE=" + c.url}, args...)
			checkFailure(t, r, c.code, c.want, args)
			noSecret(t, r)
			if strings.Contains(r.stderr, s3TestAccess) {
				t.Errorf("the access key was printed:\n%s", r)
			}
		}
	}
	for _, args := range [][]string{{"demo"}, {"migrate"}} {
		r := e.run([]string{"SOP_PME_STORE=" + srv.url()}, args...)
		checkFailure(t, r, exitUsage, []string{"directory store"}, args)
	}
}
