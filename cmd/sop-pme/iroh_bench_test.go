//go:build iroh

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/keyring"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
)

// The figures of issue 19, by make bench-iroh-cli (not part of make test):
// two nodes on 127.0.0.1, each command a process of the iroh build, every
// file in the benchmark's temporary directory.
//
//   BenchmarkIrohProjection: a one-column projection (export --fields id)
//   of a ~100 MB object (SOP_PME_BENCH_MB) from a serving node, against the
//   same projection from the local store: time, and bytes received from the
//   node against the bytes the local read fetched from its store and
//   verified (BAO: the groups read and their proofs; at most 1.1 times),
//   and against the bytes it released (the ranges asked for).
//   BenchmarkIrohFetch: sop-pme fetch of a whole 1 GiB object
//   (SOP_PME_BENCH_FETCH_MB) against cp of its file.

// benchNode is a user of the benchmark: a configuration directory and a
// store of its own.
type benchNode struct {
	b     *testing.B
	bin   string
	vars  []string
	store string
}

func newBenchNode(b *testing.B, bin string) *benchNode {
	root := b.TempDir()
	return &benchNode{b: b, bin: bin, store: filepath.Join(root, "store"),
		vars: []string{"XDG_CONFIG_HOME=" + filepath.Join(root, "config"), "HOME=" + filepath.Join(root, "home"), "PATH=" + os.Getenv("PATH")}}
}

// run runs the command to completion, failing the benchmark unless it
// exits 0, and returns its stdout, stderr and wall time.
func (n *benchNode) run(args ...string) (string, string, time.Duration) {
	n.b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, n.bin, args...)
	cmd.Env = append(append([]string{}, n.vars...), "SOP_PME_STORE="+n.store)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	el := time.Since(start)
	if err != nil {
		n.b.Fatalf("sop-pme %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), stderr.String(), el
}

// serve starts sop-pme serve of the node's store and returns its ticket;
// the benchmark's cleanup stops it.
func (n *benchNode) serve(irohDir string) string {
	n.b.Helper()
	cmd := exec.Command(n.bin, "serve", "--iroh-dir", irohDir, "--rescan", "0")
	cmd.Env = append(append([]string{}, n.vars...), "SOP_PME_STORE="+n.store)
	out, err := cmd.StdoutPipe()
	if err != nil {
		n.b.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		n.b.Fatal(err)
	}
	n.b.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
		}
	})
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Scan()
		line <- sc.Text()
		for sc.Scan() {
		}
	}()
	select {
	case t := <-line:
		if !strings.HasPrefix(t, "endpoint") {
			n.b.Fatalf("serve printed %q\n%s", t, stderr.String())
		}
		return t
	case <-time.After(10 * time.Minute):
		n.b.Fatalf("serve printed no ticket\n%s", stderr.String())
	}
	return ""
}

