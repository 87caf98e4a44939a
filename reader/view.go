package reader

import (
	"context"
	"fmt"
	"io"
	"sort"
	"sync"

	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/verify"
)

// plainView is the plaintext view of an object that arrow-go reads: an
// io.ReaderAt in which each column chunk starts at its offset in the object
// and holds the decrypted page headers and pages of its modules, back to
// back. A chunk's plaintext is shorter than its modules (32 bytes of overhead
// each); the view ends the chunk there, with io.EOF, as a plaintext file
// would end it. The footer arrow-go uses is the decrypted one, handed over as
// metadata, so no offset needs remapping.
//
// arrow-go reads each column chunk through a buffered stream of
// streamBuffer bytes (see Reader.open): page headers through the buffer,
// larger pages straight into its own page buffer. A chunk of the current
// row group is read in place from the plaintext the fetcher opened (held),
// until the row group ends; a chunk no larger than the buffer is read whole
// with one ReadAt, and handed over (readChunk). Either way arrow-go meets
// io.EOF at the plaintext end, and stops.
//
// Every chunk is fetched through the verified reader, which checks it against
// storage_id, and only then are its modules opened (Section 11.10): no byte
// reaches the decryptor or the decoder unverified. A read that is not within
// one column chunk fails.
//
// A scan reads one row group at a time (see fetcher): the row group's
// projected chunks are fetched, verified, opened and checked in the
// background while arrow-go decodes the row group before, and handed to the
// view (setCurrent) when arrow-go starts on them. A chunk the scan did not
// predict is opened when arrow-go asks for it.
type plainView struct {
	ctx    context.Context
	vr     *verify.Reader
	dek    pme.DEK
	stats  *counters
	chunks []pme.Span // every chunk, sorted by offset
	size   int64
	ctPool *sync.Pool          // of *[]byte: buffers for chunks' modules, shared by the Reader's scans
	ptPool *sync.Pool          // of *[]byte: buffers for chunks' plaintext, cleared before they return
	info   map[int64]chunkInfo // by chunk offset: what the footer says of it
	budget *budget             // the scan's decoding budget (nil outside a scan)

	mu       sync.Mutex
	plainLen map[int64]int64 // chunk offset → plaintext length, once opened
	current  *rowGroupPlain  // the row group arrow-go decodes, opened ahead
	cache    pme.Span        // the chunk held in plain, for reads of part of a chunk
	plain    []byte
	pos      int64
	err      error // the first error the view returned
}

// fail records err as the view's failure, if it is the first, and returns
// it. arrow-go may wrap the errors of ReadAt without %w; the scan reports
// this one.
func (v *plainView) fail(err error) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.err == nil {
		v.err = err
	}
	return err
}

// failure returns the first error the view returned, if any.
func (v *plainView) failure() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.err
}

// decoding tells the scan's budget that arrow-go decodes chunk c now.
func (v *plainView) decoding(c pme.Span) {
	if v.budget != nil {
		if in, ok := v.info[c.Off]; ok {
			v.budget.chunk(in.column, c.Len)
		}
	}
}

func (v *plainView) chunkAt(off int64) (pme.Span, bool) {
	i := sort.Search(len(v.chunks), func(i int) bool { return v.chunks[i].End() > off })
	if i == len(v.chunks) || v.chunks[i].Off > off {
		return pme.Span{}, false
	}
	return v.chunks[i], true
}

// ReadAt implements io.ReaderAt over the plaintext view.
func (v *plainView) ReadAt(p []byte, off int64) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c, ok := v.chunkAt(off)
	if !ok || off+int64(len(p)) > c.End() {
		return 0, v.fail(fmt.Errorf("%w: read [%d, %d) is not within one column chunk", ErrFormat, off, off+int64(len(p))))
	}
	if off == c.Off && int64(len(p)) == c.Len {
		n, err := v.readChunk(c, p)
		if err != nil && err != io.EOF {
			v.fail(err)
		}
		return n, err
	}
	// A chunk of the current row group, opened ahead: read in place.
	if plain, ok, err := v.held(c); err != nil {
		return 0, v.fail(err)
	} else if ok {
		return readPart(p, plain, off-c.Off)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if pl, ok := v.plainLen[c.Off]; ok && off >= c.Off+pl {
		return 0, io.EOF
	}
	if v.cache != c {
		v.cache = pme.Span{}
		v.decoding(c)
		v.mu.Unlock()
		plain, ok, err := v.take(c)
		v.mu.Lock()
		if ok {
			clear(v.plain)
		} else if err == nil {
			plain, err = v.open(c, v.plain[:0])
		}
		if err != nil {
			if v.err == nil {
				v.err = err
			}
			return 0, err
		}
		v.plain = plain
		v.plainLen[c.Off] = int64(len(plain))
		v.cache = c
	}
	return readPart(p, v.plain, off-c.Off)
}

