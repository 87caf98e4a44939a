package keyring_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sovm/sop-pme/keyring"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/storageid"
)

// Example keeps a DEK in a ring under a KEK kept in a file of its own,
// resolves it read-only, then rotates the KEK and re-keys the ring.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "keyring-example")
	defer os.RemoveAll(dir)

	kek, created, err := keyring.LoadOrCreateKEKFile(filepath.Join(dir, "kek"))
	if err != nil {
		panic(err)
	}
	fmt.Println("KEK created:", created, kek)

	ringPath := filepath.Join(dir, "keyring")
	ring, err := keyring.Open(ctx, ringPath, kek, keyring.WithCreate())
	if err != nil {
		panic(err)
	}
	id, dek := storageid.Sum([]byte("an object's bytes")), pme.NewDEK()
	if err := ring.Put(ctx, id, dek); err != nil {
		panic(err)
	}

	ro, err := keyring.Open(ctx, ringPath, kek, keyring.WithReadOnly())
	if err != nil {
		panic(err)
	}
	got, err := ro.ResolveDEK(ctx, id)
	fmt.Println("resolved:", got.Equal(dek), err)

	// A new master rewraps one key; a re-key rewraps every DEK.
	next := keyring.NewKEK()
	fmt.Println("rotate:", ring.Rotate(ctx, next))
	fmt.Println("re-key:", ring.Rekey(ctx, nil))
	_, err = keyring.Open(ctx, ringPath, kek)
	fmt.Println("old KEK:", err != nil)
	// Output:
	// KEK created: true keyring.KEK(REDACTED)
	// resolved: true <nil>
	// rotate: <nil>
	// re-key: <nil>
	// old KEK: true
}
