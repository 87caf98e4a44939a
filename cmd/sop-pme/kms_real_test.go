package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/sovm/sop-pme/keyring"
	"gocloud.dev/secrets"
	_ "gocloud.dev/secrets/awskms" // only to show why kms_aws.go exists
)

// localKMSVersion is the local-kms (github.com/nsmithuk/local-kms, MIT, the
// AWS KMS API) that .ci/install-kms installs into
// $HOME/.cache/sop-pme/bin/local-kms-VERSION/; $SOP_PME_LOCAL_KMS names
// another binary.
const localKMSVersion = "v0.0.0-20260228092603-2a5e92d09ab6"

// The test's AWS credentials: local-kms takes any. The secret must appear
// in no output of the command.
const (
	testAWSKeyID  = "AKIASOPPMETEST000001"
	testAWSSecret = "sopPmeTestSecret/9f3c1e7a2b5d4c6e8f0a1b2c3d4e5f6a"
)

// localKMSTool is local-kms, which .ci/install-kms installs.
var localKMSTool = cachedTool{name: "local-kms", env: "SOP_PME_LOCAL_KMS",
	rel: "local-kms-" + localKMSVersion + "/local-kms", install: ".ci/install-kms"}

// TestKMSReal runs the command against a real AWS KMS API server,
// local-kms, with awskms:// URLs: import and export under a KMS key; keys
// rotate from a KEK file to a KMS key, and --rekey; refused with exit 5: a
// ring wrapped under another enabled key, a key that does not exist, a
// disabled key, and a KMS that is not running (in bounded time). The AWS
// secret key is in no output.
//
// local-kms listens on every interface, and has no option to listen on
// loopback only. So the test runs again, local-kms and every command with
// it, in a network namespace of its own that has only loopback (unshare -n,
// then ip link set lo up): nothing outside can reach the server, and
// nothing inside reaches out. The binary is built, and the modules read,
// before it enters the namespace.
func TestKMSReal(t *testing.T) {
	if !inLoopbackNetns(t, "TestKMSReal", []string{"SOP_PME_TEST_SOP_BINARY=" + sopBinary(t), "SOP_PME_LOCAL_KMS=" + localKMSTool.path(t)}, localKMSTool.need) {
		return
	}
	kmsInNetns(t)
}

// kmsInNetns is TestKMSReal inside the network namespace.
func kmsInNetns(t *testing.T) {
	start := time.Now()
	port := freePort(t)
	endpoint := fmt.Sprintf("http://127.0.0.1:%d", port)
	srv := startLocalKMS(t, os.Getenv("SOP_PME_LOCAL_KMS"), port)
	t.Logf("local-kms ready in %v", time.Since(start).Round(time.Millisecond))

	t.Setenv("AWS_ACCESS_KEY_ID", testAWSKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", testAWSSecret)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	client := kms.New(kms.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider(testAWSKeyID, testAWSSecret, ""),
	})
	ctx := context.Background()
	newKey := func() string {
		t.Helper()
		out, err := client.CreateKey(ctx, &kms.CreateKeyInput{Description: aws.String("sop-pme TestKMSReal")})
		if err != nil {
			t.Fatalf("CreateKey: %v", err)
		}
		return *out.KeyMetadata.KeyId
	}
	url := func(key string) string {
		return "awskms://" + key + "?awssdk=v2&region=us-east-1&endpoint=" + endpoint
	}
	keyA, keyB, keyC := newKey(), newKey(), newKey()

	e := newEnv(t)
	e.bin = os.Getenv("SOP_PME_TEST_SOP_BINARY")
	e.vars = append(e.vars, "AWS_ACCESS_KEY_ID="+testAWSKeyID, "AWS_SECRET_ACCESS_KEY="+testAWSSecret, "AWS_EC2_METADATA_DISABLED=true")
	var outputs []string
	sop := func(args ...string) result {
		t.Helper()
		r := e.sop(args...)
		outputs = append(outputs, r.stdout, r.stderr)
		return r
	}
	refused := func(name string, want []string, args ...string) {
		t.Helper()
		r := sop(args...)
		checkFailure(t, r, exitKey, want, append([]string{name}, args...))
		t.Logf("%s: exit %d: %s", name, r.code, strings.TrimSpace(r.stderr))
	}

	// Import under key A, then read back under it, by flag and by
	// $SOP_PME_KMS.
	ringA := filepath.Join(t.TempDir(), "ring")
	ids := e.importSome(2, "--kms", url(keyA), "--keyring", ringA)
	e.readsAll(ids, nil, "--kms", url(keyA), "--keyring", ringA)
	e.readsAll(ids, []string{"SOP_PME_KMS=" + url(keyA), "SOP_PME_KEYRING=" + ringA})

	// Another enabled key the credentials may use does not open a ring
	// wrapped under A; nor does a key that does not exist.
	refused("key B", []string{"KMS key awskms://" + keyB, "refused Decrypt"}, "export", ids[0], "--format", "csv", "--kms", url(keyB), "--keyring", ringA)
	refused("missing key", []string{"refused Decrypt"}, "export", ids[0], "--format", "csv", "--kms", url(randomKeyID()), "--keyring", ringA)
	showGocloudOpensAny(t, ringA, url(keyB))

	// keys rotate: from a KEK file to key B, then --rekey onto key C.
	kek, ringK := filepath.Join(t.TempDir(), "kek"), filepath.Join(t.TempDir(), "ring")
	idsK := e.importSome(2, "--kek", kek, "--keyring", ringK)
	r := sop("keys", "rotate", "--kek", kek, "--keyring", ringK, "--to-kms", url(keyB))
	if r.code != 0 || !strings.Contains(r.stdout, "ring key") {
		t.Fatalf("rotate --to-kms: %s", r)
	}
	e.readsAll(idsK, nil, "--kms", url(keyB), "--keyring", ringK)
	refused("KEK after rotate", []string{"wrong key"}, "export", idsK[0], "--format", "csv", "--kek", kek, "--keyring", ringK)
	r = sop("keys", "rotate", "--kms", url(keyB), "--to-kms", url(keyC), "--rekey", "--keyring", ringK, "--json")
	var res rotateResult
	if err := json.Unmarshal([]byte(r.stdout), &res); r.code != 0 || err != nil || !res.Rekeyed || res.DEKs != 2 {
		t.Fatalf("rotate --rekey: %v %s", err, r)
	}
	e.readsAll(idsK, nil, "--kms", url(keyC), "--keyring", ringK)
	refused("old key B after rotate", []string{"refused Decrypt"}, "export", idsK[0], "--format", "csv", "--kms", url(keyB), "--keyring", ringK)

	// A disabled key.
	if _, err := client.DisableKey(ctx, &kms.DisableKeyInput{KeyId: aws.String(keyC)}); err != nil {
		t.Fatalf("DisableKey: %v", err)
	}
	refused("disabled key", []string{"refused Decrypt", "DisabledException"}, "export", idsK[0], "--format", "csv", "--kms", url(keyC), "--keyring", ringK)

	// A KMS that is not running: exit 5 in bounded time.
	srv.Process.Kill()
	srv.Wait()
	t0 := time.Now()
	refused("stopped KMS", []string{"did not answer Decrypt"}, "export", ids[0], "--format", "csv", "--kms", url(keyA), "--keyring", ringA)
	if d := time.Since(t0); d > 60*time.Second {
		t.Errorf("against a stopped KMS the command took %v (want < 60 s)", d)
	} else {
		t.Logf("against a stopped KMS: exit 5 after %v", d.Round(time.Millisecond))
	}

	for _, o := range outputs {
		if strings.Contains(o, testAWSSecret) || strings.Contains(o, testAWSSecret[:16]) {
			t.Errorf("the AWS secret key is in an output:\n%s", o)
		}
	}
	t.Logf("TestKMSReal: %v in the namespace", time.Since(start).Round(time.Millisecond))
}

