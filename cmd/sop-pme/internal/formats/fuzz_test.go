package formats

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/sovm/sop-pme/internal/rowjson"
	"github.com/sovm/sop-pme/internal/testkit/testtables"
)

// memFile is an input held in memory: a regular file of its length, or,
// with pipe set, a pipe (Stat says so, as for stdin).
type memFile struct {
	*bytes.Reader
	pipe bool
}

func (m memFile) Stat() (fs.FileInfo, error) { return memInfo(m), nil }

type memInfo memFile

func (i memInfo) Name() string { return "fuzz" }
func (i memInfo) Size() int64  { return i.Reader.Size() }
func (i memInfo) Mode() fs.FileMode {
	if i.pipe {
		return fs.ModeNamedPipe
	}
	return 0
}
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return false }
func (i memInfo) Sys() any           { return nil }

// maxAlloc records the largest allocation made through it.
type maxAlloc struct {
	memory.Allocator
	max atomic.Int64
}

func (m *maxAlloc) note(n int) {
	for {
		cur := m.max.Load()
		if int64(n) <= cur || m.max.CompareAndSwap(cur, int64(n)) {
			return
		}
	}
}

func (m *maxAlloc) Allocate(n int) []byte { m.note(n); return m.Allocator.Allocate(n) }
func (m *maxAlloc) Reallocate(n int, b []byte) []byte {
	m.note(n)
	return m.Allocator.Reallocate(n, b)
}

// fuzzSeeds returns small valid inputs of each format, and a few broken
// ones: the format's index in All, whether it comes through a pipe, and
// its bytes.
func fuzzSeeds(tb testing.TB) []struct {
	format uint8
	pipe   bool
	data   []byte
} {
	tb.Helper()
	var seeds []struct {
		format uint8
		pipe   bool
		data   []byte
	}
	add := func(f Format, pipe bool, b []byte) {
		for i, g := range All {
			if g == f {
				seeds = append(seeds, struct {
					format uint8
					pipe   bool
					data   []byte
				}{uint8(i), pipe, b})
			}
		}
	}
	all := testtables.AllTypes().Fields()
	small := arrow.NewSchema([]arrow.Field{all[0], all[len(all)/2], all[len(all)-1]}, nil)
	for _, schema := range []*arrow.Schema{small, testtables.AllTypes()} {
		rec := testtables.Record(schema, 5, 1)
		for _, f := range All {
			var buf bytes.Buffer
			out, err := NewOutput(&buf, f, rec.Schema())
			if err != nil {
				tb.Fatal(err)
			}
			if err := out.Write(rec); err != nil {
				tb.Fatal(err)
			}
			if err := out.Close(); err != nil {
				tb.Fatal(err)
			}
			add(f, false, buf.Bytes())
		}
		// Uncompressed Parquet and compressed Arrow IPC, which the
		// outputs do not write.
		var buf bytes.Buffer
		fw, err := pqarrow.NewFileWriter(rec.Schema(), &buf, parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Uncompressed), parquet.WithDictionaryDefault(true)), pqarrow.DefaultWriterProps())
		if err != nil {
			tb.Fatal(err)
		}
		if err := fw.Write(rec); err != nil {
			tb.Fatal(err)
		}
		fw.Close()
		add(Parquet, true, buf.Bytes())
		for _, opt := range []ipc.Option{ipc.WithLZ4(), ipc.WithZstd()} {
			var file, stream bytes.Buffer
			w, err := ipc.NewFileWriter(&file, ipc.WithSchema(rec.Schema()), opt)
			if err != nil {
				tb.Fatal(err)
			}
			w.Write(rec)
			w.Close()
			s := ipc.NewWriter(&stream, ipc.WithSchema(rec.Schema()), opt)
			s.Write(rec)
			s.Close()
			add(ArrowFile, false, file.Bytes())
			add(ArrowStream, true, stream.Bytes())
		}
		rec.Release()
	}
	add(CSV, true, []byte("a,b\n1,x\n2,\"y\"\"z\"\n"))
	add(CSV, false, []byte("a,b\n1\n"))
	add(NDJSON, false, []byte("{\"a\":[1,2],\"b\":{\"c\":\"x\"}}\n{\"a\":null}\n"))
	add(NDJSON, true, []byte("{\"a\":1}\n{\"a\":\"x\"}\n"))
	add(Parquet, false, []byte("PAR1 not really PAR1"))
	add(ArrowFile, false, []byte("ARROW1\x00\x00ARROW1"))
	add(ArrowStream, false, []byte("\xff\xff\xff\xff\x10\x00\x00\x00"))
	return seeds
}

// FuzzOpen feeds arbitrary bytes to the reader of each format, as a file
// or as a pipe, and reads every record: bad input must give an error that
// matches ErrFormat, on one line, without a panic or an allocation out of
// proportion to the input.
func FuzzOpen(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s.format, s.pipe, s.data)
	}
	f.Fuzz(func(t *testing.T, which uint8, pipe bool, data []byte) {
		if len(data) > 64<<10 {
			return // inputs are kept small, so that each run is quick
		}
		format := All[int(which)%len(All)]
		// A hang is a failure: crash with the input saved.
		hang := time.AfterFunc(10*time.Second, func() { panic("FuzzOpen: " + string(format) + " input read for over 10s") })
		defer hang.Stop()
		mem := &maxAlloc{Allocator: memory.NewGoAllocator()}
		in, err := open(context.Background(), memFile{bytes.NewReader(data), pipe}, "fuzz", InputOptions{Format: format, BatchRows: 64, Alloc: mem,
			// Bound allocations tighter than for real tables, so that the
			// check below catches a length taken as declared.
			allocFloor: 8 << 20})
		if err == nil {
			for in.Next() {
				rec := in.RecordBatch()
				if _, jerr := rowjson.AppendRows(nil, rec); jerr != nil {
					t.Logf("rowjson: %v", jerr) // the values are read; only a panic fails
				}
			}
			err = in.Err()
			in.Close()
		}
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Errorf("%s: error does not match ErrFormat: %v", format, err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("%s: error is more than one line: %q", format, err)
			}
		}
		if limit := int64(16<<20) + 64*int64(len(data)); mem.max.Load() > limit {
			t.Errorf("%s: allocated %d bytes at once for an input of %d bytes", format, mem.max.Load(), len(data))
		}
	})
}
