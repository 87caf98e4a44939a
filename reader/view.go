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
// arrow-go reads each column chunk through one buffered stream of the
// chunk's length (see Reader.open), which issues one ReadAt of the whole
// chunk, then one at the plaintext end, where it meets io.EOF and stops.
//
// Every chunk is fetched through the verified reader, which checks it against
// storage_id, and only then are its modules opened (Section 11.10): no byte
// reaches the decryptor or the decoder unverified. A read that is not within
// one column chunk fails.
type plainView struct {
	ctx    context.Context
	vr     *verify.Reader
	dek    pme.DEK
	chunks []pme.Span // sorted by offset
	size   int64

	mu       sync.Mutex
	plainLen map[int64]int64 // chunk offset → plaintext length, once opened
	cache    pme.Span        // the chunk held in plain, for reads of part of a chunk
	plain    []byte
	ct       []byte // reused buffer for a chunk's modules
	pos      int64
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
		return 0, fmt.Errorf("%w: read [%d, %d) is not within one column chunk", ErrFormat, off, off+int64(len(p)))
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if off == c.Off && int64(len(p)) == c.Len {
		// The whole chunk: open it straight into the caller's buffer.
		n, err := v.openChunk(c, p)
		if err != nil {
			return 0, err
		}
		v.plainLen[c.Off] = int64(n)
		clear(p[n:])
		return n, io.EOF
	}
	if pl, ok := v.plainLen[c.Off]; ok && off >= c.Off+pl {
		return 0, io.EOF
	}
	if v.cache != c {
		v.cache = pme.Span{}
		if cap(v.plain) < int(c.Len) {
			v.plain = make([]byte, c.Len)
		}
		n, err := v.openChunk(c, v.plain[:c.Len])
		if err != nil {
			return 0, err
		}
		v.plain = v.plain[:n]
		v.plainLen[c.Off] = int64(n)
		v.cache = c
	}
	rel := off - c.Off
	if rel >= int64(len(v.plain)) {
		return 0, io.EOF
	}
	n := copy(p, v.plain[rel:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// openChunk fetches chunk c verified and opens its modules into dst, which
// has room for c.Len bytes. It returns the plaintext length.
func (v *plainView) openChunk(c pme.Span, dst []byte) (int, error) {
	if cap(v.ct) < int(c.Len) {
		v.ct = make([]byte, c.Len)
	}
	ct := v.ct[:c.Len]
	if _, err := v.vr.ReadAtContext(v.ctx, ct, c.Off); err != nil {
		return 0, fmt.Errorf("reader: column chunk at %d: %w", c.Off, err)
	}
	plain, err := v.dek.OpenModules(dst[:0], ct)
	if err != nil {
		return 0, fmt.Errorf("reader: column chunk at %d: %w", c.Off, err)
	}
	return len(plain), nil
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
