package main

// The KMS drivers a master-key URL may name (see kms.go). Each registers its
// URL scheme with gocloud.dev/secrets; base64key:// (localsecrets) holds the
// key in the URL itself and is for tests.
import (
	_ "gocloud.dev/secrets/awskms"        // awskms://
	_ "gocloud.dev/secrets/azurekeyvault" // azurekeyvault://
	_ "gocloud.dev/secrets/gcpkms"        // gcpkms://
	_ "gocloud.dev/secrets/hashivault"    // hashivault:// (Vault Transit)
	_ "gocloud.dev/secrets/localsecrets"  // base64key://
)
