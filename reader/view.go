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
// io.ReaderAt in which each column chunk sits at its offset in the object,
// holding the decrypted page headers and pages of its modules, back to back,
// followed by zeros up to the chunk's length in the object (each module's 32
// bytes of overhead). The footer arrow-go uses is the decrypted one, handed
// over as metadata, so offsets need no remapping. arrow-go reads a column
// chunk with one ReadAt of its full length and parses pages until it has
// seen the chunk's num_values, so it never reaches the zeros.
//
// Every ReadAt fetches the chunk's bytes through the verified reader, which
// checks them against storage_id, and only then opens the modules (Section
// 11.10): no byte reaches the decryptor or the decoder unverified. A read
// that is not within one column chunk fails.
type plainView struct {
	ctx    context.Context
	vr     *verify.Reader
	dek    pme.DEK
	chunks []pme.Span // sorted by offset
	size   int64
	pos    int64

	mu      sync.Mutex
	cache   pme.Span // the chunk held decrypted in plain, if any
	plain   []byte
	ctBuf   []byte
	ctBufMu sync.Mutex
}

func (v *plainView) chunkAt(off int64) (pme.Span, bool) {
	i := sort.Search(len(v.chunks), func(i int) bool { return v.chunks[i].End() > off })
	if i == len(v.chunks) || v.chunks[i].Off > off {
		return pme.Span{}, false
	}
	return v.chunks[i], true
}

// ReadAt implements io.ReaderAt.
func (v *plainView) ReadAt(p []byte, off int64) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c, ok := v.chunkAt(off)
	if !ok || off+int64(len(p)) > c.End() {
		return 0, fmt.Errorf("%w: read [%d, %d) is not within one column chunk", ErrFormat, off, off+int64(len(p)))
	}
	if off == c.Off && int64(len(p)) == c.Len {
		// The common case: arrow-go reads the whole chunk; decrypt
		// straight into its buffer.
		return len(p), v.openChunk(c, p)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.cache != c {
		v.cache = pme.Span{}
		if cap(v.plain) < int(c.Len) {
			v.plain = make([]byte, c.Len)
		}
		v.plain = v.plain[:c.Len]
		if err := v.openChunk(c, v.plain); err != nil {
			return 0, err
		}
		v.cache = c
	}
	return copy(p, v.plain[off-c.Off:]), nil
}

// openChunk fetches chunk c verified, opens its modules into dst (len(dst)
// == c.Len) and zeroes the rest of dst.
func (v *plainView) openChunk(c pme.Span, dst []byte) error {
	v.ctBufMu.Lock()
	defer v.ctBufMu.Unlock()
	if cap(v.ctBuf) < int(c.Len) {
		v.ctBuf = make([]byte, c.Len)
	}
	ct := v.ctBuf[:c.Len]
	if _, err := v.vr.ReadAtContext(v.ctx, ct, c.Off); err != nil {
		return fmt.Errorf("reader: column chunk at %d: %w", c.Off, err)
	}
	plain, err := v.dek.OpenModules(dst[:0], ct)
	if err != nil {
		clear(dst)
		return fmt.Errorf("reader: column chunk at %d: %w", c.Off, err)
	}
	clear(dst[len(plain):])
	return nil
}

// Seek implements io.Seeker, for arrow-go's ReaderAtSeeker.
func (v *plainView) Seek(offset int64, whence int) (int64, error) {
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
