package s3

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"lukechampine.com/blake3/guts"

	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
)

const pairSize = 64 // one parent's pair in the outboard, in bytes

// Variables for the tests (export_test.go).
var (
	// wholeOutboardMax is the largest outboard, in bytes, that Slice
	// fetches whole rather than only the parent pairs a slice needs,
	// unless WithWholeOutboard says otherwise (read by Open).
	wholeOutboardMax uint64 = 256 << 10

	// obGapMax is the largest gap, in bytes, between two runs of needed
	// parent pairs that one ranged GET reads through rather than making
	// two requests. 4 KiB: with the pairs on the ranges' paths kept
	// (pairCache), a one-column projection of a 1 GB object then makes
	// 2.4 outboard GETs a range and stays within 2 groups a range of data
	// and outboard bytes (bench/README.md, "S3: a 1 GB object").
	obGapMax uint64 = 4 << 10

	// obStreamMin is the smallest single outboard range, in bytes, that a
	// slice streams rather than reads into memory first.
	obStreamMin uint64 = 1 << 20
)

// Slice implements verify.Source. It learns the object's size (then
// remembers it): for a slice at or past 2^62, as verify.NewReader asks to
// prove the size, from the Content-Range of a suffix GET of the last
// group, whose bytes it then serves; otherwise from a HEAD. It computes the
// chunk groups the range selects and the parent pairs on their paths, and
// fetches, in parallel, the groups' bytes in one ranged GET of .data and
// the pairs from .obao4: the whole outboard if it is at most 256 KiB
// (or the limit [WithWholeOutboard] sets), else only the runs of pairs needed that the Store has not kept from earlier
// slices (one ranged GET a run, runs less than 4 KiB apart merged; see
// pairCache). A whole outboard that hashes up to the storage_id (every
// pair to the chaining value its parent holds, the root pair to the
// storage_id itself) is kept (8 MiB of outboards at most) and not fetched
// again: a scan then makes one request a slice. A slice a reader planned
// (see [Store.Plan]) takes its pairs from the plan and its data from the
// GET the plan sent ahead, when they are there. The slice is assembled by
// verify.ExtractSlice as the returned reader is read; the data is
// streamed, not held.
//
// Nothing fetched is trusted. Where the server contradicts itself (a GET
// whose stated total size is not the size HEAD gave, or a range it says
// lies beyond the end), the size is forgotten and the returned reader
// fails with io.ErrUnexpectedEOF, which verify reports as a truncated
// slice (verify.ErrVerify); the next slice asks for the size again (and a
// verify.Reader that proved the old size reports verify.ErrSize).
//
// It returns an error matching blobs.ErrNotFound if the store holds no
// .data for id, or holds it without its .obao4 (an import cut short
// between the two, or a deletion between them, seen by a reader: see
// [Store.List]).
func (s *Store) Slice(ctx context.Context, id storageid.ID, off, n uint64) (io.ReadCloser, error) {
	if n == 0 {
		return nil, errors.New("s3: empty slice range")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var (
		pre    io.ReadCloser // the data, opened by the GET that told the size
		prePos uint64        // where pre starts
	)
	size, known := s.knownSize(id)
	if !known {
		var err error
		if off >= suffixProbeMin {
			size, pre, prePos, err = s.sizeBySuffix(ctx, id)
		} else {
			size, err = s.Size(ctx, id)
		}
		if err != nil {
			return nil, err
		}
	}
	closePre := func() {
		if pre != nil {
			pre.Close()
			pre = nil
		}
	}
	if size > 1<<63-1 {
		closePre()
		return nil, fmt.Errorf("s3: slice of %s: stated size %d exceeds 2^63-1", id, size)
	}
	g0, g1 := selectGroups(size, off, n)
	obSize := verify.OutboardSize(size)
	p := s.plans.find(obKey{id, size})
	var (
		runs    []span
		cached  []byte    // a whole outboard already fetched and checked
		whole   bool      // the outboard is fetched whole: check it and keep it
		kept    []segment // pairs of a large outboard kept from earlier slices
		pairs   bool      // keep the pairs of a large outboard that chain to id
		planned bool      // the plan holds every pair needed
	)
	if obSize > 0 {
		if obSize <= s.wholeOb {
			if cached = s.outboards.get(id, size); cached == nil {
				runs, whole = []span{{0, obSize}}, true
			}
		} else {
			needed := neededPairs(size, g0, g1)
			if p != nil {
				segs, missing, ok := p.pairs(ctx, needed)
				if !ok {
					closePre()
					return nil, ctx.Err()
				}
				// The plan's pairs and those kept from earlier slices:
				// if they hold every pair needed, no outboard GET.
				if fetch, have := s.pairs.lookup(obKey{id, size}, missing, 0); len(fetch) == 0 {
					kept, planned = append(segs, have...), true
					sort.Slice(kept, func(i, j int) bool { return kept[i].off < kept[j].off })
				}
			}
			runs = coalesce(needed, obGapMax)
			if planned {
				runs = nil
			} else if !(len(runs) == 1 && runs[0].n >= obStreamMin) {
				// Only the pairs not kept from earlier slices (a run
				// to stream is fetched whole, none kept).
				runs, kept = s.pairs.lookup(obKey{id, size}, needed, obGapMax)
				pairs = true
			}
		}
	}

	// The outboard runs, each on its own goroutine, while this one opens
	// the data range.
	ob := &sparse{segs: make([]segment, len(runs))}
	var (
		wg      sync.WaitGroup
		obErr   error
		errOnce sync.Once
		stream  io.ReadCloser // the one large run, if streamed
	)
	gctx, cancel := context.WithCancel(ctx)
	// Kept pairs are served from memory, beside the fetched runs: then no
	// run is streamed; nor is a whole outboard, which is read to be kept.
	streamRun := !whole && len(runs) == 1 && runs[0].n >= obStreamMin && len(kept) == 0
	for i, r := range runs {
		wg.Go(func() {
			body, err := s.getRange(gctx, s.outboardKey(id), r.off, r.n, obSize)
			if err == nil && streamRun {
				stream = body
				return
			}
			var b []byte
			if err == nil {
				b, err = io.ReadAll(io.LimitReader(body, int64(r.n)))
				body.Close()
			}
			switch {
			case errors.Is(err, errBeyondEnd) || errors.Is(err, errSizeMismatch):
				// A short outboard: the slice will be short.
			case status(err) == http.StatusNotFound:
				errOnce.Do(func() { obErr = fmt.Errorf("%w: %s (its outboard is missing)", blobs.ErrNotFound, id) })
			case err != nil:
				errOnce.Do(func() { obErr = fmt.Errorf("s3: slice of %s: outboard: %w", id, err) })
			}
			ob.segs[i] = segment{off: r.off, b: b}
		})
	}

	var data io.ReadCloser = io.NopCloser(eofReader{})
	var dataErr error
	dataPos := g0 * verify.GroupSize
	if size > 0 {
		start := g0 * verify.GroupSize
		end := min(g1*verify.GroupSize, size)
		data = nil
		switch {
		case pre != nil && prePos <= start:
			data, dataPos, pre = pre, prePos, nil
		case p != nil:
			closePre()
			if pf := p.take(span{start, end - start}); pf != nil {
				select {
				case <-pf.done:
					if pf.err == nil {
						data = pf.body
					}
				case <-ctx.Done():
					go func() {
						<-pf.done
						if pf.body != nil {
							pf.body.Close()
						}
					}()
				}
			}
		}
		closePre()
		if data == nil {
			data, dataErr = s.getRange(gctx, s.dataKey(id), start, end-start, size)
		}
		switch {
		case errors.Is(dataErr, errBeyondEnd) || errors.Is(dataErr, errSizeMismatch):
			s.forget(id)
			data, dataErr = io.NopCloser(eofReader{}), nil
		case status(dataErr) == http.StatusNotFound:
			s.forget(id)
			dataErr = fmt.Errorf("%w: %s", blobs.ErrNotFound, id)
		case dataErr != nil:
			dataErr = fmt.Errorf("s3: slice of %s: data: %w", id, dataErr)
		}
		if dataErr != nil {
			cancel() // no need for the outboard
		}
	}
	wg.Wait()
	if dataErr == nil {
		dataErr = obErr
	}
	if dataErr != nil {
		cancel()
		if data != nil {
			data.Close()
		}
		if stream != nil {
			stream.Close()
		}
		return nil, dataErr
	}
	if whole && len(ob.segs[0].b) == int(obSize) && outboardMatches(id, size, ob.segs[0].b) {
		s.outboards.put(id, size, ob.segs[0].b)
	}
	if cached != nil {
		ob.segs = []segment{{0, cached}}
	}
	if planned {
		ob.segs = kept
		s.pairs.add(obKey{id, size}, chainedPairs(id, size, g0, g1, ob))
	}
	if pairs && stream == nil {
		if len(kept) > 0 {
			ob.segs = append(ob.segs, kept...)
			sort.Slice(ob.segs, func(i, j int) bool { return ob.segs[i].off < ob.segs[j].off })
		}
		s.pairs.add(obKey{id, size}, chainedPairs(id, size, g0, g1, ob))
	}
	var obRA io.ReaderAt = ob
	if stream != nil {
		obRA = &forward{r: stream, pos: runs[0].off}
	}
	r, err := verify.ExtractSlice(&forward{r: data, pos: dataPos}, obRA, size, off, n)
	if err != nil {
		cancel()
		data.Close()
		if stream != nil {
			stream.Close()
		}
		return nil, fmt.Errorf("s3: slice of %s: %w", id, err)
	}
	return &sliceBody{ctx: ctx, r: r, closers: []io.Closer{data, orNop(stream)}, cancel: cancel}, nil
}

var (
	errBeyondEnd    = errors.New("s3: range beyond the object's end")
	errSizeMismatch = errors.New("s3: the server states another size")
)

var contentRange = regexp.MustCompile(`^bytes (\d+)-(\d+)/(\d+)$`)

// suffixProbeMin is the smallest slice offset for which a Slice that does
// not know the object's size asks for the object's last group with a
// suffix GET (Range: bytes=-16384), whose Content-Range states the size,
// rather than a HEAD first: verify.NewReader proves an object's size with a
// slice at 2^63-1.
const suffixProbeMin = 1 << 62

// sizeBySuffix learns the size of id from a suffix GET of its last
// verify.GroupSize bytes, and returns the open body and where it starts.
// The size is as untrusted as HEAD's (verify proves it). If the server
// does not answer a suffix GET as S3 specifies, it asks HEAD instead, and
// returns no body.
func (s *Store) sizeBySuffix(ctx context.Context, id storageid.ID) (size uint64, body io.ReadCloser, start uint64, err error) {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{
		Bucket: aws.String(s.bucket),
		Key:    aws.String(s.dataKey(id)),
		Range:  aws.String("bytes=-" + strconv.Itoa(verify.GroupSize)),
	})
	if status(err) == http.StatusNotFound {
		return 0, nil, 0, fmt.Errorf("%w: %s", blobs.ErrNotFound, id)
	}
	if err == nil {
		var m []string
		if out.ContentRange != nil {
			m = contentRange.FindStringSubmatch(*out.ContentRange)
		}
		if m != nil {
			a, errA := strconv.ParseUint(m[1], 10, 64)
			b, errB := strconv.ParseUint(m[2], 10, 64)
			total, errT := strconv.ParseUint(m[3], 10, 64)
			if errA == nil && errB == nil && errT == nil && total > 0 && total <= 1<<63-1 &&
				b == total-1 && a <= b && b-a+1 == min(verify.GroupSize, total) {
				s.remember(id, total)
				return total, out.Body, a, nil
			}
		}
		out.Body.Close()
	}
	if err := ctx.Err(); err != nil {
		return 0, nil, 0, err
	}
	size, err = s.Size(ctx, id)
	return size, nil, 0, err
}

