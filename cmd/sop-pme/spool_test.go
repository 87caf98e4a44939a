package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/sovm/sop-pme/cmd/sop-pme/internal/formats"
	"github.com/sovm/sop-pme/internal/testkit/testtables"
)

// emptyDir fails the test unless dir holds nothing.
func emptyDir(t *testing.T, dir, when string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		t.Errorf("%s: %s left in the temporary directory", when, e.Name())
	}
}

// TestImportParquetStdin: a Parquet file piped to import is spooled to a
// private temporary file and sealed byte for byte, as the same file given
// by path is (its row groups kept), and the spool is gone after it, as
// after an import that fails (a truncated file; bytes that are not
// Parquet under --format parquet). Before, a Parquet file on stdin was
// read into memory and always re-encoded ("re-encoded: Parquet from
// stdin", one row group here), 15 times slower on TPC-H's lineitem.
func TestImportParquetStdin(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tmp := t.TempDir()
	rec := testtables.Record(testtables.AllTypes(), 900, 9)
	defer rec.Release()
	plain := plainParquet(t, rec, parquet.WithMaxRowGroupLength(300), parquet.WithCompression(compress.Codecs.Zstd))
	path := filepath.Join(t.TempDir(), "in.parquet")
	os.WriteFile(path, plain, 0o600)
	_, wantRows := readTable(t, path, formats.Parquet)
	vars := []string{"SOP_PME_STORE=" + e.store, "TMPDIR=" + tmp}

	e.stdin = bytes.NewReader(plain) // a pipe: exec copies it
	r := e.run(vars, "import", "--json", "-")
	if r.code != 0 {
		t.Fatalf("import -: %s", r)
	}
	var res importResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("import --json: %v\n%s", err, r)
	}
	if res.Path != pathSealed || res.ReencodeReason != "" || res.RowGroups != 3 || res.Rows != 900 {
		t.Errorf("Parquet on stdin: path %q (%q), %d row groups, %d rows; want sealed, 3 row groups, 900 rows", res.Path, res.ReencodeReason, res.RowGroups, res.Rows)
	}
	emptyDir(t, tmp, "after the import")
	e.stdin = nil
	e.checkExports(res.StorageID, wantRows)

	// Failures leave nothing either.
	e2 := newEnv(t)
	vars2 := []string{"SOP_PME_STORE=" + e2.store, "TMPDIR=" + tmp}
	for name, c := range map[string]struct {
		in    []byte
		flags []string
	}{
		"truncated":    {plain[:len(plain)/2], nil},
		"not Parquet":  {[]byte("a,b\n1,2\n"), []string{"--format", "parquet"}},
		"empty":        {nil, []string{"--format", "parquet"}},
		"footer wrong": {append(bytes.Clone(plain[:len(plain)-8]), 0xff, 0xff, 0xff, 0x7f, 'P', 'A', 'R', '1'), nil},
	} {
		e2.stdin = bytes.NewReader(c.in)
		r := e2.run(vars2, append([]string{"import", "--assign-field-ids", "-"}, c.flags...)...)
		if r.code != exitFailure {
			t.Errorf("%s: exit %d, want %d\n%s", name, r.code, exitFailure, r)
		}
		emptyDir(t, tmp, name)
	}
	e2.stdin = nil
	e2.nothingImported()
}

// TestImportParallelDefault: import encodes (and checks, when it seals) on
// every core by default, and its help says what that costs in memory.
// Before, --parallel was 1 by default: re-encoding ran one encoder.
func TestImportParallelDefault(t *testing.T) {
	t.Parallel()
	cmd := newApp().importCmd()
	if got, want := cmd.Flags().Lookup("parallel").DefValue, strconv.Itoa(runtime.GOMAXPROCS(0)); got != want {
		t.Errorf("--parallel defaults to %s, want %s (every core)", got, want)
	}
	if !strings.Contains(cmd.Long, "(n+1)") && !strings.Contains(cmd.Long, "n+1\nrow groups") {
		t.Errorf("import's help does not state the memory bound of n encoders:\n%s", cmd.Long)
	}
}
