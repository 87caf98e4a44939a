package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// wideCSV writes a CSV file of cols integer columns and rows rows.
func wideCSV(t *testing.T, cols, rows int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), fmt.Sprintf("wide%d.csv", cols))
	var b strings.Builder
	for c := range cols {
		if c > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "c%d", c)
	}
	b.WriteByte('\n')
	for r := range rows {
		for c := range cols {
			if c > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(r * c))
		}
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// nothingImported checks that the env's store holds no object and that no
// keyring was written.
func (e *env) nothingImported() {
	e.t.Helper()
	if r := e.sop("ls", "--json"); r.code == 0 && strings.Contains(r.stdout, "storage_id") {
		e.t.Errorf("the store holds an object:\n%s", r)
	}
	if _, err := os.Stat(e.ringPath()); err == nil {
		e.t.Errorf("a keyring was written: %s", e.ringPath())
	}
}

// TestImportWideTable: a CSV of 2,000 columns imports, and export reads it
// back with its defaults. Before, the import exited 0 and export exited 1
// ("decoders for 2000 leaf columns need 131072000 bytes, more than the
// limit of 51367888"). A CSV of more leaf columns than the reader's default
// scan decodes (4,096) is refused, with nothing left behind.
func TestImportWideTable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	in := wideCSV(t, 2000, 3)
	res := e.importJSON(in, "--assign-field-ids")
	out := filepath.Join(t.TempDir(), "out.csv")
	e.ok("export", res.StorageID, "--format", "csv", "-o", out)
	got, _ := os.ReadFile(out)
	want, _ := os.ReadFile(in)
	if !bytes.Equal(got, want) {
		t.Errorf("the export differs from the input: %.200s", got)
	}
	e.ok("check", res.StorageID)

	e2 := newEnv(t)
	e2.fails(exitFailure, []string{"4097 leaf columns", "at most 4096"}, "import", "--assign-field-ids", wideCSV(t, 4097, 2))
	e2.nothingImported()
}