// getRange opens the bytes [off, off+n) of key, n > 0. The server must
// answer with exactly that range (206 and its Content-Range): a range it
// says lies beyond the end gives errBeyondEnd, and a Content-Range for
// another range or another total size than total, or none, gives
// errSizeMismatch. A body shorter than n is left for
// the reader to find.
func (s *Store) getRange(ctx context.Context, key string, off, n, total uint64) (io.ReadCloser, error) {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{
		Bucket: aws.String(s.bucket),
		Key:    aws.String(key),
		Range:  aws.String("bytes=" + strconv.FormatUint(off, 10) + "-" + strconv.FormatUint(off+n-1, 10)),
	})
	if status(err) == http.StatusRequestedRangeNotSatisfiable {
		return nil, errBeyondEnd
	}
	if err != nil {
		return nil, err
	}
	var m []string
	if out.ContentRange != nil {
		m = contentRange.FindStringSubmatch(*out.ContentRange)
	}
	if m == nil || m[1] != strconv.FormatUint(off, 10) || m[2] != strconv.FormatUint(off+n-1, 10) || m[3] != strconv.FormatUint(total, 10) {
		out.Body.Close()
		return nil, errSizeMismatch
	}
	return out.Body, nil
}

// A span is a byte range [off, off+n).
type span struct{ off, n uint64 }