// readPart reads p from plain at rel, the plaintext of a chunk, which ends
// there (io.EOF).
func readPart(p, plain []byte, rel int64) (int, error) {
	if rel >= int64(len(plain)) {
		return 0, io.EOF
	}
	n := copy(p, plain[rel:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// held returns chunk c of the current row group, once the fetcher has
// opened it, for arrow-go to read in parts (see Reader.open): the chunk
// stays the row group's, and setCurrent clears it with the others. ok is
// false if the fetcher does not open c, or the decoder took it whole.
func (v *plainView) held(c pme.Span) (plain []byte, ok bool, err error) {
	ch := v.pending(c, false)
	if ch == nil {
		return nil, false, nil
	}
	select {
	case <-ch.done:
	case <-v.ctx.Done():
		return nil, false, v.ctx.Err()
	}
	if ch.err != nil {
		return nil, false, ch.err
	}
	v.mu.Lock()
	first := !ch.read
	ch.read = true
	v.plainLen[c.Off] = int64(len(ch.plain))
	v.mu.Unlock()
	if first {
		v.decoding(c)
	}
	return ch.plain, true, nil
}

// readChunk serves a read of the whole chunk c: from the current row
// group, opened ahead, or else by opening c straight into p.
func (v *plainView) readChunk(c pme.Span, p []byte) (int, error) {
	v.decoding(c)
	plain, ok, err := v.take(c)
	if err != nil {
		return 0, err
	}
	var n int
	if ok {
		n = copy(p, plain)
		v.putPlain(plain)
	} else {
		plain, err := v.open(c, p[:0])
		if err != nil {
			return 0, err
		}
		n = len(plain)
	}
	clear(p[n:])
	v.mu.Lock()
	v.plainLen[c.Off] = int64(n)
	v.mu.Unlock()
	return n, io.EOF
}

// take returns chunk c of the current row group, once the fetcher has
// opened it, and hands it over: ok is false if the fetcher does not open c,
// or it was taken before.
func (v *plainView) take(c pme.Span) (plain []byte, ok bool, err error) {
	ch := v.pending(c, true)
	if ch == nil {
		return nil, false, nil
	}
	select {
	case <-ch.done:
	case <-v.ctx.Done():
		go func() { <-ch.done; v.putPlain(ch.plain) }()
		return nil, false, v.ctx.Err()
	}
	return ch.plain, ch.err == nil, ch.err
}

// pending returns chunk c of the current row group, if the fetcher opens it
// and the decoder has not taken it; take hands it over. (The map is the
// fetcher's, read-only once handed over; taken and read are the view's,
// under v.mu.)
func (v *plainView) pending(c pme.Span, take bool) *chunkPlain {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.current == nil {
		return nil
	}
	ch := v.current.chunks[c.Off]
	if ch == nil || ch.taken {
		return nil
	}
	if take {
		ch.taken = true
	}
	return ch
}

// setCurrent hands the view the row group arrow-go reads next, and clears
// what is left of the one before.
func (v *plainView) setCurrent(d *rowGroupPlain) {
	v.mu.Lock()
	old := v.current
	v.current = d
	clear(v.plain) // the previous row group's, if a chunk was read in parts
	v.plain, v.cache = v.plain[:0], pme.Span{}
	v.mu.Unlock()
	if old != nil {
		old.clear(v)
	}
}

// open fetches chunk c verified and opens it (openChunk), appending the
// plaintext to dst, which has room for c.Len bytes. On failure nothing is
// appended.
func (v *plainView) open(c pme.Span, dst []byte) ([]byte, error) {
	v.stats.syncOpens.Add(1)
	ct := v.ciphertext(c.Len)
	defer v.ctPool.Put(ct)
	if _, err := v.vr.ReadAtContext(v.ctx, *ct, c.Off); err != nil {
		return dst, fmt.Errorf("reader: column chunk at %d: %w", c.Off, err)
	}
	v.stats.verified.Add(c.Len)
	return v.openChunk(c, *ct, dst)
}

// plaintext returns an empty pooled buffer with room for n bytes.
func (v *plainView) plaintext(n int64) []byte {
	if bp, _ := v.ptPool.Get().(*[]byte); bp != nil && int64(cap(*bp)) >= n {
		return (*bp)[:0]
	}
	return make([]byte, 0, n)
}

// putPlain clears a plaintext buffer and returns it to the pool (ptPool,
// shared by every Reader).
func (v *plainView) putPlain(b []byte) {
	if cap(b) == 0 {
		return
	}
	// All of its capacity: the pool is shared by every Reader, and a
	// failed open may have left plaintext past the end of b.
	b = b[:cap(b)]
	clear(b)
	b = b[:0]
	v.ptPool.Put(&b)
}

// ciphertext returns a pooled buffer of n bytes.
func (v *plainView) ciphertext(n int64) *[]byte {
	bp, _ := v.ctPool.Get().(*[]byte)
	if bp == nil || int64(cap(*bp)) < n {
		b := make([]byte, n)
		bp = &b
	}
	*bp = (*bp)[:n]
	return bp
}

// openChunk opens the modules of chunk c, whose verified bytes are ct, and
// checks its pages against the footer (checkPages), appending the
// plaintext to dst, which has room for c.Len bytes. On failure nothing is
// appended.
func (v *plainView) openChunk(c pme.Span, ct, dst []byte) ([]byte, error) {
	base := len(dst)
	plain, err := openModules(v.dek, dst, ct)
	if err != nil {
		return dst, fmt.Errorf("reader: column chunk at %d: %w", c.Off, err)
	}
	v.stats.modules.Add(countModules(ct))
	if in, ok := v.info[c.Off]; ok {
		limit := int64(scanMemoryBase) + scanMemoryPerByte*c.Len
		if v.budget != nil {
			limit = v.budget.total(c.Len)
		}
		if err := checkPagesSafely(ct, plain[base:], in, limit); err != nil {
			clear(plain[base:])
			return dst[:base], fmt.Errorf("reader: column chunk at %d: %w", c.Off, err)
		}
	}
	return plain, nil
}

// checkPagesSafely is checkPages, whose decompressors (arrow-go's codecs, in
// valueSection and codecbound) run on bytes a producer chose: a panic in
// one becomes an ErrFormat error, not a crash of the goroutine fetching
// ahead.
func checkPagesSafely(ct, plain []byte, info chunkInfo, limit int64) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: row group %d column %d: checking its pages: %v", ErrFormat, info.rowGroup, info.column, r)
		}
	}()
	return checkPages(ct, plain, info, limit)
}

