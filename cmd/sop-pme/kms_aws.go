package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/smithy-go"
	"github.com/sovm/sop-pme/keyring"
)

// The master of an awskms:// URL: an AWS KMS key, called through
// aws-sdk-go-v2 directly rather than through gocloud.dev/secrets/awskms.
// That driver names the key on Encrypt only. A symmetric KMS Decrypt that
// names no key opens a ciphertext under whichever key it was made with,
// if the credentials allow that key: the URL's key would then not be the
// one that opens the ring. Here Decrypt names the URL's key too, so a ring
// wrapped under another key, even one the credentials may use, is refused
// (IncorrectKeyException).
//
// The URL is awskms://KEY?region=R[&endpoint=URL][&profile=P][&awssdk=v2]
// [&context_NAME=VALUE...], where KEY is a key ID, an alias (alias/NAME),
// or an ARN (awskms:///arn:aws:kms:...). It is parsed strictly: an unknown
// or repeated parameter is a usage error. context_NAME=VALUE adds NAME to
// the EncryptionContext of every Encrypt and Decrypt (as gocloud's driver
// does), which then must be the same to open the ring. Credentials come
// from the SDK's default chain (the environment, the shared files,
// instance roles).

const awskmsScheme = "awskms://"

// awskmsTimeout bounds each KMS call, its retries included, so that a
// KMS that does not answer fails the command instead of hanging it.
const awskmsTimeout = 30 * time.Second

// awsKMSURL is a parsed awskms:// URL.
type awsKMSURL struct {
	keyID    string
	region   string
	endpoint string // "" for the SDK's default for the region
	profile  string
	context  map[string]string // the EncryptionContext, nil if none
}

// parseAWSKMSURL parses an awskms:// URL strictly (see above). Its errors
// are usage errors, naming the URL.
func parseAWSKMSURL(s string) (awsKMSURL, error) {
	var k awsKMSURL
	u, err := url.Parse(s)
	if err != nil {
		return k, usagef("not a URL: %s", clean(err))
	}
	if u.Scheme != "awskms" || u.Opaque != "" {
		return k, usagef("not an awskms://KEY URL")
	}
	if u.User != nil || u.Fragment != "" || u.RawFragment != "" {
		return k, usagef("an awskms:// URL has no user and no #fragment")
	}
	k.keyID = strings.TrimPrefix(u.Host+u.Path, "/")
	if k.keyID == "" {
		return k, usagef("no key: give awskms://KEY-ID, awskms://alias/NAME or awskms:///ARN")
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return k, usagef("bad query: %s", clean(err))
	}
	names := make([]string, 0, len(q))
	for name := range q {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		vs := q[name]
		if len(vs) != 1 {
			return k, usagef("parameter %s given %d times", name, len(vs))
		}
		v := vs[0]
		if v == "" {
			return k, usagef("parameter %s is empty", name)
		}
		switch {
		case name == "region":
			k.region = v
		case name == "endpoint":
			e, err := url.Parse(v)
			if err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" || e.User != nil {
				return k, usagef("endpoint %q is not an http:// or https:// URL", v)
			}
			k.endpoint = v
		case name == "profile":
			k.profile = v
		case name == "awssdk":
			if v != "v2" {
				return k, usagef("awssdk=%s: only the v2 SDK is built in", v)
			}
		case strings.HasPrefix(name, "context_") && len(name) > len("context_"):
			if k.context == nil {
				k.context = map[string]string{}
			}
			k.context[name[len("context_"):]] = v
		default:
			return k, usagef("unknown parameter %q (known: region, endpoint, profile, awssdk=v2, context_NAME)", name)
		}
	}
	return k, nil
}

// awsMaster is a keyring.Master held in AWS KMS.
type awsMaster struct {
	client *kms.Client
	u      awsKMSURL
}

var _ keyring.Master = (*awsMaster)(nil)

// openAWSKMS opens the master of an awskms:// URL. It reads the SDK's
// configuration but calls no KMS: a key that does not exist or is not
// usable fails at the first Encrypt or Decrypt.
func openAWSKMS(ctx context.Context, s string) (*awsMaster, error) {
	u, err := parseAWSKMSURL(s)
	if err != nil {
		return nil, err
	}
	opts := []func(*config.LoadOptions) error{
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = 3
				o.MaxBackoff = 2 * time.Second
			})
		}),
	}
	if u.region != "" {
		opts = append(opts, config.WithRegion(u.region))
	}
	if u.profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(u.profile))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, usagef("the AWS configuration: %s", clean(err))
	}
	if cfg.Region == "" {
		return nil, usagef("no AWS region: add region=REGION to the URL (or set AWS_REGION)")
	}
	client := kms.NewFromConfig(cfg, func(o *kms.Options) {
		if u.endpoint != "" {
			o.BaseEndpoint = aws.String(u.endpoint)
		}
	})
	return &awsMaster{client: client, u: u}, nil
}

// Encrypt wraps plaintext under the URL's key.
func (m *awsMaster) Encrypt(ctx context.Context, plaintext []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, awskmsTimeout)
	defer cancel()
	out, err := m.client.Encrypt(ctx, &kms.EncryptInput{
		KeyId:             aws.String(m.u.keyID),
		Plaintext:         plaintext,
		EncryptionContext: m.u.context,
	})
	if err != nil {
		return nil, kmsErr("Encrypt", err)
	}
	return out.CiphertextBlob, nil
}

// Decrypt opens ciphertext under the URL's key, and only under it.
func (m *awsMaster) Decrypt(ctx context.Context, ciphertext []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, awskmsTimeout)
	defer cancel()
	out, err := m.client.Decrypt(ctx, &kms.DecryptInput{
		KeyId:             aws.String(m.u.keyID),
		CiphertextBlob:    ciphertext,
		EncryptionContext: m.u.context,
	})
	if err != nil {
		return nil, kmsErr("Decrypt", err)
	}
	return out.Plaintext, nil
}

// A kmsError is a KMS call that failed: refused (the KMS's error code and
// message), or not answered (the SDK's error).
type kmsError struct {
	op  string
	err error
}

func (e *kmsError) Error() string {
	var ae smithy.APIError
	if errors.As(e.err, &ae) {
		if ae.ErrorMessage() == "" {
			return fmt.Sprintf("the KMS refused %s: %s", e.op, ae.ErrorCode())
		}
		return fmt.Sprintf("the KMS refused %s: %s: %s", e.op, ae.ErrorCode(), ae.ErrorMessage())
	}
	if errors.Is(e.err, context.DeadlineExceeded) {
		return fmt.Sprintf("the KMS did not answer %s within %v: %s", e.op, awskmsTimeout, e.err)
	}
	return fmt.Sprintf("the KMS did not answer %s: %s", e.op, e.err)
}

func (e *kmsError) Unwrap() error { return e.err }

func kmsErr(op string, err error) error {
	if errors.Is(err, context.Canceled) {
		return err // interrupted: exit 130, not a key failure
	}
	return &kmsError{op, err}
}
