package s3_test

import (
	"context"
	"fmt"
	"log"

	"github.com/sovm/sop-pme/blobs/s3"
	"github.com/sovm/sop-pme/verify"
)

// ExampleOpen opens a store on an S3-compatible server (credentials from
// the environment or the shared AWS files), imports an object and reads
// a verified range of it back.
func ExampleOpen() {
	ctx := context.Background()
	st, err := s3.Open(ctx, "s3://my-bucket/objects?endpoint=http://127.0.0.1:7070&region=us-east-1&use_path_style=true")
	if err != nil {
		log.Fatal(err)
	}
	p, err := st.Create(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer p.Abort()
	p.Write([]byte("ciphertext of a SOP-PME-1 object"))
	id, err := p.Commit(ctx)
	if err != nil {
		log.Fatal(err)
	}
	r, err := verify.NewReader(ctx, st, id) // every byte checked against id
	if err != nil {
		log.Fatal(err)
	}
	b := make([]byte, 10)
	if _, err := r.ReadAt(b, 0); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s %q\n", id, b)
}
