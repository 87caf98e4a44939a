package s3

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
)

const (
	dataExt     = ".data"
	outboardExt = ".obao4"

	// DefaultPartSize is the size in bytes of the parts of a multipart
	// upload, and the largest object sent in a single PUT.
	DefaultPartSize = 8 << 20

	// MinPartSize is the smallest part size S3 accepts (for every part
	// but the last), in bytes.
	MinPartSize = 5 << 20

	// DefaultMaxAttempts bounds the attempts of one request: the first and
	// three retries, on 5xx answers, throttling and connection errors,
	// with exponential backoff of at most maxBackoff between them.
	DefaultMaxAttempts = 4

	maxBackoff = 500 * time.Millisecond

	// uploadConcurrency is the number of parts uploaded at once.
	uploadConcurrency = 4

	// sizeCacheMax bounds the sizes a Store remembers.
	sizeCacheMax = 4096
)

// A Store is a blob store in an S3 bucket (see the package documentation).
// It is safe for concurrent use by multiple goroutines, and several
// processes may share a bucket and prefix: imports are conditional writes
// (If-None-Match: *), so two imports of the same bytes never overwrite one
// another (only a copy found damaged is rewritten, see [Store.Create]),
// and every key names its content. There are no locks: see
// [Store.Delete] for the one race that matters.
type Store struct {
	client   *s3.Client
	bucket   string
	prefix   string // "" or ending in "/"
	partSize int64
	spoolDir string
	wholeOb  uint64 // the largest outboard a slice fetches whole (WithWholeOutboard)

	mu    sync.Mutex
	sizes map[storageid.ID]uint64 // sizes learnt from HEAD; checked at each GET

	outboards outboardCache // whole outboards that matched their storage_id
	pairs     pairCache     // parent pairs of large outboards that chain to their storage_id
	plans     plans         // what readers said they are about to read (Plan)
}

var (
	_ blobs.Store    = (*Store)(nil)
	_ verify.Source  = (*Store)(nil)
	_ verify.Planner = (*Store)(nil)
)

// An Option configures [Open].
type Option func(*options) error

type options struct {
	payload     payloadMode
	creds       aws.CredentialsProvider
	httpClient  *http.Client
	partSize    int64
	maxAttempts int
	spoolDir    string
	wholeOb     uint64
}

// WithCredentials uses p for credentials instead of the default chain
// (environment, shared files, SSO, instance roles).
func WithCredentials(p aws.CredentialsProvider) Option {
	return func(o *options) error {
		if p == nil {
			return errors.New("s3: nil credentials provider")
		}
		o.creds = p
		return nil
	}
}

// WithHTTPClient sends requests through c instead of a client with the
// package's timeouts (5 s to connect, 60 s for a response's headers).
// The SDK refuses a plain *http.Client where AWS_CA_BUNDLE is set.
func WithHTTPClient(c *http.Client) Option {
	return func(o *options) error {
		if c == nil {
			return errors.New("s3: nil HTTP client")
		}
		o.httpClient = c
		return nil
	}
}

// WithPartSize sets the size of the parts of multipart uploads, and the
// largest object sent in one PUT, in bytes: at least MinPartSize, at most
// 5 GiB. It is DefaultPartSize by default.
func WithPartSize(n int64) Option {
	return func(o *options) error {
		if n < MinPartSize || n > 5<<30 {
			return fmt.Errorf("s3: part size %d outside [%d, %d]", n, MinPartSize, int64(5<<30))
		}
		o.partSize = n
		return nil
	}
}

// WithSignedPayload has each upload's body signed (SigV4 over its
// SHA-256), for a plain-HTTP endpoint on a network an attacker may alter.
// By default bodies are sent unsigned (UNSIGNED-PAYLOAD, as the SDK does
// over HTTPS) with a CRC32 checksum the server checks (a body altered in
// transit is refused); signing added 10-25% to the import time against
// versitygw (SHA-256 of every body on both sides). A body
// altered in transit despite the CRC is not silent either way: its reads
// fail verification against the storage_id, and a later import of the same
// content finds the copy damaged and replaces it.
func WithSignedPayload() Option {
	return func(o *options) error {
		o.payload = payloadSigned
		return nil
	}
}

// MaxWholeOutboard is the largest outboard WithWholeOutboard may have
// fetched whole: that of a 16 GiB object.
const MaxWholeOutboard = 64 << 20

