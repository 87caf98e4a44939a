package main

import (
	"errors"
	"maps"
	"os"
	"strings"
	"testing"
)

// TestKMSAWSURL: awskms:// URLs parse strictly: a key (ID, alias or ARN)
// and only the known parameters, each once; anything else is a usage error.
func TestKMSAWSURL(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		url  string
		want awsKMSURL
	}{
		{"awskms://1234abcd-12ab-34cd-56ef-1234567890ab?region=us-east-1",
			awsKMSURL{keyID: "1234abcd-12ab-34cd-56ef-1234567890ab", region: "us-east-1"}},
		{"awskms://alias/ring?awssdk=v2&region=eu-west-3&endpoint=http://127.0.0.1:8080",
			awsKMSURL{keyID: "alias/ring", region: "eu-west-3", endpoint: "http://127.0.0.1:8080"}},
		{"awskms:///arn:aws:kms:us-east-1:111122223333:key/1234abcd?profile=ops&context_app=sop-pme",
			awsKMSURL{keyID: "arn:aws:kms:us-east-1:111122223333:key/1234abcd", profile: "ops", context: map[string]string{"app": "sop-pme"}}},
	} {
		got, err := parseAWSKMSURL(c.url)
		if err != nil {
			t.Errorf("%s: %v", c.url, err)
			continue
		}
		if got.keyID != c.want.keyID || got.region != c.want.region || got.endpoint != c.want.endpoint ||
			got.profile != c.want.profile || !maps.Equal(got.context, c.want.context) {
			t.Errorf("%s: got %+v, want %+v", c.url, got, c.want)
		}
	}
	for name, u := range map[string]string{
		"no key":           "awskms://?region=us-east-1",
		"no key, slashes":  "awskms:///?region=us-east-1",
		"doubled region":   "awskms://k?region=us-east-1&region=eu-west-1",
		"doubled context":  "awskms://k?context_a=1&context_a=2",
		"unknown":          "awskms://k?region=us-east-1&regoin=eu-west-1",
		"gocloud-only":     "awskms://k?region=us-east-1&dualstack=true",
		"empty value":      "awskms://k?region=",
		"empty context":    "awskms://k?context_=x",
		"SDK v1":           "awskms://k?awssdk=v1",
		"bad endpoint":     "awskms://k?endpoint=127.0.0.1:8080",
		"endpoint user":    "awskms://k?endpoint=http://u:p@127.0.0.1:8080",
		"user":             "awskms://u:p@k?region=us-east-1",
		"fragment":         "awskms://k?region=us-east-1#x",
		"opaque":           "awskms:k?region=us-east-1",
		"bad query escape": "awskms://k?region=%zz",
		"other scheme":     "gcpkms://k",
	} {
		_, err := parseAWSKMSURL(u)
		var ue *usageError
		if !errors.As(err, &ue) {
			t.Errorf("%s: %s: got %v, want a usage error", name, u, err)
		}
	}
}

// TestKMSInstallVersion: .ci/install-kms installs the local-kms version
// TestKMSReal looks for.
func TestKMSInstallVersion(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../.ci/install-kms")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "\nLOCAL_KMS_VERSION="+localKMSVersion+"\n") {
		t.Errorf(".ci/install-kms does not install local-kms %s, the version TestKMSReal looks for", localKMSVersion)
	}
}