// selectGroups returns the groups [g0, g1) that the range [off, off+n)
// selects in a blob of size bytes, as verify.Source specifies.
func selectGroups(size, off, n uint64) (g0, g1 uint64) {
	if off >= size {
		last := numGroups(size)
		return last - 1, last
	}
	end := off + n
	if end < off || end > size {
		end = size
	}
	return off / verify.GroupSize, (end-1)/verify.GroupSize + 1
}

func numGroups(size uint64) uint64 {
	if size == 0 {
		return 1
	}
	return (size-1)/verify.GroupSize + 1
}

// split returns the length of the left child of a node of length bytes,
// length > GroupSize: the largest power of two strictly less than length.
func split(length uint64) uint64 {
	return 1 << (bits.Len64(length-1) - 1)
}

// neededPairs returns, in increasing order, the runs of the pre-order
// outboard that hold the parent pairs on the paths from the root to
// groups [g0, g1): a parent whose subtree lies wholly in the selection
// contributes all its subtree's pairs, which are contiguous in pre-order.
// It visits O(depth) nodes.
func neededPairs(size, g0, g1 uint64) []span {
	type frame struct{ start, length, obOff uint64 }
	var out []span
	stack := []frame{{0, size, 0}}
	for len(stack) > 0 {
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		first := f.start / verify.GroupSize
		groups := numGroups(f.length)
		if f.length <= verify.GroupSize || first >= g1 || first+groups <= g0 {
			continue
		}
		if g0 <= first && first+groups <= g1 {
			out = append(out, span{f.obOff, (groups - 1) * pairSize})
			continue
		}
		out = append(out, span{f.obOff, pairSize})
		mid := split(f.length)
		stack = append(stack,
			frame{f.start + mid, f.length - mid, f.obOff + pairSize*(mid/verify.GroupSize)},
			frame{f.start, mid, f.obOff + pairSize})
	}
	return out
}

