package blobs_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/sovm/sop-pme/verify"
)

// TestRecommitDoesNotRepair (the name records the defect it guards against):
// Commit must not treat an object as "already held" for its name and size
// alone, discarding freshly written good bytes while the stored copy is
// damaged; it verifies the copy held and replaces it if it is damaged.
// A store whose copy was damaged in place (bit rot, a torn write by another
// tool) therefore reports a successful import of bytes it does not hold, and
// the writer's only good copy is deleted: the object stays unreadable.
func TestRecommitDoesNotRepair(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, path := openDir(t)
	data := randBytes(3*verify.GroupSize+5, 77)
	id, err := importBytes(ctx, d, data)
	if err != nil {
		t.Fatal(err)
	}
	// Damage the stored copy in place, keeping its size.
	f, err := os.OpenFile(filepath.Join(path, id.String()+".data"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{data[100] ^ 1}, 100); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := verify.Verify(ctx, d, id); !errors.Is(err, verify.ErrVerify) {
		t.Fatalf("Verify of the damaged copy = %v, want ErrVerify", err)
	}

	// Import the same, intact bytes again.
	id2, err := importBytes(ctx, d, data)
	if err != nil || id2 != id {
		t.Fatalf("re-import = %s, %v", id2, err)
	}
	if err := verify.Verify(ctx, d, id); err != nil {
		t.Fatalf("after a successful Commit of the intact bytes, Verify = %v: Commit reported success but the store still holds the damaged copy", err)
	}
}
