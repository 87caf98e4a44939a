package pme_test

import (
	"io"
	"testing"

	"github.com/sovm/sop-pme/pme"
)

// TestEmptyPageAtBlockBoundary: a page whose body is empty
// (compressed_page_size 0) and whose header ends exactly where the buffered
// plaintext ends, on a 1 MiB block boundary of the segmented buffer. Sealing
// its empty body asks segBuf.bytes for 0 bytes at the end of the window: it
// must give an empty module, not index one block past the last.
func TestEmptyPageAtBlockBoundary(t *testing.T) {
	// PageHeader{type: DATA_PAGE, uncompressed_page_size: 0, compressed_page_size: 0}
	hdr := []byte{0x15, 0x00, 0x15, 0x00, 0x15, 0x00, 0x00}
	const block = 1 << 20
	plain := make([]byte, block)
	copy(plain, "PAR1")
	at := block - len(hdr)
	copy(plain[at:], hdr)
	rf := pme.NewReframer(io.Discard, pme.NewDEK())
	if _, err := rf.Write(plain); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("FlushRowGroup panicked: %v", p)
		}
	}()
	if err := rf.FlushRowGroup([]pme.Span{{Off: int64(at), Len: int64(len(hdr))}}); err != nil {
		t.Fatal(err)
	}
}
