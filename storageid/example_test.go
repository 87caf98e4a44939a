package storageid_test

import (
	"fmt"

	"github.com/sovm/sop-pme/storageid"
)

func ExampleParse() {
	// iroh-blobs 0.35 printed hashes in base32; both forms parse to the
	// same storage_id, which prints as hex.
	id, _ := storageid.Parse("v4jutopv7gq2nicajxvdnxgjjgn4wjojvxarfn6mtkj4vza7gjra")
	fmt.Println(id)
	// Output: af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262
}
