package verify

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sync/atomic"
	"testing"

	"github.com/sovm/sop-pme/storageid"
)

// slow skips a slow test under -short, except in CI, where nothing skips.
func slow(t testing.TB) {
	t.Helper()
	if testing.Short() && !isCI() {
		t.Skip("-short, not under CI: slow")
	}
}

// isCI reports whether the tests run in CI, where nothing may skip.
func isCI() bool { return os.Getenv("CI") == "true" }

// baoInput returns the input of the abao test vectors: a 4-byte
// little-endian counter starting at 1, truncated to n bytes.
func baoInput(n int) []byte {
	in := make([]byte, 0, n+4)
	for i := uint32(1); len(in) < n; i++ {
		in = binary.LittleEndian.AppendUint32(in, i)
	}
	return in[:n]
}

// randBytes returns n deterministic pseudo-random bytes.
func randBytes(n int, seed uint64) []byte {
	b := make([]byte, n)
	var s [32]byte
	binary.LittleEndian.PutUint64(s[:], seed)
	rand.NewChaCha8(s).Read(b)
	return b
}

// encode returns the storage_id and the pre-order outboard of data, built by
// a Hasher.
func encode(t testing.TB, data []byte) (storageid.ID, []byte) {
	t.Helper()
	var h Hasher
	h.Write(data)
	id, size := h.Sum()
	if size != uint64(len(data)) {
		t.Fatalf("Hasher size %d, want %d", size, len(data))
	}
	var ob bytes.Buffer
	if err := h.WriteOutboard(&ob); err != nil {
		t.Fatal(err)
	}
	return id, ob.Bytes()
}

// extract returns the slice encoding of [off, off+n) of data.
func extract(t testing.TB, data, outboard []byte, off, n uint64) []byte {
	t.Helper()
	r, err := ExtractSlice(bytes.NewReader(data), bytes.NewReader(outboard), uint64(len(data)), off, n)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return enc
}

var errTestNotFound = errors.New("test: blob not found")

// memSource is an in-memory Source over one blob, with an optional tamper
// hook applied to every slice encoding it serves.
type memSource struct {
	id             storageid.ID
	data, outboard []byte
	tamper         func(off, n uint64, enc []byte) []byte
	calls          atomic.Int64
}

func newMemSource(t testing.TB, data []byte) *memSource {
	id, ob := encode(t, data)
	return &memSource{id: id, data: data, outboard: ob}
}

func (m *memSource) Slice(ctx context.Context, id storageid.ID, off, n uint64) (io.ReadCloser, error) {
	m.calls.Add(1)
	if id != m.id {
		return nil, fmt.Errorf("%w: %s", errTestNotFound, id)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r, err := ExtractSlice(bytes.NewReader(m.data), bytes.NewReader(m.outboard), uint64(len(m.data)), off, n)
	if err != nil {
		return nil, err
	}
	if m.tamper != nil {
		enc, err := io.ReadAll(r)
		if err != nil {
			return nil, err
		}
		return io.NopCloser(bytes.NewReader(m.tamper(off, n, enc))), nil
	}
	return io.NopCloser(r), nil
}

// decodeSlice verifies the slice encoding enc of [off, off+len(dst)) (or, for
// tail, of the last group) against id, as a Reader does: with knownSize ≥ 0
// the slice must claim it. It returns the claimed size.
func decodeSlice(enc io.Reader, id storageid.ID, knownSize int64, tail bool, off uint64, dst []byte) (uint64, error) {
	size, err := decodeSlice1(enc, id, knownSize, tail, off, dst)
	if err != nil {
		clear(dst)
	}
	return size, err
}

func decodeSlice1(enc io.Reader, id storageid.ID, knownSize int64, tail bool, off uint64, dst []byte) (uint64, error) {
	d := &decoder{par: 2}
	d.reset(enc)
	size, err := d.readHeader()
	if err != nil {
		return 0, err
	}
	if knownSize >= 0 && size != uint64(knownSize) {
		return 0, fmt.Errorf("%w: claims %d", ErrSize, size)
	}
	if tail {
		d.selectRange(size, tailOffset, 1)
		d.keepLast = true
	} else {
		d.selectRange(size, off, uint64(len(dst)))
		d.dst, d.dstOff = dst, off
	}
	if err := d.decode(&id); err != nil {
		return 0, err
	}
	return size, nil
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
