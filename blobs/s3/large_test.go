package s3_test

import (
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/blobs/s3"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
	"github.com/sovm/sop-pme/writer"
)

// The large object of TestLargeProjection and BenchmarkLargeScan: about
// SOP_PME_LARGE_MB megabytes (1024 by default) of 8 columns, in row groups
// of the writer's default size.
const (
	largeEnv    = "SOP_PME_LARGE"    // set to 1 to run TestLargeProjection
	largeMBEnv  = "SOP_PME_LARGE_MB" // the object's size in MB
	largeBatch  = 1 << 14            // rows a batch the writer is given
	largeRowLen = 6*8 + 2*(4+16)     // bytes of a row, plain: 6 fixed, 2 strings of 16
	projField   = 1                  // the field ID of the projected column (int64 "a")
	smallMB     = 96                 // TestLargeProjection's size without SOP_PME_LARGE: an outboard of 384 KiB
)

// A proxy is a reverse proxy on 127.0.0.1 in front of versitygw that
// counts the requests and the response bytes, per key kind, that
// optionally delays every request, and that records the most requests in
// flight at once (from arrival until the response body is sent).
type proxy struct {
	url   string
	delay atomic.Int64 // nanoseconds slept before forwarding a request

	heads, dataGets, obGets, other atomic.Int64
	dataBytes, obBytes             atomic.Int64
	inFlight, maxInFlight          atomic.Int64
	dataInFlight, maxDataInFlight  atomic.Int64 // GETs of .data alone
}

func startProxy(tb testing.TB, endpoint string) *proxy {
	tb.Helper()
	target, err := url.Parse(endpoint)
	if err != nil {
		tb.Fatal(err)
	}
	p := &proxy{}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Host = r.In.Host // the SDK signed the proxy's host
	}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		track(&p.inFlight, &p.maxInFlight)
		defer p.inFlight.Add(-1)
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, ".data") {
			track(&p.dataInFlight, &p.maxDataInFlight)
			defer p.dataInFlight.Add(-1)
		}
		if d := p.delay.Load(); d > 0 {
			time.Sleep(time.Duration(d))
		}
		cw := &countingWriter{ResponseWriter: w}
		switch {
		case r.Method == http.MethodHead:
			p.heads.Add(1)
		case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, ".data"):
			p.dataGets.Add(1)
			cw.n = &p.dataBytes
		case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, ".obao4"):
			p.obGets.Add(1)
			cw.n = &p.obBytes
		default:
			p.other.Add(1)
		}
		rp.ServeHTTP(cw, r)
	}))
	tb.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}

// track adds one to n and raises max to n's new value if it is above.
func track(n, max *atomic.Int64) {
	v := n.Add(1)
	for m := max.Load(); v > m && !max.CompareAndSwap(m, v); m = max.Load() {
	}
}

// counts is a snapshot of a proxy's counters.
type counts struct {
	heads, dataGets, obGets, other int64
	dataBytes, obBytes             int64
}

func (p *proxy) counts() counts {
	return counts{p.heads.Load(), p.dataGets.Load(), p.obGets.Load(), p.other.Load(), p.dataBytes.Load(), p.obBytes.Load()}
}

func (c counts) sub(d counts) counts {
	return counts{c.heads - d.heads, c.dataGets - d.dataGets, c.obGets - d.obGets, c.other - d.other, c.dataBytes - d.dataBytes, c.obBytes - d.obBytes}
}

func (c counts) requests() int64 { return c.heads + c.dataGets + c.obGets + c.other }

type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (w *countingWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	if w.n != nil {
		w.n.Add(int64(n))
	}
	return n, err
}

