package blobs

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
)

// TestWriteback: an import of many MiB hands its written bytes to the
// kernel's writeback as it goes (sync_file_range is taken on this file
// system), and the object it commits is intact; writeback is advice, so a
// file that refuses it imports the same bytes.
func TestWriteback(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, err := CreateDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte("sop-pme writeback "), 1<<16) // 1.1 MiB
	var all bytes.Buffer
	for i := range 20 {
		chunk[0] = byte(i)
		all.Write(chunk)
	}
	for _, refuse := range []bool{false, true} {
		pw, err := d.Create(ctx)
		if err != nil {
			t.Fatal(err)
		}
		p := pw.(*pending)
		p.wbOff.Store(refuse)
		if _, err := io.Copy(pw, bytes.NewReader(all.Bytes())); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for p.wbBusy.Load() && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		p.mu.Lock()
		flushed, off := p.flushed, p.wbOff.Load()
		p.mu.Unlock()
		if refuse {
			if flushed != 0 {
				t.Errorf("writeback refused, yet %d bytes handed to it", flushed)
			}
		} else {
			if off {
				t.Error("sync_file_range refused on this file system")
			}
			if flushed < writebackEvery {
				t.Errorf("%d of %d bytes handed to writeback; want at least %d", flushed, all.Len(), writebackEvery)
			}
		}
		id, err := pw.Commit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if id != storageid.Sum(all.Bytes()) {
			t.Fatal("committed object is not the bytes written")
		}
		if err := verify.Verify(ctx, d, id); err != nil {
			t.Fatal(err)
		}
		if err := d.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
}
