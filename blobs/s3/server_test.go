package s3_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sovm/sop-pme/blobs/s3"
)

const (
	testAccess = "sop-pme-test-access"
	testSecret = "sop-pme-TEST-SECRET-do-not-print-Zq81x"
	testBucket = "sop-bucket"
	testPrefix = "objs/v1"
)

// versitygwPath returns the versitygw binary: $SOP_PME_VERSITYGW, else the
// one .ci/install-servers installs. Without one the test is skipped,
// except under CI=true, where it fails.
func versitygwPath(t testing.TB) string {
	t.Helper()
	p := os.Getenv("SOP_PME_VERSITYGW")
	if p == "" {
		home, _ := os.UserHomeDir()
		p = filepath.Join(home, ".cache", "sop-pme", "bin", "versitygw-v1.8.0", "versitygw")
	}
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("versitygw not found at %s (run .ci/install-servers): %v", p, err)
		}
		t.Skipf("versitygw not found at %s (run .ci/install-servers)", p)
	}
	return p
}

// A server is a versitygw on 127.0.0.1 with a posix backend in a
// temporary directory.
type server struct {
	t        testing.TB
	dir      string // the posix root; the bucket is dir/testBucket
	endpoint string
	cmd      *exec.Cmd
	done     chan struct{}
}

func startServer(t testing.TB) *server {
	t.Helper()
	bin := versitygwPath(t)
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, testBucket), 0o755); err != nil {
		t.Fatal(err)
	}
	// The free port found may be taken by another process before
	// versitygw binds it: try again with another, three times.
	for try := 1; ; try++ {
		s, err := tryStart(t, bin, dir)
		if err == nil {
			return s
		}
		if try == 3 {
			t.Fatal(err)
		}
		t.Logf("versitygw, attempt %d: %v", try, err)
	}
}

func tryStart(t testing.TB, bin, dir string) (*server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	var out bytes.Buffer
	cmd := exec.Command(bin, "--access", testAccess, "--secret", testSecret, "--port", addr, "posix", dir)
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{t: t, dir: dir, endpoint: "http://" + addr, cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(s.done) }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(s.endpoint + "/")
		if err == nil {
			resp.Body.Close()
			t.Cleanup(s.stop)
			return s, nil
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("versitygw exited before answering: %s", out.Bytes())
		default:
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("versitygw does not answer at %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop ends the server (its process, by its own pid) and waits for it.
func (s *server) stop() {
	select {
	case <-s.done:
		return
	default:
	}
	s.cmd.Process.Kill()
	<-s.done
}

func (s *server) url() string {
	return "s3://" + testBucket + "/" + testPrefix + "?endpoint=" + s.endpoint + "&region=us-east-1&use_path_style=true"
}

// path returns the file that holds key name (under the prefix).
func (s *server) path(name string) string {
	return filepath.Join(s.dir, testBucket, filepath.FromSlash(testPrefix), name)
}

func creds() s3.Option {
	return s3.WithCredentials(credentials.NewStaticCredentialsProvider(testAccess, testSecret, ""))
}

func (s *server) open(t testing.TB, opts ...s3.Option) *s3.Store {
	t.Helper()
	st, err := s3.Open(context.Background(), s.url(), append([]s3.Option{creds()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// countingTransport counts the HTTP requests sent.
type countingTransport struct {
	n    atomic.Int64
	base http.RoundTripper
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.base.RoundTrip(r)
}

func itoa(n int) string { return strconv.Itoa(n) }

func newTransport() http.RoundTripper {
	return http.DefaultTransport.(*http.Transport).Clone()
}

type atomicBool = atomic.Bool

// credentialsFunc is a credentials provider whose credentials expire at
// once, so that each request asks it again.
type credentialsFunc func() (access, secret string)

func (f credentialsFunc) Retrieve(context.Context) (aws.Credentials, error) {
	a, s := f()
	return aws.Credentials{AccessKeyID: a, SecretAccessKey: s, CanExpire: true, Expires: time.Now().Add(time.Millisecond)}, nil
}

// incompleteUploads returns the number of multipart uploads in progress
// in the bucket.
func incompleteUploads(t testing.TB, srv *server) int {
	t.Helper()
	c := awss3.New(awss3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(testAccess, testSecret, ""),
	})
	out, err := c.ListMultipartUploads(context.Background(), &awss3.ListMultipartUploadsInput{Bucket: aws.String(testBucket)})
	if err != nil {
		t.Fatal(err)
	}
	return len(out.Uploads)
}