func (w *countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// storeURL is the store URL of the server, through endpoint.
func storeURL(endpoint string) string {
	return "s3://" + testBucket + "/" + testPrefix + "?endpoint=" + endpoint + "&region=us-east-1&use_path_style=true"
}

// largeSchema is 8 columns: 3 int64, 3 float64, 2 strings, field IDs 1-8.
func largeSchema() *arrow.Schema {
	f := func(name string, t arrow.DataType, id int) arrow.Field {
		return arrow.Field{Name: name, Type: t, Metadata: fieldID(id)}
	}
	return arrow.NewSchema([]arrow.Field{
		f("a", arrow.PrimitiveTypes.Int64, 1), f("b", arrow.PrimitiveTypes.Int64, 2), f("c", arrow.PrimitiveTypes.Int64, 3),
		f("x", arrow.PrimitiveTypes.Float64, 4), f("y", arrow.PrimitiveTypes.Float64, 5), f("z", arrow.PrimitiveTypes.Float64, 6),
		f("s", arrow.BinaryTypes.String, 7), f("t", arrow.BinaryTypes.String, 8),
	}, nil)
}

// largeRows returns the rows of an object of about mb megabytes.
func largeRows(mb int) int64 { return int64(mb) << 20 / largeRowLen }

// writeLarge writes rows rows of random values (incompressible, stored
// uncompressed and without dictionaries, to keep the writer's work small)
// into st, a batch of largeBatch rows at a time: memory stays bounded.
func writeLarge(tb testing.TB, st blobs.Store, rows int64) writer.Object {
	tb.Helper()
	ctx := context.Background()
	schema := largeSchema()
	w, err := writer.New(ctx, st, schema, writer.WithCodec(writer.Uncompressed), writer.WithDictionary(false))
	if err != nil {
		tb.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	ints := make([]int64, largeBatch)
	floats := make([]float64, largeBatch)
	strs := make([]string, largeBatch)
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	var s [16]byte
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for done := int64(0); done < rows; {
		n := int(min(rows-done, largeBatch))
		for c := range 3 {
			for i := range n {
				ints[i] = int64(r.Uint64())
			}
			b.Field(c).(*array.Int64Builder).AppendValues(ints[:n], nil)
		}
		for c := 3; c < 6; c++ {
			for i := range n {
				floats[i] = r.NormFloat64()
			}
			b.Field(c).(*array.Float64Builder).AppendValues(floats[:n], nil)
		}
		for c := 6; c < 8; c++ {
			for i := range n {
				u, v := r.Uint64(), r.Uint64()
				for k := range 8 {
					s[k], s[8+k] = alphabet[u>>(6*k)&63], alphabet[v>>(6*k)&63]
				}
				strs[i] = string(s[:])
			}
			b.Field(c).(*array.StringBuilder).AppendValues(strs[:n], nil)
		}
		rec := b.NewRecordBatch()
		err := w.Write(rec)
		rec.Release()
		if err != nil {
			tb.Fatal(err)
		}
		done += int64(n)
	}
	obj, err := w.Close(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	return obj
}

// largeSetup is the large object in S3 (written directly to versitygw,
// read through a proxy) and the same object in a blobs.Dir.
type largeSetup struct {
	srv   *server
	proxy *proxy
	s3    *s3.Store // through the proxy
	dir   *blobs.Dir
	obj   writer.Object
	keys  keys
	rows  int64
}

func setupLarge(tb testing.TB) *largeSetup {
	tb.Helper()
	mb := 1024
	if v := os.Getenv(largeMBEnv); v != "" {
		var err error
		if mb, err = strconv.Atoi(v); err != nil || mb <= 0 {
			tb.Fatalf("%s=%q: not a positive number", largeMBEnv, v)
		}
	}
	srv := startServer(tb)
	direct := srv.open(tb, s3.WithSpoolDir(tb.TempDir()))
	rows := largeRows(mb)
	t0 := time.Now()
	cpu0 := cpuTime()
	obj := writeLarge(tb, direct, rows)
	tb.Logf("wrote %d rows, %d bytes (%.0f MB; %d unpadded) into S3 in %v (CPU %v)", rows, obj.Size, float64(obj.Size)/1e6,
		obj.UnpaddedSize, time.Since(t0).Round(time.Millisecond), (cpuTime() - cpu0).Round(time.Millisecond))

	// The same object, byte for byte, into a blobs.Dir: imported from
	// versitygw's file.
	dir, err := blobs.CreateDir(filepath.Join(tb.TempDir(), "store"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { dir.Close() })
	f, err := os.Open(srv.path(obj.StorageID.String() + ".data"))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	p, err := dir.Create(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := io.Copy(p, f); err != nil {
		tb.Fatal(err)
	}
	if id, err := p.Commit(context.Background()); err != nil || id != obj.StorageID {
		tb.Fatalf("import into Dir: %s, %v; want %s", id, err, obj.StorageID)
	}
	px := startProxy(tb, srv.endpoint)
	st, err := s3.Open(context.Background(), storeURL(px.url), creds())
	if err != nil {
		tb.Fatal(err)
	}
	return &largeSetup{srv: srv, proxy: px, s3: st, dir: dir, obj: obj, keys: keys{obj.StorageID: obj.DEK}, rows: rows}
}

// scanLarge opens the object from src and scans it (all columns, or
// field projField alone), checking the row count.
func scanLarge(ctx context.Context, tb testing.TB, src verify.Source, id storageid.ID, k keys, rows int64, project bool, opened ...func()) *reader.Reader {
	r, err := reader.Open(ctx, src, id, k)
	if err != nil {
		tb.Fatal(err)
	}
	for _, f := range opened {
		f()
	}
	var opts []reader.ScanOption
	if project {
		opts = append(opts, reader.WithFields(projField))
	}
	rr, err := r.Scan(ctx, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	defer rr.Release()
	var n int64
	for rr.Next() {
		n += rr.RecordBatch().NumRows()
	}
	if err := rr.Err(); err != nil || n != rows {
		tb.Fatalf("scan: %d rows, %v; want %d", n, err, rows)
	}
	return r
}

// cpuTime returns the user and system CPU time of this process so far
// (versitygw's is not in it).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestLargeProjection writes an object of about 1 GB (SOP_PME_LARGE_MB)
// into S3 and scans one of its 8 columns, counting at a proxy the requests
// and the bytes the server sends: the bytes of the data must be at most the
// column's chunks, the footer region and two groups a verified range; with
// the outboard's (never the 4 MiB outboard whole, only the runs of pairs
// each range needs that the Store has not kept), still at most two groups
// a range; the GETs of the data at most one a range, beside one HEAD, and
// those of the outboard at most 3 a range. With SOP_PME_LARGE=1 it writes
// the 1 GB object (a while); otherwise, make test included, an object of
// smallMB, whose outboard (over 256 KiB) is still fetched pair by pair, so
// that every bound is checked on every run and nothing is skipped.
func TestLargeProjection(t *testing.T) {
	if os.Getenv(largeEnv) != "1" && os.Getenv(largeMBEnv) == "" {
		t.Setenv(largeMBEnv, strconv.Itoa(smallMB))
	}
	ls := setupLarge(t)
	ctx := context.Background()
	before := ls.proxy.counts()
	var open counts
	r := scanLarge(ctx, t, ls.s3, ls.obj.StorageID, ls.keys, ls.rows, true, func() { open = ls.proxy.counts().sub(before) })
	c := ls.proxy.counts().sub(before)

	// What the projection needs, from the footer.
	locs, err := r.Locate(ctx, 0, r.Size())
	if err != nil {
		t.Fatal(err)
	}
	var chunks, footer, ranges int64
	for _, l := range locs {
		switch {
		case l.Part == reader.PartColumnChunk && l.FieldID == projField:
			chunks += l.Len
			ranges++
		case l.Part == reader.PartFooter:
			footer += l.Len
		}
	}
	rgs := int64(r.NumRowGroups())
	opens := int64(3) // Open: the tail group (size), the trailer, the footer region
	const G = verify.GroupSize
	obSize := int64(verify.OutboardSize(ls.obj.Size))
	t.Logf("object %d bytes, %d row groups, outboard %d bytes; column %d: %d chunks, %d bytes; footer region %d bytes",
		ls.obj.Size, rgs, obSize, projField, ranges, chunks, footer)
	t.Logf("projection: %d requests (%d HEAD, %d data GETs, %d outboard GETs, %d other), %d data bytes, %d outboard bytes, max %d in flight (%d data GETs)",
		c.requests(), c.heads, c.dataGets, c.obGets, c.other, c.dataBytes, c.obBytes, ls.proxy.maxInFlight.Load(), ls.proxy.maxDataInFlight.Load())
	t.Logf("of which reader.Open: %d requests (%d HEAD, %d data GETs, %d outboard GETs), %d data bytes, %d outboard bytes",
		open.requests(), open.heads, open.dataGets, open.obGets, open.dataBytes, open.obBytes)
	t.Logf("reader stats: %+v", r.Stats())

	// The same projection without a plan (as before Plan existed), for
	// the record; the bounds below are of the default. Each on a new Store, which has kept
	// no parent pairs yet.
	for _, v := range []struct {
		name string
		plan bool
	}{{"no plan", false}, {"plan (default)", true}} {
		restore := s3.SetPlan(v.plan, 8)
		fresh, err := s3.Open(ctx, storeURL(ls.proxy.url), creds())
		if err != nil {
			t.Fatal(err)
		}
		before := ls.proxy.counts()
		scanLarge(ctx, t, fresh, ls.obj.StorageID, ls.keys, ls.rows, true)
		g := ls.proxy.counts().sub(before)
		restore()
		t.Logf("%-20s: %d requests (%d HEAD, %d data GETs, %d outboard GETs), %d data bytes, %d outboard bytes, %+.2f%% against the bound",
			v.name, g.requests(), g.heads, g.dataGets, g.obGets, g.dataBytes, g.obBytes,
			100*(float64(g.dataBytes+g.obBytes)/float64(chunks+footer+2*verify.GroupSize*(ranges+3))-1))
	}
	// With WithWholeOutboard (the choice of requests over bytes): the
	// outboard whole in one GET, once, and one data GET a range, so at most
	// row groups + 3 requests in all; the data within its bound, and the
	// outboard's bytes the outboard's size.
	{
		// A run of 64 KiB or more would be streamed, not kept: the whole
		// outboard must be kept all the same (at 1 GB it is 4 MiB, past
		// the 1 MiB default; here it is 392 KiB).
		defer s3.SetOutboardFetch(256<<10, 4<<10, 64<<10)()
		fresh, err := s3.Open(ctx, storeURL(ls.proxy.url)+"&whole_outboard="+strconv.Itoa(s3.MaxWholeOutboard), creds())
		if err != nil {
			t.Fatal(err)
		}
		before := ls.proxy.counts()
		scanLarge(ctx, t, fresh, ls.obj.StorageID, ls.keys, ls.rows, true)
		g := ls.proxy.counts().sub(before)
		t.Logf("%-20s: %d requests (%d HEAD, %d data GETs, %d outboard GETs), %d data bytes, %d outboard bytes, %+.2f%% against the bound",
			"whole_outboard", g.requests(), g.heads, g.dataGets, g.obGets, g.dataBytes, g.obBytes,
			100*(float64(g.dataBytes+g.obBytes)/float64(chunks+footer+2*verify.GroupSize*(ranges+3))-1))
		if g.requests() > rgs+opens || g.obGets != 1 || g.obBytes != obSize {
			t.Errorf("whole_outboard: %d requests (%d outboard GETs, %d outboard bytes); want at most %d (row groups + 3), one GET of the %d-byte outboard",
				g.requests(), g.obGets, g.obBytes, rgs+opens, obSize)
		}
		if bound := chunks + footer + 2*verify.GroupSize*(ranges+opens); g.dataBytes > bound {
			t.Errorf("whole_outboard: data bytes %d > column chunks + footer + 2 groups a range = %d", g.dataBytes, bound)
		}
	}
	// The projection again on the first Store, which keeps the pairs on
	// the ranges' paths (slice.go's pairCache).
	{
		before := ls.proxy.counts()
		scanLarge(ctx, t, ls.s3, ls.obj.StorageID, ls.keys, ls.rows, true)
		g := ls.proxy.counts().sub(before)
		t.Logf("again, same Store: %d requests (%d outboard GETs), %d data bytes, %d outboard bytes",
			g.requests(), g.obGets, g.dataBytes, g.obBytes)
	}

	// The data: the chunks and the footer region, rounded out to groups.
	dataBound := chunks + footer + 2*G*(ranges+opens)
	if c.dataBytes > dataBound {
		t.Errorf("data bytes %d > column chunks + footer + 2 groups a range = %d", c.dataBytes, dataBound)
	}
	// The outboard: an outboard of at most 256 KiB is fetched whole, once
	// (slice.go's wholeOutboardMax); a larger one only in the runs of pairs
	// each range needs and the Store has not kept from earlier slices (the
	// pairs on the paths from the root: slice.go's pairCache), merged
	// through gaps of less than 4 KiB (obGapMax): the bytes stay within
	// the groups' rounding (with 16 KiB they did not, by 0.3 %: see the
	// log above).
	if obSize > 256<<10 {
		strict := chunks + footer + 2*G*(ranges+opens)
		total := c.dataBytes + c.obBytes
		t.Logf("data and outboard bytes %d, column chunks + footer + 2 groups a range = %d (%+.2f%%)",
			total, strict, 100*(float64(total)/float64(strict)-1))
		if total > strict {
			t.Errorf("data and outboard bytes %d > column chunks + footer + 2 groups a range = %d", total, strict)
		}
	} else if c.obBytes > obSize {
		t.Errorf("outboard bytes %d: the %d-byte outboard fetched more than once", c.obBytes, obSize)
	}
	// The size comes from the suffix GET of the last group (no HEAD).
	if c.dataGets > rgs+opens || c.heads > 0 || c.other > 0 {
		t.Errorf("%d data GETs, %d HEADs, %d other requests; want at most %d (row groups + 3), 0, 0", c.dataGets, c.heads, c.other, rgs+opens)
	}
	t.Logf("requests in all: %d, row groups + 3 = %d", c.requests(), rgs+opens)
	t.Logf("outboard GETs: %.2f a range", float64(c.obGets)/float64(rgs+opens))
	if c.obGets > 3*(rgs+opens) {
		t.Errorf("%d outboard GETs for %d ranges; want at most 3 a range", c.obGets, rgs+opens)
	}
}

// BenchmarkLargeScan scans an object of about 1 GB (SOP_PME_LARGE_MB; 8
// columns) from blobs.Dir, from S3 (versitygw on 127.0.0.1, through a
// counting proxy) and from S3 with 20 ms added to every request at the
// proxy, all columns and one, with the store's plan (Plan) and without it
// (-noplan: as before Plan, one data GET a worker at a time). MB/s is of the object's size for both
// scans; it reports the requests and bytes of a scan, the most requests
// in flight at once, and the CPU time of this process (not versitygw's).
// Like TestLargeProjection, it runs only with SOP_PME_LARGE=1.
func BenchmarkLargeScan(b *testing.B) {
	if os.Getenv(largeEnv) != "1" {
		b.Skipf("set %s=1 to write and scan a 1 GB object", largeEnv)
	}
	ls := setupLarge(b)
	ctx := context.Background()
	for _, src := range []string{"dir", "s3", "s3-noplan", "s3-20ms", "s3-20ms-noplan"} {
		for _, scan := range []string{"all", "col"} {
			b.Run(src+"/"+scan, func(b *testing.B) {
				var st verify.Source = ls.dir
				if src != "dir" {
					st = ls.s3
				}
				defer s3.SetPlan(!strings.HasSuffix(src, "-noplan"), 8)()
				if strings.HasPrefix(src, "s3-20ms") {
					ls.proxy.delay.Store(int64(20 * time.Millisecond))
					defer ls.proxy.delay.Store(0)
				}
				ls.proxy.maxInFlight.Store(0)
				ls.proxy.maxDataInFlight.Store(0)
				b.SetBytes(int64(ls.obj.Size))
				before, cpu0 := ls.proxy.counts(), cpuTime()
				for b.Loop() {
					scanLarge(ctx, b, st, ls.obj.StorageID, ls.keys, ls.rows, scan == "col")
				}
				b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
				if src != "dir" {
					c := ls.proxy.counts().sub(before)
					b.ReportMetric(float64(c.requests())/float64(b.N), "requests/op")
					b.ReportMetric(float64(c.dataBytes+c.obBytes)/float64(b.N), "fetched-B/op")
					b.ReportMetric(float64(ls.proxy.maxInFlight.Load()), "max-in-flight")
					b.ReportMetric(float64(ls.proxy.maxDataInFlight.Load()), "max-data-GETs-in-flight")
				}
			})
		}
	}
}
