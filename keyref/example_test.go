package keyref_test

import (
	"fmt"

	"github.com/sovm/sop-pme/keyref"
)

func ExampleParse() {
	r, err := keyref.Parse("000123456789abcdef1032547698baff")
	if err != nil {
		panic(err)
	}
	fmt.Println(r, len(r[:]))

	_, err = keyref.Parse("000123456789ABCDEF1032547698BAFF")
	fmt.Println(err)
	// Output:
	// 000123456789abcdef1032547698baff 16
	// keyref: invalid key_ref syntax: invalid character 'A' at offset 12, want a lowercase hex digit
}