// WithWholeOutboard has a Store fetch an object's outboard whole, in one
// GET on the first read of the object, when it is at most n bytes (the
// outboard is 1/256 of the object: 4 MiB for 1 GiB), and keep it once it
// hashes up to the storage_id; every later slice of that object is then
// one GET of .data. By default only outboards of at most 256 KiB (objects
// of 64 MiB) are fetched whole, and a larger one only in the runs of
// parent pairs each read needs (see [Store.Slice] and [Store.Plan]).
//
// It is a choice between requests and bytes. A one-column projection of a
// 1 GB object (100 row groups, bench/s3.txt) makes 103 requests with
// WithWholeOutboard(MaxWholeOutboard), one a row group and three to open
// it, and fetches 3.0 MB more outboard than it needs (1.9 % over the
// issue's byte bound of the column's chunks, the footer and two groups a
// range); by default it makes about 260 requests and fetches only the pairs its
// ranges need. Choose it where requests cost more than bytes (a store that
// bills per request and not for egress, or one far away: each request is
// a round trip). The Store keeps whole outboards up to
// max(8 MiB, 4n) in all; n is at most MaxWholeOutboard.
func WithWholeOutboard(n int64) Option {
	return func(o *options) error {
		if n < 0 || n > MaxWholeOutboard {
			return fmt.Errorf("s3: whole outboard limit %d outside [0, %d]", n, MaxWholeOutboard)
		}
		o.wholeOb = uint64(n)
		return nil
	}
}

// WithMaxAttempts bounds the attempts of each request (1 means no retry);
// it is DefaultMaxAttempts by default.
func WithMaxAttempts(n int) Option {
	return func(o *options) error {
		if n < 1 || n > 20 {
			return fmt.Errorf("s3: max attempts %d outside [1, 20]", n)
		}
		o.maxAttempts = n
		return nil
	}
}

// WithSpoolDir sets the directory in which an import larger than one part
// is spooled until Commit (see [Store.Create]); os.TempDir() by default.
func WithSpoolDir(dir string) Option {
	return func(o *options) error {
		o.spoolDir = dir
		return nil
	}
}

// Open opens the store that rawURL names, in gocloud.dev's s3blob form:
//
//	s3://bucket/prefix?endpoint=http://127.0.0.1:7070&region=us-east-1&use_path_style=true
//
// The path, if any, is the key prefix under which the objects are kept.
// The query parameters are endpoint (an S3-compatible server instead of
// AWS), region, use_path_style (or s3ForcePathStyle: bucket in the path,
// not the host name), profile (a profile of the shared AWS files),
// disable_https and awssdk (accepted for gocloud compatibility; only v2
// exists here), and one of this package: whole_outboard=N, as
// [WithWholeOutboard](N). Any other parameter, and credentials in the URL, are
// refused. Credentials come from the default AWS chain or
// [WithCredentials].
//
// Open checks that the bucket exists and is reachable (HEAD bucket): a
// bucket that does not exist gives an error matching blobs.ErrNoStore.
// Open never creates a bucket.
func Open(ctx context.Context, rawURL string, opts ...Option) (*Store, error) {
	o := options{partSize: DefaultPartSize, maxAttempts: DefaultMaxAttempts, payload: payloadUnsignedCRC, wholeOb: wholeOutboardMax}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		// url's errors quote the URL; say only what is wrong.
		return nil, errors.New("s3: store URL does not parse")
	}
	if u.Scheme != "s3" {
		return nil, fmt.Errorf("s3: store URL scheme %q, want s3", u.Scheme)
	}
	if u.User != nil {
		return nil, errors.New("s3: store URL must not hold credentials (use the AWS credential chain)")
	}
	if u.Host == "" {
		return nil, errors.New("s3: store URL names no bucket")
	}
	var (
		endpoint, region, profile string
		pathStyle, disableHTTPS   bool
	)
	for k, vs := range u.Query() {
		if len(vs) != 1 {
			return nil, fmt.Errorf("s3: store URL parameter %q given %d times", k, len(vs))
		}
		v := vs[0]
		switch k {
		case "endpoint":
			endpoint = v
		case "region":
			region = v
		case "profile":
			profile = v
		case "use_path_style", "s3ForcePathStyle":
			if pathStyle, err = strconv.ParseBool(v); err != nil {
				return nil, fmt.Errorf("s3: store URL parameter %s: not a boolean", k)
			}
		case "disable_https":
			if disableHTTPS, err = strconv.ParseBool(v); err != nil {
				return nil, fmt.Errorf("s3: store URL parameter %s: not a boolean", k)
			}
		case "whole_outboard":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("s3: store URL parameter whole_outboard: not a number of bytes")
			}
			if err := WithWholeOutboard(n)(&o); err != nil {
				return nil, err
			}
		case "awssdk":
			if v != "v2" && v != "V2" {
				return nil, fmt.Errorf("s3: store URL parameter awssdk: only v2 is supported")
			}
		default:
			return nil, fmt.Errorf("s3: store URL parameter %q is not supported", k)
		}
	}
	if endpoint != "" {
		eu, err := url.Parse(endpoint)
		if err != nil || (eu.Scheme != "http" && eu.Scheme != "https") || eu.Host == "" || eu.User != nil {
			return nil, errors.New("s3: store URL parameter endpoint: want http(s)://host[:port] without credentials")
		}
	}
	prefix := strings.Trim(u.Path, "/")
	if prefix != "" {
		prefix += "/"
	}

	var hc config.HTTPClient = newHTTPClient()
	if o.httpClient != nil {
		hc = o.httpClient
	}
	load := []func(*config.LoadOptions) error{
		config.WithHTTPClient(hc),
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(so *retry.StandardOptions) {
				so.MaxAttempts = o.maxAttempts
				so.MaxBackoff = maxBackoff
				so.RateLimiter = ratelimit.None
			})
		}),
	}
	if region != "" {
		load = append(load, config.WithRegion(region))
	}
	if profile != "" {
		load = append(load, config.WithSharedConfigProfile(profile))
	}
	if o.creds != nil {
		load = append(load, config.WithCredentialsProvider(o.creds))
	}
	cfg, err := config.LoadDefaultConfig(ctx, load...)
	if err != nil {
		return nil, fmt.Errorf("s3: loading AWS configuration: %w", err)
	}
	client := s3.NewFromConfig(cfg, func(so *s3.Options) {
		if endpoint != "" {
			so.BaseEndpoint = aws.String(endpoint)
		}
		so.UsePathStyle = pathStyle
		so.EndpointOptions.DisableHTTPS = disableHTTPS
		// Integrity of what is read is BLAKE3's job (verify): no CRC of
		// downloads. Uploads carry a CRC32 the server checks, unsigned
		// (see WithSignedPayload).
		so.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		so.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		switch o.payload {
		case payloadUnsignedCRC:
			so.APIOptions = append(so.APIOptions, unsignedPayload)
			so.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenSupported
		}
	})
	s := &Store{
		client:   client,
		bucket:   u.Host,
		prefix:   prefix,
		partSize: o.partSize,
		spoolDir: o.spoolDir,
		wholeOb:  o.wholeOb,
		sizes:    make(map[storageid.ID]uint64),
	}
	s.outboards.max = max(outboardCacheMax, 4*int(o.wholeOb))
	if _, err := client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(s.bucket)}); err != nil {
		if status(err) == http.StatusNotFound {
			return nil, fmt.Errorf("%w: s3 bucket %q does not exist", blobs.ErrNoStore, s.bucket)
		}
		return nil, fmt.Errorf("s3: bucket %q: %w", s.bucket, err)
	}
	return s, nil
}