// showGocloudOpensAny logs whether gocloud.dev's awskms driver, which names
// no key on Decrypt, opens the ring's wrapped ring key under a URL naming
// another key: the reason kms_aws.go exists. It asserts nothing: a later
// gocloud.dev may name the key.
func showGocloudOpensAny(t *testing.T, ring, otherURL string) {
	t.Helper()
	w := wrappedRingKey(t, ring)
	k, err := secrets.OpenKeeper(context.Background(), otherURL)
	if err != nil {
		t.Logf("gocloud.dev awskms: %v", err)
		return
	}
	defer k.Close()
	if _, err := k.Decrypt(context.Background(), w); err == nil {
		t.Logf("gocloud.dev awskms: a ring key wrapped under key A opens under a URL naming key B (Decrypt names no key); sop-pme's own awskms master refuses it")
	} else {
		t.Logf("gocloud.dev awskms refuses a ring key wrapped under key A under a URL naming key B: %v", err)
	}
}

// wrappedRingKey returns the ring key of the ring at path as wrapped under
// its master, through a Master that records what it is asked to decrypt.
func wrappedRingKey(t *testing.T, path string) []byte {
	t.Helper()
	rec := &recordMaster{}
	if _, err := keyring.Open(context.Background(), path, rec, keyring.WithReadOnly()); err == nil {
		t.Fatal("the keyring opened under a master that opens nothing")
	}
	if rec.ciphertext == nil {
		t.Fatal("the keyring asked its master to decrypt nothing")
	}
	return rec.ciphertext
}

type recordMaster struct{ ciphertext []byte }

func (m *recordMaster) Encrypt(ctx context.Context, p []byte) ([]byte, error) {
	return nil, fmt.Errorf("recordMaster: no Encrypt")
}

func (m *recordMaster) Decrypt(ctx context.Context, c []byte) ([]byte, error) {
	m.ciphertext = append([]byte(nil), c...)
	return nil, fmt.Errorf("recordMaster: recorded")
}

func randomKeyID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// freePort returns a TCP port free on 127.0.0.1 now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startLocalKMS starts local-kms on port with its data in a temporary
// directory, waits until it accepts connections, and stops it at the end of
// the test.
func startLocalKMS(t *testing.T, bin string, port int) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port), "KMS_DATA_PATH="+t.TempDir())
	logf, err := os.Create(filepath.Join(t.TempDir(), "local-kms.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting local-kms: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		logf.Close()
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(30 * time.Second); ; {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return cmd
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logf.Name())
			t.Fatalf("local-kms not listening on %s after 30 s: %v\n%s", addr, err, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
