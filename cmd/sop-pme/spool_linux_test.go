package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/sovm/sop-pme/internal/testkit/testtables"
)

// spoolFD waits (up to a minute) until the process pid holds open a file
// under dir that holds bytes (plaintext), and returns its link. (The file
// is named for a moment after it is created, empty: the test looks once
// it holds some of the input.)
func spoolFD(t *testing.T, pid int, dir string) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		for _, fd := range fds {
			p := fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())
			l, err := os.Readlink(p)
			if err != nil || !strings.HasPrefix(l, dir+string(os.PathSeparator)) {
				continue
			}
			if fi, err := os.Stat(p); err == nil && fi.Size() > 0 {
				return l
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("process %d holds no file with bytes under %s", pid, dir)
	return ""
}

// TestImportSpoolUnnamed: while import spools a Parquet file from stdin,
// the spool has no name: the process holds it open, deleted, and the
// temporary directory is empty. So an import killed mid-spool (SIGKILL, no
// handler runs) or interrupted (SIGINT) leaves nothing behind, and
// publishes nothing.
func TestImportSpoolUnnamed(t *testing.T) {
	t.Parallel()
	rec := testtables.Record(testtables.AllTypes(), 900, 9)
	defer rec.Release()
	plain := plainParquet(t, rec, parquet.WithMaxRowGroupLength(300))
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			e := newEnv(t)
			tmp := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, e.binary(), "import", "--assign-field-ids", "-")
			cmd.Env = append(e.vars, "SOP_PME_STORE="+e.store, "TMPDIR="+tmp)
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Half the file: the import waits for the rest.
			if _, err := stdin.Write(plain[:len(plain)/2]); err != nil {
				t.Fatal(err)
			}
			link := spoolFD(t, cmd.Process.Pid, tmp)
			if !strings.HasSuffix(link, " (deleted)") {
				t.Errorf("the spool has a name while it holds plaintext: %s", link)
			}
			filepath.WalkDir(tmp, func(p string, d os.DirEntry, err error) error {
				if p != tmp {
					t.Errorf("while spooling: %s in the temporary directory", p)
				}
				return nil
			})
			cmd.Process.Signal(sig)
			if sig == syscall.SIGINT {
				// The import stops at its next read of stdin.
				stdin.Write(plain[len(plain)/2:])
			}
			stdin.Close()
			if err := cmd.Wait(); err == nil {
				t.Errorf("import ended well after %v", sig)
			}
			emptyDir(t, tmp, "after "+sig.String())
			e.nothingImported()
		})
	}
}

// TestImportParquetFIFO: a Parquet file read from a FIFO given by path is
// spooled and sealed byte for byte, as one piped to stdin is (before, it
// was re-encoded, "a layout the sealer does not take", having failed to
// read it at random), and the spool is gone after it.
func TestImportParquetFIFO(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tmp := t.TempDir()
	rec := testtables.Record(testtables.AllTypes(), 900, 9)
	defer rec.Release()
	plain := plainParquet(t, rec, parquet.WithMaxRowGroupLength(300))
	fifo := filepath.Join(t.TempDir(), "in.parquet")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err == nil {
			_, err = f.Write(plain)
			f.Close()
		}
		done <- err
	}()
	r := e.run([]string{"SOP_PME_STORE=" + e.store, "TMPDIR=" + tmp}, "import", "--json", "--assign-field-ids", fifo)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if r.code != 0 {
		t.Fatalf("import FIFO: %s", r)
	}
	var res importResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("import --json: %v\n%s", err, r)
	}
	if res.Path != pathSealed || res.RowGroups != 3 || res.Rows != 900 {
		t.Errorf("Parquet from a FIFO: path %q (%q), %d row groups, %d rows; want sealed, 3 row groups, 900 rows", res.Path, res.ReencodeReason, res.RowGroups, res.Rows)
	}
	emptyDir(t, tmp, "after the import")
}
