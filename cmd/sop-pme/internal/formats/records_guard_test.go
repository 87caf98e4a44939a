package formats

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
)

// guardByBytes is recordGuard's rule a byte at a time, as it was written
// before it scanned from stop to stop: how many bytes of in pass, and
// whether the input fails.
func guardByBytes(in []byte, quotes bool, max int64) (int, bool) {
	var run int64
	inQuote := false
	for i, c := range in {
		switch {
		case c == '"' && quotes:
			inQuote = !inQuote
		case c == '\n' && !inQuote:
			run = 0
			continue
		}
		if run++; run > max {
			return i, true
		}
	}
	return len(in), false
}

// chunkReader returns reads of 1 to 64 bytes.
type chunkReader struct {
	r   io.Reader
	rng *rand.Rand
}

func (c chunkReader) Read(p []byte) (int, error) {
	return c.r.Read(p[:min(len(p), 1+c.rng.IntN(64))])
}

// TestRecordGuardScan: recordGuard, which scans from quote or newline to
// the next, passes exactly the bytes the rule applied a byte at a time
// passes, and fails where it fails, on random CSV and NDJSON-like inputs
// read in random pieces.
func TestRecordGuardScan(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []byte("ab,\"\n x")
	for range 3000 {
		in := make([]byte, rng.IntN(300))
		for i := range in {
			in[i] = alphabet[rng.IntN(len(alphabet))]
		}
		max := int64(1 + rng.IntN(40))
		for _, f := range []Format{CSV, NDJSON} {
			wantN, wantFail := guardByBytes(in, f == CSV, max)
			g := newRecordGuard(chunkReader{bytes.NewReader(in), rng}, "x", f, max)
			got, err := io.ReadAll(g)
			if fail := errors.Is(err, ErrRecordTooLong); fail != wantFail || len(got) != wantN || (err != nil && !fail) {
				t.Fatalf("%s, max %d, %q: passed %d bytes, err %v; want %d, failing %v", f, max, in, len(got), err, wantN, wantFail)
			}
		}
	}
}
