package writer_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sovm/sop-pme/internal/testkit/plainedit"
	"github.com/sovm/sop-pme/internal/thrift"
	"github.com/sovm/sop-pme/writer"
)

// slowReaderAt delays each ReadAt and records the most reads in flight at
// once.
type slowReaderAt struct {
	r              *bytes.Reader
	inFlight, most atomic.Int32
	delay          time.Duration
}

func (s *slowReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for m := s.most.Load(); n > m && !s.most.CompareAndSwap(m, n); m = s.most.Load() {
	}
	time.Sleep(s.delay)
	return s.r.ReadAt(p, off)
}

// TestSealFileChecksInParallel: SealFile decodes row groups for its check
// (decodecheck.go) while it seals the next ones, up to WithParallelism at
// once, and still refuses a file with a row group that does not decode,
// naming the first such row group whatever the parallelism, with nothing
// published. Before, SealFile refused WithParallelism (ErrOption), and
// decoded each row group before sealing the next: its input saw one read
// at a time.
func TestSealFileChecksInParallel(t *testing.T) {
	t.Parallel()
	plain := listParquet(t, 1200, 100)
	// Row group 3 starts a record with repetition level 1; row group 8's
	// values of a required column run short.
	bad, err := plainedit.Rewrite(plain, func(p *plainedit.Page) error {
		if typ, _ := p.Header.I32(1); typ != 0 || p.Index != 0 {
			return nil
		}
		switch {
		case p.RowGroup == 3 && p.Column == 1:
			firstLevelOne(p)
		case p.RowGroup == 8 && p.Column == 2:
			p.Body = p.Body[:len(p.Body)-8]
			p.Header.Set(2, thrift.I32(int32(len(p.Body))))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, n := range []int{1, 3, 8} {
		st := newMemStore()
		_, err := writer.SealFile(ctx, st, bytes.NewReader(bad), int64(len(bad)), writer.WithAssignFieldIDs(), writer.WithParallelism(n))
		if !errors.Is(err, writer.ErrPlaintextParquet) || !strings.Contains(err.Error(), "row group 3:") || !strings.Contains(err.Error(), "nonzero repetition level") {
			t.Errorf("parallelism %d: got %v, want ErrPlaintextParquet for row group 3's repetition level", n, err)
		}
		if st.count() != 0 || st.abortCount() != st.created {
			t.Errorf("parallelism %d: %d objects published, %d staged, %d aborted", n, st.count(), st.created, st.abortCount())
		}
	}
	// The file as it was seals, its checks reading the input while the
	// Sealer reads it too.
	in := &slowReaderAt{r: bytes.NewReader(plain), delay: time.Millisecond}
	st := newMemStore()
	if _, err := writer.SealFile(ctx, st, in, int64(len(plain)), writer.WithAssignFieldIDs(), writer.WithParallelism(4)); err != nil {
		t.Fatal(err)
	}
	if st.count() != 1 {
		t.Errorf("%d objects published", st.count())
	}
	if most := in.most.Load(); most < 2 {
		t.Errorf("at most %d read of the input at once: the checks did not run beside the Sealer", most)
	}
}
