package reader

import (
	"encoding/binary"
	"errors"
	"testing"
)

// TestCheckPagesSafely: a panic inside the page checks (here a module
// framing that promises more plaintext than there is, which openChunk
// never passes) is an ErrFormat error, not a crash.
func TestCheckPagesSafely(t *testing.T) {
	t.Parallel()
	ct := binary.LittleEndian.AppendUint32(nil, 1<<20)
	ct = append(ct, make([]byte, 64)...)
	err := checkPagesSafely(ct, make([]byte, 10), chunkInfo{}, 1<<20)
	if !errors.Is(err, ErrFormat) {
		t.Fatalf("got %v, want ErrFormat", err)
	}
}
