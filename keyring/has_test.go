package keyring_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sovm/sop-pme/keyring"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/storageid"
)

// TestHas: Has reports exactly the ids held, in the order asked, from a
// read-only ring too, and follows Put and Delete.
func TestHas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ring")
	kek := keyring.NewKEK()
	r := createRing(t, path, kek)
	var ids []storageid.ID
	for i := range 10 {
		ids = append(ids, storageid.Sum([]byte{byte(i)}))
	}
	for _, i := range []int{1, 4, 5, 9} {
		if err := r.Put(ctx, ids[i], pme.NewDEK()); err != nil {
			t.Fatal(err)
		}
	}
	want := []bool{false, true, false, false, true, true, false, false, false, true}
	ro, err := keyring.Open(ctx, path, kek, keyring.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	for _, ring := range []*keyring.Ring{r, ro} {
		got, err := ring.Has(ctx, ids...)
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("Has = %v, %v; want %v", got, err, want)
		}
	}
	if err := r.Delete(ctx, ids[4]); err != nil {
		t.Fatal(err)
	}
	got, err := ro.Has(ctx, ids[4], ids[5])
	if err != nil || !slices.Equal(got, []bool{false, true}) {
		t.Fatalf("after Delete: %v, %v", got, err)
	}
	if got, err := ro.Has(ctx); err != nil || len(got) != 0 {
		t.Fatalf("Has() = %v, %v", got, err)
	}
}

// ExampleRing_Has lists which objects a ring holds a DEK for.
func ExampleRing_Has() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "keyring-has")
	defer os.RemoveAll(dir)
	ring, err := keyring.Open(ctx, filepath.Join(dir, "keyring"), keyring.NewKEK(), keyring.WithCreate())
	if err != nil {
		panic(err)
	}
	a, b := storageid.Sum([]byte("object a")), storageid.Sum([]byte("object b"))
	if err := ring.Put(ctx, a, pme.NewDEK()); err != nil {
		panic(err)
	}
	held, err := ring.Has(ctx, a, b)
	fmt.Println(held, err)
	// Output: [true false] <nil>
}
