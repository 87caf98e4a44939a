package s3_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sovm/sop-pme/blobs/s3"
	"github.com/sovm/sop-pme/blobs/s3/s3test"
)

const (
	testAccess = "sop-pme-test-access"
	testSecret = "sop-pme-TEST-SECRET-do-not-print-Zq81x"
	testBucket = "sop-bucket"
	testPrefix = "objs/v1"
)

// A server is s3test's versitygw, with the bucket testBucket.
type server struct {
	*s3test.Server
	dir      string // the posix root; the bucket is dir/testBucket
	endpoint string
}

func startServer(t testing.TB) *server {
	t.Helper()
	s := s3test.Start(t, testAccess, testSecret, testBucket)
	return &server{Server: s, dir: s.Dir, endpoint: s.Endpoint}
}

// stop ends the server and waits for it.
func (s *server) stop() { s.Stop() }

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

// TestInstallVersion: .ci/install-servers installs the versitygw version
// the tests look for.
func TestInstallVersion(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", ".ci", "install-servers"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "VERSITYGW_VERSION=" + s3test.Version + "\n"; !strings.Contains(string(b), want) {
		t.Fatalf(".ci/install-servers does not say %q", strings.TrimSpace(want))
	}
}
