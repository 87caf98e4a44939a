package verify

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

var updateSeeds = flag.Bool("update-fuzz-seeds", false, "rewrite testdata/fuzz/FuzzVerifySlice from real slices")

const fuzzSeedDir = "testdata/fuzz/FuzzVerifySlice"

// fuzzBlob is the fixed blob of FuzzVerifySlice: 3 groups and a short one.
func fuzzBlob(t testing.TB) ([]byte, []byte) {
	data := randBytes(fuzzSize, 42)
	_, ob := encode(t, data)
	return data, ob
}

const fuzzSize = 3*GroupSize + 100

// fuzzRanges are the fixed requests of FuzzVerifySlice, chosen by the mode
// byte.
var fuzzRanges = []struct {
	off, n uint64
	known  bool // the size is known (proven), as in Reader.ReadAt
	tail   bool // the last group with the size unknown, as in NewReader
}{
	{0, 0, false, true},
	{GroupSize + 5, GroupSize, true, false},     // unaligned: two groups via scratch
	{0, fuzzSize, true, false},                  // the whole blob, in bulk
	{GroupSize, 10, false, false},               // the size unknown and unproven
	{0, 2 * GroupSize, true, false},             // aligned: a bulk subtree
	{2 * GroupSize, 2 * GroupSize, true, false}, // straddling the end
}

// FuzzVerifySlice feeds arbitrary bytes as the slice for a fixed root and
// range. Decoding must never panic, must never allocate by a length read
// from the input, must return only the blob's true bytes, and must leave
// the destination cleared on failure.
func FuzzVerifySlice(f *testing.F) {
	seeds, err := filepath.Glob(filepath.Join(fuzzSeedDir, "*"))
	if err != nil || len(seeds) == 0 {
		f.Fatalf("no seeds in %s (regenerate with -update-fuzz-seeds): %v", fuzzSeedDir, err)
	}
	data, _ := fuzzBlob(f)
	id, _ := encode(f, data)
	f.Fuzz(func(t *testing.T, enc []byte, mode uint8) {
		rg := fuzzRanges[int(mode)%len(fuzzRanges)]
		known := int64(-1)
		if rg.known {
			known = int64(len(data))
		}
		n := rg.n
		if rg.tail {
			n = 100
		}
		dst := bytes.Repeat([]byte{0xAA}, int(n))
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		size, err := decodeSlice(bytes.NewReader(enc), id, known, rg.tail, rg.off, dst)
		runtime.ReadMemStats(&after)
		if d := after.TotalAlloc - before.TotalAlloc; d > 1<<20 {
			t.Fatalf("decoding %d bytes allocated %d bytes", len(enc), d)
		}
		if err != nil {
			if !errors.Is(err, ErrVerify) && !errors.Is(err, ErrSize) {
				t.Fatalf("error %v is neither ErrVerify nor ErrSize", err)
			}
			if !isZero(dst) {
				t.Fatal("destination not cleared after a failure")
			}
			return
		}
		if rg.tail {
			if size != fuzzSize {
				t.Fatalf("verified a size of %d, the blob has %d", size, fuzzSize)
			}
			return
		}
		end := min(rg.off+n, size)
		if end > fuzzSize || !bytes.Equal(dst[:end-rg.off], data[rg.off:end]) {
			t.Fatal("verified bytes differ from the blob")
		}
	})
}

// TestUpdateFuzzSeeds writes the seed corpus of FuzzVerifySlice from real
// slices (with -update-fuzz-seeds), or checks that it matches them.
func TestUpdateFuzzSeeds(t *testing.T) {
	data, ob := fuzzBlob(t)
	seeds := map[string][]byte{}
	for mode, rg := range fuzzRanges {
		off, n := rg.off, rg.n
		if rg.tail {
			off, n = tailOffset, 1
		}
		enc := extract(t, data, ob, off, n)
		seeds[fmt.Sprintf("slice-%d", mode)] = seedFile(enc, uint8(mode))
		if mode == 0 || mode == 3 {
			seeds[fmt.Sprintf("truncated-%d", mode)] = seedFile(enc[:len(enc)-1], uint8(mode))
			seeds[fmt.Sprintf("flipped-%d", mode)] = seedFile(flip(enc, len(enc)/2), uint8(mode))
			huge := bytes.Clone(enc)
			copy(huge, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f})
			seeds[fmt.Sprintf("huge-size-%d", mode)] = seedFile(huge, uint8(mode))
		}
	}
	if *updateSeeds {
		if err := os.MkdirAll(fuzzSeedDir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range seeds {
			if err := os.WriteFile(filepath.Join(fuzzSeedDir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	for name, want := range seeds {
		got, err := os.ReadFile(filepath.Join(fuzzSeedDir, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("seed %s missing or stale (regenerate with -update-fuzz-seeds): %v", name, err)
		}
	}
}

// seedFile returns a corpus file in the format of go test's fuzzing engine.
func seedFile(enc []byte, mode uint8) []byte {
	return fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\nbyte(%q)\n", enc, mode)
}