// countModules counts the back-to-back modules of ct, whose framing
// OpenModules has accepted.
func countModules(ct []byte) int64 {
	var n int64
	for len(ct) > 0 {
		_, rest, err := pme.SplitModule(ct)
		if err != nil {
			break
		}
		ct = rest
		n++
	}
	return n
}

// parallelMin is the chunk size from which openModules splits the work in
// two goroutines.
const parallelMin = 4 << 20

// openModules opens the back-to-back modules in ct into dst, as
// pme.DEK.OpenModules does, using two goroutines for a large chunk: the
// modules are independent, and each plaintext's place in dst is known from
// the length prefixes.
func openModules(k pme.DEK, dst, ct []byte) ([]byte, error) {
	if len(ct) < parallelMin {
		return k.OpenModules(dst, ct)
	}
	// Find the module boundary nearest the middle, and where the second
	// half's plaintext starts.
	at, plainAt := 0, 0
	for b := ct; at < len(ct)/2; {
		body, rest, err := pme.SplitModule(b)
		if err != nil {
			return k.OpenModules(dst, ct) // reports the error
		}
		at += pme.LenSize + len(body)
		plainAt += len(body) - pme.NonceSize - pme.TagSize
		b = rest
	}
	base := len(dst)
	if cap(dst)-base < len(ct) {
		return k.OpenModules(dst, ct)
	}
	var wg sync.WaitGroup
	var second []byte
	var err2 error
	wg.Add(1)
	go func() {
		defer wg.Done()
		second, err2 = k.OpenModules(dst[base+plainAt:base+plainAt], ct[at:])
	}()
	first, err1 := k.OpenModules(dst[base:base], ct[:at])
	wg.Wait()
	if err1 != nil || err2 != nil || len(first) != plainAt {
		clear(dst[base:cap(dst)])
		if err1 != nil {
			return dst[:base], err1
		}
		if err2 != nil {
			return dst[:base], err2
		}
		return dst[:base], fmt.Errorf("%w: module lengths changed", pme.ErrModule)
	}
	return dst[:base+plainAt+len(second)], nil
}

// close clears the plaintext the view holds.
func (v *plainView) close() {
	v.setCurrent(nil)
	v.mu.Lock()
	clear(v.plain)
	v.plain, v.cache = nil, pme.Span{}
	v.mu.Unlock()
}

// Seek implements io.Seeker, for arrow-go's ReaderAtSeeker.
func (v *plainView) Seek(offset int64, whence int) (int64, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += v.pos
	case io.SeekEnd:
		offset += v.size
	default:
		return 0, fmt.Errorf("reader: bad whence %d", whence)
	}
	if offset < 0 {
		return 0, fmt.Errorf("reader: negative position %d", offset)
	}
	v.pos = offset
	return offset, nil
}
