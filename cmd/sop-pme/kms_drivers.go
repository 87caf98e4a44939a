package main

// The KMS drivers a master-key URL may name (see keys.go). awskms:// is
// kms_aws.go's, which names the key on Decrypt as well as on Encrypt; each
// other scheme is a driver registered with gocloud.dev/secrets.
// base64key:// (localsecrets) holds the key in the URL itself and is for
// tests.
import (
	"context"
	"strings"

	"github.com/sovm/sop-pme/keyring"
	"gocloud.dev/secrets"
	_ "gocloud.dev/secrets/azurekeyvault" // azurekeyvault://
	_ "gocloud.dev/secrets/gcpkms"        // gcpkms://
	_ "gocloud.dev/secrets/hashivault"    // hashivault:// (Vault Transit)
	_ "gocloud.dev/secrets/localsecrets"  // base64key://
)

// openKMS opens the master key at the KMS URL u and returns it with the
// function that releases it.
func openKMS(ctx context.Context, u string) (keyring.Master, func(), error) {
	if strings.HasPrefix(u, awskmsScheme) {
		m, err := openAWSKMS(ctx, u)
		if err != nil {
			return nil, nil, err
		}
		return m, func() {}, nil
	}
	k, err := secrets.OpenKeeper(ctx, u)
	if err != nil {
		return nil, nil, err
	}
	return k, func() { k.Close() }, nil
}