// coalesce merges runs (in increasing order) less than gap bytes apart.
func coalesce(runs []span, gap uint64) []span {
	var out []span
	for _, r := range runs {
		if k := len(out); k > 0 && r.off <= out[k-1].off+out[k-1].n+gap {
			out[k-1].n = max(out[k-1].n, r.off+r.n-out[k-1].off)
			continue
		}
		out = append(out, r)
	}
	return out
}

// A sparse reader serves the fetched runs of an outboard. A read at an
// offset not fetched, or past what the server returned, is short, with
// io.ErrUnexpectedEOF: verify then reports the slice truncated.
type sparse struct{ segs []segment }

type segment struct {
	off uint64
	b   []byte
}

func (s *sparse) ReadAt(p []byte, off int64) (int, error) {
	o := uint64(off)
	i := sort.Search(len(s.segs), func(i int) bool { return s.segs[i].off > o }) - 1
	n := 0
	// Through segments that follow one another (fetched runs and kept
	// pairs; they do not overlap).
	for ; i >= 0 && i < len(s.segs) && n < len(p); i++ {
		sg := s.segs[i]
		if o < sg.off || o >= sg.off+uint64(len(sg.b)) {
			break
		}
		m := copy(p[n:], sg.b[o-sg.off:])
		n += m
		o += uint64(m)
	}
	if n < len(p) {
		return n, io.ErrUnexpectedEOF
	}
	return n, nil
}