// TestImportDeepSchema: a Parquet file whose struct nests 70 deep (as
// pyarrow writes one) is refused by import: the reader takes schemas 64
// levels deep. Before, it imported with exit 0, and export exited 6 and
// check failed, for ever ("schema tree is truncated or too deep"). A file
// of 63 nested structs, at the limit, imports and exports.
func TestImportDeepSchema(t *testing.T) {
	t.Parallel()
	deep := func(depth int) string {
		f := arrow.Field{Name: "leaf", Type: arrow.PrimitiveTypes.Int64, Nullable: true}
		for range depth {
			f = arrow.Field{Name: "s", Type: arrow.StructOf(f), Nullable: true}
		}
		schema := arrow.NewSchema([]arrow.Field{f}, nil)
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		defer b.Release()
		b.Field(0).AppendNulls(2)
		rec := b.NewRecordBatch()
		defer rec.Release()
		path := filepath.Join(t.TempDir(), fmt.Sprintf("deep%d.parquet", depth))
		if err := os.WriteFile(path, plainParquet(t, rec), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	e := newEnv(t)
	res := e.importJSON(deep(63), "--assign-field-ids")
	e.ok("export", res.StorageID, "-o", filepath.Join(t.TempDir(), "out.ndjson"))
	e.ok("check", res.StorageID)

	e2 := newEnv(t)
	e2.fails(exitFailure, []string{"nests 71 levels deep", "at most 64"}, "import", "--assign-field-ids", deep(70))
	e2.nothingImported()
}

// TestImportHugeCell: a CSV whose one cell is 200 MB is refused at once,
// naming the record and the limit, within the import's memory bound (two
// row groups and 128 MiB of peak RSS). Before, the import read it whole,
// peaking at 2.5 GiB of RSS, and published an object whose default read
// failed (ErrMemoryLimit). A cell of just under the limit (8 MiB) imports,
// within the bound, and exports whole.
func TestImportHugeCell(t *testing.T) {
	// Not parallel: it measures a child's peak resident set (see
	// TestImportRSS).
	dir := t.TempDir()
	cell := func(name string, n int) string {
		path := filepath.Join(dir, name)
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		w := bufio.NewWriterSize(f, 1<<20)
		w.WriteString("id,txt\n1,")
		line := bytes.Repeat([]byte{'a'}, 1<<20)
		for left := n; left > 0; left -= len(line) {
			w.Write(line[:min(left, len(line))])
		}
		w.WriteString("\n2,b\n")
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		return path
	}
	const bound = 2*importRowGroupBytes + 128<<20
	e := newEnv(t)
	r, peak, el := e.peakRSS("import", "--assign-field-ids", cell("huge.csv", 200_000_000))
	t.Logf("200 MB cell: exit %d in %v, peak RSS %.1f MiB (bound %d MiB): %s", r.code, el.Round(time.Millisecond), float64(peak)/(1<<20), bound>>20, strings.TrimSpace(r.stderr))
	checkFailure(t, r, exitFailure, []string{"huge.csv", "CSV record 2 is longer than 8388608 bytes"}, []string{"import", "huge.csv"})
	if peak > bound {
		t.Errorf("peak RSS %d bytes, bound %d", peak, bound)
	}
	e.nothingImported()

	in := cell("big.csv", 8<<20-16)
	r, peak, el = e.peakRSS("import", "--assign-field-ids", "--json", in)
	t.Logf("8 MiB cell: exit %d in %v, peak RSS %.1f MiB", r.code, el.Round(time.Millisecond), float64(peak)/(1<<20))
	if r.code != 0 {
		t.Fatalf("import: %s", r)
	}
	if peak > bound {
		t.Errorf("peak RSS %d bytes, bound %d", peak, bound)
	}
	var res importResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("import --json: %v\n%s", err, r)
	}
	out := filepath.Join(t.TempDir(), "out.csv")
	e.ok("export", res.StorageID, "--format", "csv", "-o", out)
	got, _ := os.ReadFile(out)
	want, _ := os.ReadFile(in)
	if !bytes.Equal(got, want) {
		t.Errorf("the export (%d bytes) differs from the input (%d bytes)", len(got), len(want))
	}
}

// peakRSS runs the command against the env's store and returns its result,
// its peak resident set (VmHWM in /proc/<pid>/status, polled while it
// runs, as TestImportRSS does) and how long it ran.
func (e *env) peakRSS(args ...string) (result, int64, time.Duration) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.binary(), args...)
	cmd.Env = append(e.vars, "SOP_PME_STORE="+e.store)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	var peak atomic.Int64
	done, polled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(polled)
		status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
		for {
			if b, err := os.ReadFile(status); err == nil {
				if m := vmHWM.FindSubmatch(b); m != nil {
					kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
					peak.Store(max(peak.Load(), kb<<10))
				}
			}
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	<-polled
	el := time.Since(start)
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatal(err)
	}
	if peak.Load() == 0 {
		e.t.Fatal("no VmHWM read from /proc")
	}
	return result{code, stdout.String(), stderr.String()}, peak.Load(), el
}

// TestImportDuckDBAutoFieldIDs: a Parquet file whose field IDs start at 0,
// as DuckDB's FIELD_IDS 'auto' writes them, is refused without
// --assign-field-ids (0 is not a SOP-PME-1 field ID, and check fails it),
// naming the field, and with it imports as a conformant object whose field
// of ID 0 has a fresh one.
func TestImportDuckDBAutoFieldIDs(t *testing.T) {
	t.Parallel()
	id := func(v string) arrow.Metadata { return arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{v}) }
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64, Metadata: id("0")},
		{Name: "b", Type: arrow.BinaryTypes.String, Metadata: id("1")},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3}, nil)
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"x", "y", "z"}, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	in := filepath.Join(t.TempDir(), "auto.parquet")
	if err := os.WriteFile(in, plainParquet(t, rec), 0o600); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	e.fails(exitFailure, []string{"a (ID 0)", "--assign-field-ids"}, "import", in)
	e.nothingImported()
	res := e.importJSON(in, "--assign-field-ids")
	e.ok("check", res.StorageID)
	r := e.ok("schema", res.StorageID)
	for _, want := range []string{`(?m)^a\s+int64\s+(not )?null\s+2$`, `(?m)^b\s+utf8\s+(not )?null\s+1$`} {
		if !regexp.MustCompile(want).MatchString(r.stdout) {
			t.Errorf("schema lacks %s:\n%s", want, r.stdout)
		}
	}
}
