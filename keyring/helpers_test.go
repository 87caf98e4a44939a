package keyring_test

import (
	"context"
	"testing"

	"github.com/sovm/sop-pme/keyring"
)

// These helpers are the only place the regression tests (concurrency,
// processes, printing) touch Open and Len, so that the same tests can be run
// against the version-1 API, with a version-1 twin of this file, to see them
// fail there.

func createRing(t testing.TB, path string, kek keyring.KEK) *keyring.Ring {
	t.Helper()
	r, err := keyring.Open(context.Background(), path, kek, keyring.WithCreate())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func openRing(t testing.TB, path string, kek keyring.KEK) *keyring.Ring {
	t.Helper()
	r, err := keyring.Open(context.Background(), path, kek)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func ringLen(t testing.TB, r *keyring.Ring) int {
	t.Helper()
	n, err := r.Len(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// extraChild runs the child modes that need the version-2 API: "rekey"
// re-keys the ring n times under the same KEK; crashChild runs the others.
func extraChild(ctx context.Context, mode, path string, kek keyring.KEK, n int) int {
	if mode == "records" {
		return recordsChild(ctx, path, kek, n)
	}
	if mode != "rekey" {
		return crashChild(ctx, mode, path, kek, n)
	}
	r, err := keyring.Open(ctx, path, kek)
	if err != nil {
		println("open:", err.Error())
		return 3
	}
	switch mode {
	case "rekey":
		for range n {
			if err := r.Rekey(ctx, nil); err != nil {
				println("rekey:", err.Error())
				return 1
			}
		}
		return 0
	}
	return 2
}