// A forward reader serves reads at increasing offsets from a stream that
// starts at pos, skipping gaps; verify.ExtractSlice reads data and
// outboard that way. A read behind the stream fails.
type forward struct {
	r   io.Reader
	pos uint64
	err error
}

func (f *forward) ReadAt(p []byte, off int64) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	o := uint64(off)
	if o < f.pos {
		f.err = errors.New("s3: internal error: read behind a stream")
		return 0, f.err
	}
	if o > f.pos {
		if _, err := io.CopyN(io.Discard, f.r, int64(o-f.pos)); err != nil {
			f.err = io.ErrUnexpectedEOF
			return 0, f.err
		}
		f.pos = o
	}
	n, err := io.ReadFull(f.r, p)
	f.pos += uint64(n)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		f.err = err
	}
	return n, err
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

func orNop(c io.ReadCloser) io.Closer {
	if c == nil {
		return nopCloser{}
	}
	return c
}

// sliceBody is a slice being read from the server's responses.
type sliceBody struct {
	ctx     context.Context
	r       io.Reader
	closers []io.Closer
	cancel  context.CancelFunc
	once    sync.Once
}

func (s *sliceBody) Read(p []byte) (int, error) {
	if err := s.ctx.Err(); err != nil {
		return 0, err
	}
	return s.r.Read(p)
}

// Close ends the slice and its requests; a second Close does nothing.
func (s *sliceBody) Close() error {
	s.once.Do(func() {
		for _, c := range s.closers {
			c.Close()
		}
		s.cancel()
	})
	return nil
}

// outboardMatches reports whether ob is the pre-order outboard of a blob
// of size bytes whose root is id: the root pair hashes (as the root) to
// id, and every other pair to the chaining value its parent's pair holds
// for it. The pairs' leaf chaining values are bound to id through their
// parents, so an outboard that matches is the blob's (BLAKE3's collision
// resistance); it proves nothing about the data, which verify checks
// against it.
func outboardMatches(id storageid.ID, size uint64, ob []byte) bool {
	if size <= verify.GroupSize || uint64(len(ob)) != verify.OutboardSize(size) {
		return false
	}
	var check func(length, obOff uint64, want [8]uint32, flags uint32) bool
	check = func(length, obOff uint64, want [8]uint32, flags uint32) bool {
		l, r := cvOf(ob[obOff:obOff+32]), cvOf(ob[obOff+32:obOff+64])
		if guts.ChainingValue(guts.ParentNode(l, r, &guts.IV, flags)) != want {
			return false
		}
		mid := split(length)
		return (mid <= verify.GroupSize || check(mid, obOff+pairSize, l, 0)) &&
			(length-mid <= verify.GroupSize || check(length-mid, obOff+pairSize*(mid/verify.GroupSize), r, 0))
	}
	return check(size, 0, cvOf(id[:]), guts.FlagRoot)
}

// cvOf decodes a 32-byte little-endian chaining value.
func cvOf(b []byte) (cv [8]uint32) {
	for i := range cv {
		cv[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return cv
}

// outboardCache keeps whole outboards that matched their storage_id.
type outboardCache struct {
	mu    sync.Mutex
	m     map[obKey][]byte
	bytes int
	max   int // outboardCacheMax, or more (WithWholeOutboard)
}

type obKey struct {
	id   storageid.ID
	size uint64
}

// outboardCacheMax bounds the bytes of the outboards kept, unless
// WithWholeOutboard raises it.
const outboardCacheMax = 8 << 20

func (c *outboardCache) get(id storageid.ID, size uint64) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[obKey{id, size}]
}

func (c *outboardCache) put(id storageid.ID, size uint64, ob []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || c.bytes+len(ob) > max(c.max, outboardCacheMax) {
		c.m, c.bytes = make(map[obKey][]byte), 0
	}
	if _, ok := c.m[obKey{id, size}]; !ok {
		c.m[obKey{id, size}] = ob
		c.bytes += len(ob)
	}
}

func (c *outboardCache) forget(id storageid.ID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, ob := range c.m {
		if k.id == id {
			delete(c.m, k)
			c.bytes -= len(ob)
		}
	}
}
