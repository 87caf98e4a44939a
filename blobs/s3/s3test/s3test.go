// Package s3test starts a real S3 server for tests: versitygw (Apache-2.0),
// on 127.0.0.1 only, with a posix backend in the test's temporary
// directory. The posix backend keeps an object as the plain file
// Dir/<bucket>/<key>, so a test can lie as the server does: flip a byte, cut
// a file short, swap two objects, and check that every read through the
// store fails verification against the storage_id (SOP-PME-1 Section 11.10).
//
// It is the one place that knows how to find and start the server, for the
// tests of package s3 and of the sop-pme command. .ci/install-servers
// builds the binary once per version into $HOME/.cache/sop-pme/bin.
package s3test

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Version is the versitygw version the tests run against; it must be the
// one .ci/install-servers installs.
const Version = "v1.8.0"

// Binary returns the versitygw binary: $SOP_PME_VERSITYGW, else the one
// .ci/install-servers installs. Without one the test is skipped, except
// under CI=true, where a missing server is a failure.
func Binary(tb testing.TB) string {
	tb.Helper()
	p := os.Getenv("SOP_PME_VERSITYGW")
	if p == "" {
		home, _ := os.UserHomeDir()
		p = filepath.Join(home, ".cache", "sop-pme", "bin", "versitygw-"+Version, "versitygw")
	}
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("versitygw not found at %s (run .ci/install-servers): %v", p, err)
		}
		tb.Skipf("versitygw not found at %s (run .ci/install-servers)", p)
	}
	return p
}

// A Server is a versitygw on 127.0.0.1 with a posix backend, holding one
// bucket. The test's cleanup stops it.
type Server struct {
	Dir      string // the posix root; the bucket is Dir/Bucket
	Endpoint string // http://127.0.0.1:PORT
	Bucket   string

	cmd  *exec.Cmd
	done chan struct{}
}

// Start starts a server that takes the credentials access and secret, with
// an empty bucket. A free port found may be taken by another process before
// versitygw binds it, so Start tries three ports before it fails the test.
func Start(tb testing.TB, access, secret, bucket string) *Server {
	tb.Helper()
	bin := Binary(tb)
	dir := tb.TempDir()
	if err := os.Mkdir(filepath.Join(dir, bucket), 0o755); err != nil {
		tb.Fatal(err)
	}
	for try := 1; ; try++ {
		s, err := tryStart(tb, bin, dir, access, secret)
		if err == nil {
			s.Bucket = bucket
			return s
		}
		if try == 3 {
			tb.Fatal(err)
		}
		tb.Logf("versitygw, attempt %d: %v", try, err)
	}
}

func tryStart(tb testing.TB, bin, dir, access, secret string) (*Server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	var out bytes.Buffer
	cmd := exec.Command(bin, "--access", access, "--secret", secret, "--port", addr, "posix", dir)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &Server{Dir: dir, Endpoint: "http://" + addr, cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(s.done) }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(s.Endpoint + "/")
		if err == nil {
			resp.Body.Close()
			tb.Cleanup(s.Stop)
			return s, nil
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("versitygw exited before answering: %s", out.Bytes())
		default:
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("versitygw does not answer at %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop ends the server (its own process) and waits for it; a second Stop
// does nothing.
func (s *Server) Stop() {
	select {
	case <-s.done:
		return
	default:
	}
	s.cmd.Process.Kill()
	<-s.done
}

// CPUTime returns the user and system CPU time the server has used so far,
// from /proc (Linux; 0 elsewhere or if it cannot be read), in steps of
// 10 ms (USER_HZ): benchmarks report it beside their own, since versitygw
// shares the machine's cores with the client it serves.
func (s *Server) CPUTime() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// The fields after the command name, which is in parentheses: utime
	// and stime are the 12th and 13th of them (14 and 15 of the line).
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(u+st) * (time.Second / 100)
}