// newHTTPClient returns the default client: bounded connect and
// response-header times; bodies are bounded by the caller's ctx. It is
// the SDK's buildable client, so that AWS_CA_BUNDLE still applies.
func newHTTPClient() *awshttp.BuildableClient {
	return awshttp.NewBuildableClient().
		WithDialerOptions(func(d *net.Dialer) {
			d.Timeout = 5 * time.Second
			d.KeepAlive = 30 * time.Second
		}).
		WithTransportOptions(func(t *http.Transport) {
			t.ResponseHeaderTimeout = 60 * time.Second
			t.MaxIdleConnsPerHost = 16
		})
}

func (s *Store) dataKey(id storageid.ID) string     { return s.prefix + id.String() + dataExt }
func (s *Store) outboardKey(id storageid.ID) string { return s.prefix + id.String() + outboardExt }

// status returns the HTTP status of a failed request, or 0.
func status(err error) int {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// Size returns the size in bytes of object id, as the server states it
// (HEAD): untrusted, like everything the server says, until a verified
// read proves it. It returns an error matching blobs.ErrNotFound if the
// store does not hold id.
func (s *Store) Size(ctx context.Context, id storageid.ID) (uint64, error) {
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(s.dataKey(id))})
	if err != nil {
		if status(err) == http.StatusNotFound {
			return 0, fmt.Errorf("%w: %s", blobs.ErrNotFound, id)
		}
		return 0, fmt.Errorf("s3: size of %s: %w", id, err)
	}
	if out.ContentLength == nil || *out.ContentLength < 0 {
		return 0, fmt.Errorf("s3: size of %s: the server stated none", id)
	}
	size := uint64(*out.ContentLength)
	s.remember(id, size)
	return size, nil
}

// knownSize returns the size of id from the cache.
func (s *Store) knownSize(id storageid.ID) (uint64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	size, ok := s.sizes[id]
	return size, ok
}

func (s *Store) remember(id storageid.ID, size uint64) {
	s.mu.Lock()
	if len(s.sizes) >= sizeCacheMax {
		clear(s.sizes)
	}
	s.sizes[id] = size
	s.mu.Unlock()
}

func (s *Store) forget(id storageid.ID) {
	s.mu.Lock()
	delete(s.sizes, id)
	s.mu.Unlock()
}

type payloadMode int

const (
	payloadUnsignedCRC payloadMode = iota
	payloadSigned
)

// unsignedPayload marks every request's payload UNSIGNED-PAYLOAD before
// the SDK's checksum middleware runs, which then computes only the CRC32
// (over plain HTTP it would compute the SHA-256 for SigV4 as well; over
// HTTPS the SDK sends unsigned payloads with trailing checksums itself).
func unsignedPayload(stack *middleware.Stack) error {
	return stack.Build.Add(middleware.BuildMiddlewareFunc("sop-pme/UnsignedPayload",
		func(ctx context.Context, in middleware.BuildInput, next middleware.BuildHandler) (middleware.BuildOutput, middleware.Metadata, error) {
			return next.HandleBuild(v4.SetPayloadHash(ctx, "UNSIGNED-PAYLOAD"), in)
		}), middleware.After)
}