func benchMB(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// projCSV writes a CSV of about mb megabytes: an int64 id and four other
// columns, two of them random hex strings, so that the object is about as
// large as the CSV and the id column a small part of it.
func projCSV(b *testing.B, path string, mb int) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	r := rand.New(rand.NewChaCha8([32]byte{19}))
	fmt.Fprintln(w, "id,qty,price,name,comment")
	for i, total := 0, 0; total < mb<<20; i++ {
		n, _ := fmt.Fprintf(w, "%d,%d,%.2f,%016x%016x,%016x%016x%08x\n", i, r.IntN(50), r.Float64()*1e5,
			r.Uint64(), r.Uint64(), r.Uint64(), r.Uint64(), r.Uint32())
		total += n
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}

var (
	receivedRe = regexp.MustCompile(`(\d+) bytes received from the node`)
)

func summaryBytes(b *testing.B, re *regexp.Regexp, s string) float64 {
	m := re.FindStringSubmatch(s)
	if m == nil {
		b.Fatalf("no %s in %q", re, s)
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

func BenchmarkIrohProjection(b *testing.B) {
	bin := irohBinary(b)
	a, r := newBenchNode(b, bin), newBenchNode(b, bin)
	csv := filepath.Join(b.TempDir(), "t.csv")
	// The random hex compresses to about half: a CSV of twice the size.
	projCSV(b, csv, 2*benchMB("SOP_PME_BENCH_MB", 100))
	out, _, el := a.run("import", "--json", "-q", "--assign-field-ids", csv)
	var res importResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		b.Fatal(err)
	}
	b.Logf("object %s: %d bytes, %d rows, %d row groups (import %v)", res.StorageID, res.Size, res.Rows, res.RowGroups, el.Round(time.Millisecond))
	os.Remove(csv)
	for _, p := range []string{"kek", "keyring"} {
		data, err := os.ReadFile(filepath.Join(a.vars[0][len("XDG_CONFIG_HOME="):], "sop-pme", p))
		if err != nil {
			b.Fatal(err)
		}
		dst := filepath.Join(r.vars[0][len("XDG_CONFIG_HOME="):], "sop-pme", p)
		os.MkdirAll(filepath.Dir(dst), 0o700)
		if err := os.WriteFile(dst, data, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	ticket := a.serve(filepath.Join(b.TempDir(), "iroh"))
	r.store = "iroh://" + ticket
	dir := b.TempDir()
	metrics := map[string]float64{} // reported at the end: ResetTimer drops them
	// Two projections: id, an int64 column of small chunks (about 126 KB a
	// row group, where rounding out to 16 KiB groups costs most), and name,
	// a column of large ones.
	for _, col := range []string{"id", "name"} {
		// The local read's exact counts, through the library: the BAO
		// bytes it fetched from the store and verified, and the object
		// bytes it released.
		local := localProjection(b, a, res.StorageID, col)
		var tl, tr time.Duration
		var received float64
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			_, el, d := a.run("export", res.StorageID, "--fields", col, "--format", "csv", "-o", filepath.Join(dir, "local.csv"))
			tl += d
			_, er, d := r.run("export", res.StorageID, "--fields", col, "--format", "csv", "-o", filepath.Join(dir, "remote.csv"))
			tr += d
			received = summaryBytes(b, receivedRe, er)
			if i == 0 {
				b.Logf("local:  %s", strings.TrimSpace(el))
				b.Logf("remote: %s", strings.TrimSpace(er))
			}
		}
		b.StopTimer()
		x, _ := os.ReadFile(filepath.Join(dir, "local.csv"))
		y, _ := os.ReadFile(filepath.Join(dir, "remote.csv"))
		if len(x) == 0 || !bytes.Equal(x, y) {
			b.Fatalf("the projections of %s differ", col)
		}
		b.Logf("%s: object %d bytes; local read fetched (BAO, verified) %d bytes and released %d; remote received %d bytes = %.4f x local fetched, %.4f x released; time local %.3f s, remote %.3f s (%.2f x)",
			col, res.Size, local.BytesFetched, local.BytesVerified, int64(received),
			received/float64(local.BytesFetched), received/float64(local.BytesVerified),
			tl.Seconds()/float64(b.N), tr.Seconds()/float64(b.N), tr.Seconds()/tl.Seconds())
		metrics[col+"-received/local-fetched"] = received / float64(local.BytesFetched)
		metrics[col+"-received/released"] = received / float64(local.BytesVerified)
		metrics[col+"-remote/local-time"] = tr.Seconds() / tl.Seconds()
		if received > 1.1*float64(local.BytesFetched) {
			b.Errorf("%s: received %.0f bytes for a projection whose local read fetched and verified %d: more than 1.1 times", col, received, local.BytesFetched)
		}
	}
	for k, v := range metrics {
		b.ReportMetric(v, k)
	}
}

// localProjection reads column col of object id from n's store through the
// library (the reader over the directory store, with n's KEK and keyring)
// and returns the reader's counts.
func localProjection(b *testing.B, n *benchNode, id, col string) reader.Stats {
	ctx := context.Background()
	conf := filepath.Join(n.vars[0][len("XDG_CONFIG_HOME="):], "sop-pme")
	kek, err := keyring.LoadKEKFile(filepath.Join(conf, "kek"))
	if err != nil {
		b.Fatal(err)
	}
	ring, err := keyring.Open(ctx, filepath.Join(conf, "keyring"), kek, keyring.WithReadOnly())
	if err != nil {
		b.Fatal(err)
	}
	d, err := blobs.OpenDir(n.store, blobs.ReadOnly())
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	sid, err := storageid.Parse(id)
	if err != nil {
		b.Fatal(err)
	}
	r, err := reader.Open(ctx, d, sid, ring)
	if err != nil {
		b.Fatal(err)
	}
	ids, err := fieldIDs(r.Schema(), col)
	if err != nil {
		b.Fatal(err)
	}
	rr, err := r.Scan(ctx, reader.WithFields(ids...))
	if err != nil {
		b.Fatal(err)
	}
	for rr.Next() {
	}
	if err := rr.Err(); err != nil {
		b.Fatal(err)
	}
	rr.Release()
	return r.Stats()
}

func BenchmarkIrohFetch(b *testing.B) {
	bin := irohBinary(b)
	a, r := newBenchNode(b, bin), newBenchNode(b, bin)
	size := int64(benchMB("SOP_PME_BENCH_FETCH_MB", 1024)) << 20
	// Any blob is an object to serve and fetch: random bytes, committed
	// into a directory store.
	d, err := blobs.CreateDir(a.store)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	p, err := d.Create(ctx)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewChaCha8([32]byte{91}))
	buf := make([]byte, 4<<20)
	for left := size; left > 0; left -= int64(len(buf)) {
		k := min(int64(len(buf)), left)
		for i := 0; i+8 <= int(k); i += 8 {
			v := rng.Uint64()
			buf[i], buf[i+1], buf[i+2], buf[i+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
			buf[i+4], buf[i+5], buf[i+6], buf[i+7] = byte(v>>32), byte(v>>40), byte(v>>48), byte(v>>56)
		}
		if _, err := p.Write(buf[:k]); err != nil {
			b.Fatal(err)
		}
	}
	id, err := p.Commit(ctx)
	if err != nil {
		b.Fatal(err)
	}
	d.Close()
	start := time.Now()
	ticket := a.serve(filepath.Join(b.TempDir(), "iroh"))
	b.Logf("object %s of %d bytes; serve ready in %v (copied into its iroh store)", id, size, time.Since(start).Round(time.Millisecond))
	src := filepath.Join(a.store, id.String()+".data")
	var tf, tc, ts time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		_, er, el := r.run("fetch", id.String(), "--from", ticket, "--store", filepath.Join(dir, "store"), "--cache", filepath.Join(dir, "cache"))
		tf += el
		if i == 0 {
			b.Logf("fetch: %s", strings.TrimSpace(er))
		}
		// cp, and cp then fsync of the copy (the store's commit syncs
		// the object before it publishes it).
		start := time.Now()
		if out, err := exec.Command("cp", src, filepath.Join(dir, "copy")).CombinedOutput(); err != nil {
			b.Fatalf("cp: %v\n%s", err, out)
		}
		tc += time.Since(start)
		if out, err := exec.Command("sync", filepath.Join(dir, "copy")).CombinedOutput(); err != nil {
			b.Fatalf("sync: %v\n%s", err, out)
		}
		ts += time.Since(start)
		os.RemoveAll(dir) // room for the next iteration
	}
	b.StopTimer()
	mbs := float64(size) / 1e6 * float64(b.N)
	b.Logf("%d bytes: fetch %.1f MB/s, cp %.1f MB/s, cp+fsync %.1f MB/s; fetch takes %.2f x cp's time, %.2f x cp+fsync's",
		size, mbs/tf.Seconds(), mbs/tc.Seconds(), mbs/ts.Seconds(), tf.Seconds()/tc.Seconds(), tf.Seconds()/ts.Seconds())
	b.ReportMetric(float64(size)/1e6, "object-MB")
	b.ReportMetric(mbs/tf.Seconds(), "fetch-MB/s")
	b.ReportMetric(mbs/tc.Seconds(), "cp-MB/s")
	b.ReportMetric(mbs/ts.Seconds(), "cp+fsync-MB/s")
	b.ReportMetric(tf.Seconds()/tc.Seconds(), "fetch/cp-time")
	b.ReportMetric(tf.Seconds()/ts.Seconds(), "fetch/cp+fsync-time")
}
