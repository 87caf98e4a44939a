package thrift_test

import (
	"fmt"

	"github.com/sovm/sop-pme/internal/thrift"
)

// Build Parquet's FileCryptoMetaData as DuckDB writes it: encryption_algorithm
// (field 1) is the union EncryptionAlgorithm holding an empty AesGcmV1
// (field 1), and key_metadata (field 2) is a binary.
func ExampleStruct_Append() {
	aesGcmV1 := thrift.NewStruct()
	algorithm := thrift.NewStruct(thrift.Field{ID: 1, Value: thrift.StructValue(aesGcmV1)})
	fcmd := thrift.NewStruct(thrift.Field{ID: 1, Value: thrift.StructValue(algorithm)})
	fmt.Printf("% x\n", fcmd.Append(nil))

	fcmd.Set(2, thrift.Binary([]byte{0xca, 0xfe}))
	fmt.Printf("% x\n", fcmd.Append(nil))
	// Output:
	// 1c 1c 00 00 00
	// 1c 1c 00 00 18 02 ca fe 00
}

// Read a page header that is followed by its page body, and change
// compressed_page_size (field 3).
func ExampleDecode() {
	page := []byte{
		0x15, 0x00, // type: i32 0 (DATA_PAGE)
		0x15, 0x0c, // uncompressed_page_size: i32 6
		0x15, 0x0c, // compressed_page_size: i32 6
		0x00,                               // stop
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, // the page body
	}
	h, n, err := thrift.Decode(page, thrift.Limits{})
	if err != nil {
		fmt.Println(err)
		return
	}
	size, err := h.I32(3)
	fmt.Println(n, size, err)

	h.Set(3, thrift.I32(size+32))
	fmt.Printf("% x\n", h.Append(nil))

	_, _, err = thrift.Decode([]byte{0x05, 0x02, 0x02, 0x00}, thrift.Limits{})
	fmt.Println(err)
	// Output:
	// 7 6 <nil>
	// 15 00 15 0c 15 4c 00
	// thrift: non-canonical encoding: long field header for ID delta 1 (at offset 0)
}
